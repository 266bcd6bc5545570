package vault

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The git index, read and written as raw entries: a commit changes a few
// entries of an index of thousands, and go-git's index codec decodes and
// encodes every field of every entry (tens of milliseconds at 10,000
// notes). Versions 2 and 3 are handled; version 4 (prefix-compressed
// names) is left to go-git.

const (
	indexSignature  = "DIRC"
	indexHeaderLen  = 12
	indexEntryFixed = 62 // stat data, hash and flags, before the name
	indexFlagExt    = 0x4000
	indexNameMask   = 0x0fff
	indexStageMask  = 0x3000
)

// errIndexVersion is a valid index in a version parseIndex leaves to go-git.
var errIndexVersion = errors.New("git index version not handled here")

// rawIndex is an index's entries, each kept as the bytes it was read as.
type rawIndex struct {
	version uint32
	entries []rawEntry // in git's order: by name, then stage
}

type rawEntry struct {
	name  string
	stage int
	raw   []byte // the whole entry, padding included
}

// parseIndex reads an index file: its entries, without decoding them. The
// extensions after them (cached trees, untracked caches…) are dropped:
// they describe the index as it was, and git rebuilds them. A file whose
// checksum does not match is refused, as git refuses it.
func parseIndex(b []byte) (*rawIndex, error) {
	if len(b) < indexHeaderLen+sha1.Size || string(b[:4]) != indexSignature {
		return nil, errors.New("not a git index")
	}
	body, sum := b[:len(b)-sha1.Size], b[len(b)-sha1.Size:]
	if s := sha1.Sum(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("git index checksum mismatch")
	}
	x := &rawIndex{version: binary.BigEndian.Uint32(b[4:8])}
	if x.version != 2 && x.version != 3 {
		if x.version == 4 {
			return nil, errIndexVersion
		}
		return nil, fmt.Errorf("git index version %d", x.version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if uint64(n) > uint64(len(body))/(indexEntryFixed+2) {
		return nil, errors.New("git index entry count exceeds its size")
	}
	x.entries = make([]rawEntry, 0, n)
	off := indexHeaderLen
	for range n {
		if off+indexEntryFixed > len(body) {
			return nil, errors.New("git index entry truncated")
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		head := indexEntryFixed
		if flags&indexFlagExt != 0 {
			if x.version < 3 {
				return nil, errors.New("git index entry has extended flags in version 2")
			}
			head += 2
		}
		start := off + head
		if start > len(body) {
			return nil, errors.New("git index entry truncated")
		}
		nameLen := int(flags & indexNameMask)
		if nameLen == indexNameMask {
			i := bytes.IndexByte(body[start:], 0)
			if i < 0 {
				return nil, errors.New("git index entry name unterminated")
			}
			nameLen = i
		}
		end := off + entrySize(head, nameLen)
		if start+nameLen > len(body) || end > len(body) {
			return nil, errors.New("git index entry truncated")
		}
		for _, c := range body[start+nameLen : end] {
			if c != 0 {
				return nil, errors.New("git index entry padding is not zero")
			}
		}
		e := rawEntry{name: string(body[start : start+nameLen]), stage: int(flags&indexStageMask) >> 12, raw: body[off:end]}
		if k := len(x.entries); k > 0 && compareEntries(x.entries[k-1], e) >= 0 {
			return nil, errors.New("git index entries out of order")
		}
		x.entries = append(x.entries, e)
		off = end
	}
	return x, nil
}

// entrySize is an entry's length with its padding: one to eight NULs that
// end the name and bring the entry to a multiple of eight bytes.
func entrySize(head, nameLen int) int {
	return (head + nameLen + 8) &^ 7
}

func compareEntries(a, b rawEntry) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return a.stage - b.stage
}

// set makes e the only entry of its name (a merge's stages included).
func (x *rawIndex) set(e rawEntry) {
	x.update(map[string]*rawEntry{e.name: &e})
}

// remove drops every entry of name.
func (x *rawIndex) remove(name string) {
	x.update(map[string]*rawEntry{name: nil})
}

// update makes each entry of changes the only one of its name, or drops
// every entry of a name mapped to nil, in one pass over the index.
func (x *rawIndex) update(changes map[string]*rawEntry) {
	if len(changes) == 0 {
		return
	}
	kept := x.entries[:0]
	for _, e := range x.entries {
		if _, ok := changes[e.name]; !ok {
			kept = append(kept, e)
		}
	}
	added := make([]rawEntry, 0, len(changes))
	for _, e := range changes {
		if e != nil {
			added = append(added, *e)
		}
	}
	slices.SortFunc(added, compareEntries)
	// Merge the two sorted lists.
	out := make([]rawEntry, 0, len(kept)+len(added))
	i, j := 0, 0
	for i < len(kept) || j < len(added) {
		if j == len(added) || (i < len(kept) && compareEntries(kept[i], added[j]) < 0) {
			out = append(out, kept[i])
			i++
		} else {
			out = append(out, added[j])
			j++
		}
	}
	x.entries = out
}

// bytes is the index file: header, entries, checksum.
func (x *rawIndex) bytes() []byte {
	size := indexHeaderLen + sha1.Size
	for _, e := range x.entries {
		size += len(e.raw)
	}
	b := make([]byte, indexHeaderLen, size)
	copy(b, indexSignature)
	binary.BigEndian.PutUint32(b[4:], x.version)
	binary.BigEndian.PutUint32(b[8:], uint32(len(x.entries)))
	for _, e := range x.entries {
		b = append(b, e.raw...)
	}
	sum := sha1.Sum(b)
	return append(b, sum[:]...)
}

// newEntry is a stage-0 entry for a file: its content hash, mode, size
// and modification time. Like go-git, it leaves the rest of the stat data
// zero: git refreshes it when it next looks.
func newEntry(name string, h plumbing.Hash, mode filemode.FileMode, size int64, mtime time.Time) rawEntry {
	nameLen := min(len(name), indexNameMask)
	raw := make([]byte, entrySize(indexEntryFixed, len(name)))
	binary.BigEndian.PutUint32(raw[8:], uint32(mtime.Unix()))
	binary.BigEndian.PutUint32(raw[12:], uint32(mtime.Nanosecond()))
	binary.BigEndian.PutUint32(raw[24:], uint32(mode))
	binary.BigEndian.PutUint32(raw[36:], uint32(size))
	copy(raw[40:60], h[:])
	binary.BigEndian.PutUint16(raw[60:], uint16(nameLen))
	copy(raw[indexEntryFixed:], name)
	return rawEntry{name: name, raw: raw}
}

// readIndexFile reads the index of the repository at gitDir; a missing
// index is an empty one.
func readIndexFile(gitDir string) (*rawIndex, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if errors.Is(err, fs.ErrNotExist) {
		return &rawIndex{version: 2}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseIndex(b)
}

// writeIndexFile replaces the index of the repository at gitDir through
// its lock file, as git does; the caller holds the lock (index.lock), so
// the new index is written beside it and renamed over the old.
func writeIndexFile(gitDir string, x *rawIndex) error {
	tmp, err := os.CreateTemp(gitDir, "index.tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(x.bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(gitDir, "index"))
}

// looseWriter writes loose objects into the repository at gitDir,
// reusing one compressor (each costs hundreds of kilobytes to make).
type looseWriter struct {
	gitDir string
	zw     *zlib.Writer
}

// put stores an object as a loose object and returns its hash; one already
// stored loose is not written again. It compresses for speed rather than
// size (zlib level 1, as git's core.looseCompression=1): a tree of 10,000
// notes is ~400 KB, and the default level costs tens of milliseconds a
// commit. git gc packs them.
func (lw *looseWriter) put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	gitDir := lw.gitDir
	// The object's id, with crypto/sha1 (go-git's hasher detects SHA-1
	// collisions, several times slower on a large tree; the objects here
	// are made by hearth, not received).
	sh := sha1.New()
	fmt.Fprintf(sh, "%s %d\x00", typ, len(data))
	sh.Write(data)
	var h plumbing.Hash
	copy(h[:], sh.Sum(nil))
	hx := h.String()
	dir := filepath.Join(gitDir, "objects", hx[:2])
	path := filepath.Join(dir, hx[2:])
	if _, err := os.Lstat(path); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return h, err
	}
	f, err := os.CreateTemp(dir, "tmp_obj_*")
	if err != nil {
		return h, err
	}
	defer func() {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if lw.zw == nil {
		if lw.zw, err = zlib.NewWriterLevel(f, zlib.BestSpeed); err != nil {
			return h, err
		}
	} else {
		lw.zw.Reset(f)
	}
	zw := lw.zw
	fmt.Fprintf(zw, "%s %d\x00", typ, len(data))
	if _, err := zw.Write(data); err != nil {
		return h, err
	}
	if err := zw.Close(); err != nil {
		return h, err
	}
	if err := f.Chmod(0o400); err != nil { // objects are read-only, the owner's only
		return h, err
	}
	if err := f.Close(); err != nil {
		return h, err
	}
	name := f.Name()
	f = nil
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return h, err
	}
	return h, nil
}
