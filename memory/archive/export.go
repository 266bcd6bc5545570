package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// item is one file or directory of the root, as Export found it at the
// start.
type item struct {
	rel   string
	dir   bool
	size  int64 // for a file: its size when the walk met it
	mtime time.Time
}

// Export writes the memory root dir to w as a gzip'd tar (see the package
// documentation). It takes no lock: it reads, and hearth may be running.
// For that, what it copies is what was there when it started: the refs of
// the history are read once, and a journal shard, which only grows, is
// copied up to its size then, cut back to its last complete line (a line
// being written is left for the next export and noted in the report).
// Other files are copied as read. Symbolic links and other special files
// are not exported, and noted; so is a history that cannot be read, the
// files being exported all the same.
func Export(ctx context.Context, dir string, w io.Writer, opts Options) (Report, error) {
	var rep Report
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	dir = abs
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	defer root.Close()

	// History first: its refs are the moment the export is of.
	bundle, err := os.CreateTemp("", "mnemo-export-*.bundle")
	if err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	defer os.Remove(bundle.Name())
	defer bundle.Close()
	// A root whose history cannot be read is when a copy matters most:
	// its files are exported all the same, and the loss noted.
	head, refs, err := writeBundle(ctx, dir, bundle, opts)
	haveHistory := err == nil
	if err != nil {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("the git history, unreadable (%v), not exported: the files are", err))
	}
	rep.Refs, rep.Head = refs, head

	items, notes, err := walk(ctx, root)
	if err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	rep.Notes = append(rep.Notes, notes...)

	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := opts.now().UTC().Truncate(time.Second)
	if err := writeBytes(tw, readmeName, readme(items, head), now); err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	m := Manifest{Format: Format, Version: Version, Created: now, Head: head}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		name := rootPrefix + it.rel
		if it.dir {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: dirPerm, ModTime: it.mtime, Format: tar.FormatPAX}); err != nil {
				return rep, fmt.Errorf("export %s: %w", dir, err)
			}
			continue
		}
		f, note, err := copyFile(root, tw, it)
		if err != nil {
			return rep, fmt.Errorf("export %s: %s: %w", dir, it.rel, err)
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		}
		m.Files = append(m.Files, f)
		rep.Files++
		rep.Bytes += f.Size
	}

	if haveHistory {
		if err := copyBundle(tw, bundle, now); err != nil {
			return rep, fmt.Errorf("export %s: history: %w", dir, err)
		}
	}

	m.Notes = rep.Notes
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return rep, err
	}
	if err := writeBytes(tw, manifestName, append(mb, '\n'), now); err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	if err := gz.Close(); err != nil {
		return rep, fmt.Errorf("export %s: %w", dir, err)
	}
	opts.log().Info("exported memory root", "dir", dir, "files", rep.Files, "bytes", rep.Bytes, "refs", rep.Refs)
	return rep, nil
}

// walk lists the root's directories and regular files, sorted, leaving out
// what Export does not export; what it skips is noted.
func walk(ctx context.Context, root *os.Root) ([]item, []string, error) {
	var items []item
	var notes []string
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if excluded(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			items = append(items, item{rel: p, dir: true, mtime: info.ModTime()})
		case d.Type().IsRegular():
			items = append(items, item{rel: p, size: info.Size(), mtime: info.ModTime()})
		case d.Type()&fs.ModeSymlink != 0:
			notes = append(notes, p+": a symbolic link, not exported")
		default:
			notes = append(notes, p+": not a regular file, not exported")
		}
		return nil
	})
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.rel < b.rel:
			return -1
		case a.rel > b.rel:
			return 1
		}
		return 0
	})
	return items, notes, err
}

// copyFile writes one file of the root into tw and returns its manifest
// entry. A journal shard is copied up to the size the walk saw, cut back
// to its last newline.
func copyFile(root *os.Root, tw *tar.Writer, it item) (File, string, error) {
	fh, err := root.Open(filepath.FromSlash(it.rel))
	if err != nil {
		return File{}, "", err
	}
	defer fh.Close()
	var note string
	var src io.Reader
	var size int64
	if isShard(it.rel) {
		size, err = lastNewline(fh, it.size)
		if err != nil {
			return File{}, "", err
		}
		if cut := it.size - size; cut > 0 {
			note = fmt.Sprintf("%s: its last %d bytes, an incomplete line (being written, or torn), not exported", it.rel, cut)
		}
		src = io.NewSectionReader(fh, 0, size)
	} else {
		b, err := io.ReadAll(fh)
		if err != nil {
			return File{}, "", err
		}
		size, src = int64(len(b)), bytes.NewReader(b)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: rootPrefix + it.rel, Mode: filePerm, Size: size, ModTime: it.mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return File{}, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), src)
	if err != nil {
		return File{}, "", err
	}
	if n != size {
		return File{}, "", fmt.Errorf("shrank while being read (%d of %d bytes)", n, size)
	}
	return File{Path: it.rel, Size: size, SHA256: hexSum(h)}, note, nil
}

// lastNewline returns the length of f's first size bytes up to and
// including their last '\n' (0 when there is none).
func lastNewline(f io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

func writeBytes(tw *tar.Writer, name string, b []byte, t time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: filePerm, Size: int64(len(b)), ModTime: t, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// copyBundle writes the bundle file f, written from its start, into tw.
func copyBundle(tw *tar.Writer, f *os.File, now time.Time) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: bundleName, Mode: filePerm, Size: size, ModTime: now, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
