package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/mnemo/mnemo/memory"
)

// maxManifest bounds manifest.json.
const maxManifest = 256 << 20

// Import restores the archive read from r (as Export writes it) into the
// memory root dir, which must be missing or empty (a lock file left by a
// hearth that ran there is allowed): ErrNotEmpty otherwise. It holds the
// root's lock while it works, so a root another process holds gives a
// *memory.HeldError.
//
// Files are created 0600 and directories 0700, each file fsync'd. The
// history is unpacked from the bundle into a new .git, HEAD set to the
// branch the manifest names, and the index rebuilt from HEAD: nothing is
// checked out over the restored files. What cannot be restored (a file the
// manifest lists that is missing or differs, a damaged bundle, an archive
// that ends early) and what is damaged (a torn journal line) is reported
// in Report.Gaps, and the rest is restored all the same. Entries whose
// names would leave the root, or that are links or devices, are refused
// and reported, never written.
func Import(ctx context.Context, r io.Reader, dir string, opts Options) (Report, error) {
	var rep Report
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rep, fmt.Errorf("import into %s: %w", dir, err)
	}
	dir = abs
	if err := checkEmpty(dir); err != nil {
		return rep, err
	}
	lock, err := memory.LockRoot(dir, memory.Holder{Mode: "import"})
	if err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}
	defer lock.Close()
	if err := checkEmpty(dir); err != nil { // filled between the check and the lock
		return rep, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("import into %s: %w", dir, err)
	}
	defer root.Close()

	gap := func(format string, args ...any) { rep.Gaps = append(rep.Gaps, fmt.Sprintf(format, args...)) }
	got := map[string]File{}
	var manifest *Manifest
	var refs []bundleRef
	sawBundle := false

	gz, err := gzip.NewReader(r)
	if err != nil {
		return rep, fmt.Errorf("import: not a gzip'd archive: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			gap("the archive ends early or is damaged (%v): what follows the last good entry is missing", err)
			break
		}
		kind, rel, err := classify(hdr.Name)
		if err != nil {
			gap("refused: %v", err)
			continue
		}
		switch kind {
		case kindReadme:
			continue
		case kindManifest:
			var m Manifest
			b, err := io.ReadAll(io.LimitReader(tr, maxManifest))
			if err == nil {
				err = json.Unmarshal(b, &m)
			}
			if err != nil {
				gap("%s: unreadable (%v): completeness not checked", manifestName, err)
				continue
			}
			manifest = &m
			continue
		case kindBundle:
			if sawBundle {
				gap("%s: more than one in the archive; the first kept", bundleName)
				continue
			}
			sawBundle = true
			if hdr.Typeflag != tar.TypeReg {
				gap("%s: not a regular file", bundleName)
				continue
			}
			refs, err = restoreHistory(dir, tr)
			if err != nil {
				gap("history: %s is damaged (%v): the files are restored without their history", bundleName, err)
				refs = nil
			}
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if rel != "." {
				if err := root.MkdirAll(filepath.FromSlash(rel), dirPerm); err != nil {
					gap("%s: %v", rel, err)
				}
			}
		case tar.TypeReg:
			f, err := restoreFile(root, rel, tr)
			if err != nil {
				gap("%s: %v", rel, err)
				continue
			}
			got[rel] = f
			rep.Files++
			rep.Bytes += f.Size
		default:
			gap("refused: %q: a link or special file (type %q), not restored", hdr.Name, hdr.Typeflag)
		}
	}

	// What the manifest promised.
	if manifest == nil {
		gap("%s: missing: cannot check that every file arrived", manifestName)
	} else {
		if manifest.Format != Format {
			gap("%s: format %q, not %q", manifestName, manifest.Format, Format)
		}
		for _, f := range manifest.Files {
			have, ok := got[f.Path]
			switch {
			case !ok:
				gap("%s: listed in the manifest, missing from the archive", f.Path)
			case have.SHA256 != f.SHA256 || have.Size != f.Size:
				gap("%s: differs from the manifest (%d bytes, want %d): restored as found", f.Path, have.Size, f.Size)
			}
		}
	}
	switch {
	case !sawBundle:
		gap("%s: missing: the files are restored without their history", bundleName)
	case refs != nil:
		head := ""
		if manifest != nil {
			head = manifest.Head
		}
		h, err := setHead(dir, refs, head)
		if err != nil {
			gap("history: %v", err)
		}
		rep.Refs, rep.Head = len(refs), h
	}

	// Torn or corrupt journal lines: kept as they are (hearth skips them),
	// but said.
	var shards []string
	for rel := range got {
		if isShard(rel) {
			shards = append(shards, rel)
		}
	}
	slices.Sort(shards)
	for _, rel := range shards {
		for _, g := range checkShard(root, rel) {
			gap("%s", g)
		}
	}
	if err := syncDir(dir); err != nil {
		return rep, fmt.Errorf("import into %s: %w", dir, err)
	}
	opts.log().Info("imported memory root", "dir", dir, "files", rep.Files, "bytes", rep.Bytes, "refs", rep.Refs, "gaps", len(rep.Gaps))
	return rep, nil
}

// checkEmpty refuses a root that holds anything but its lock file.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("import into %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != lockFile {
			return fmt.Errorf("import into %s: %w (it holds %s): import restores into a new root only", dir, ErrNotEmpty, e.Name())
		}
	}
	return nil
}

// restoreFile creates rel (0600, and its directories 0700) with the bytes
// of r, fsync'd, and returns its size and hash. It never replaces a file:
// an archive that names one twice keeps the first.
func restoreFile(root *os.Root, rel string, r io.Reader) (File, error) {
	local := filepath.FromSlash(rel)
	if d := path.Dir(rel); d != "." {
		if err := root.MkdirAll(filepath.FromSlash(d), dirPerm); err != nil {
			return File{}, err
		}
	}
	f, err := root.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if errors.Is(err, fs.ErrExist) {
		return File{}, errors.New("in the archive twice: the first kept")
	}
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fmt.Errorf("restored in part (%d bytes): %w", n, err)
	}
	return File{Path: rel, Size: n, SHA256: hexSum(h)}, nil
}

// checkShard reports the lines of a journal shard that are not JSON, and
// a last line without its newline.
func checkShard(root *os.Root, rel string) []string {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", rel, err)}
	}
	defer f.Close()
	var gaps []string
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			body := bytes.TrimSpace(line)
			switch {
			case line[len(line)-1] != '\n':
				gaps = append(gaps, fmt.Sprintf("%s:%d: a torn last line (no newline), kept as is; hearth skips it", rel, n))
			case len(body) > 0 && !json.Valid(body):
				gaps = append(gaps, fmt.Sprintf("%s:%d: a torn or corrupt line, kept as is; hearth skips it", rel, n))
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				gaps = append(gaps, fmt.Sprintf("%s: %v", rel, err))
			}
			return gaps
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
