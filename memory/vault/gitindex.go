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
	"strconv"
	"strings"
	"sync"
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

// rebase points every entry's bytes into b, the index file they were
// written as, so that the buffers they were read from can be freed.
func (x *rawIndex) rebase(b []byte) {
	off := indexHeaderLen
	for i := range x.entries {
		n := len(x.entries[i].raw)
		x.entries[i].raw = b[off : off+n : off+n]
		off += n
	}
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

// writeIndexFile replaces the index of the repository at gitDir through
// its lock file, as git does, and returns the bytes written; the caller
// holds the lock (index.lock), so the new index is written beside it and
// renamed over the old. The new file is made durable (sync.file) before
// the rename and the rename after it (sync.dir): a crash or power loss
// leaves the old index or the new, never a torn one that every later
// commit would refuse on its checksum.
func writeIndexFile(gitDir string, x *rawIndex, sync syncer) ([]byte, error) {
	b := x.bytes()
	tmp, err := os.CreateTemp(gitDir, "index.tmp*")
	if err != nil {
		return nil, err
	}
	fail := func(err error) ([]byte, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := sync.file(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(gitDir, "index")); err != nil {
		return fail(err)
	}
	if err := sync.dir(gitDir); err != nil {
		return b, fmt.Errorf("sync %s: %w", gitDir, err)
	}
	return b, nil
}

// syncer makes writes durable: a file's content, a folder's entries.
// Tests pass one that records the calls.
type syncer interface {
	file(f *os.File) error
	dir(path string) error
}

// osSync is the syncer of the operating system: fsync.
type osSync struct{}

func (osSync) file(f *os.File) error { return f.Sync() }
func (osSync) dir(path string) error { return syncDir(path) }

// looseWriter writes loose objects into the repository at gitDir,
// reusing one compressor (each costs hundreds of kilobytes to make). An
// object is written to a temporary file in its folder; flush makes them
// all durable (fsync'd together) and gives them their names, and only
// then may a ref name them: a crash leaves either no object or a whole
// one, never a ref to an object the disk lost.
type looseWriter struct {
	gitDir string
	zw     *zlib.Writer // level 1
	zstore *zlib.Writer // level 0, for large trees
	buf    bytes.Buffer
	temps  []looseTemp
	ids    map[plumbing.Hash]bool // written in this batch
	dirs   map[string]bool        // folders whose entries change
}

type looseTemp struct {
	f    *os.File
	path string // the object's name
}

// put stores an object as a loose object and returns its hash; one already
// stored loose is not written again. It compresses for speed rather than
// size (zlib level 1, as git's core.looseCompression=1): a tree of 10,000
// notes is ~400 KB, and the default level costs tens of milliseconds a
// commit. git gc packs them. The object is not durable, nor named, until
// flush.
func (lw *looseWriter) put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	// The object's id, with crypto/sha1 (go-git's hasher detects SHA-1
	// collisions, several times slower on a large tree; the objects here
	// are made by hearth, not received).
	sh := sha1.New()
	sh.Write(strconv.AppendInt(append([]byte(typ.String()), ' '), int64(len(data)), 10))
	sh.Write([]byte{0})
	sh.Write(data)
	var h plumbing.Hash
	copy(h[:], sh.Sum(nil))
	if lw.ids[h] {
		return h, nil
	}
	hx := h.String()
	dir := filepath.Join(lw.gitDir, "objects", hx[:2])
	path := filepath.Join(dir, hx[2:])
	if _, err := os.Lstat(path); err == nil {
		return h, nil
	}
	f, err := os.CreateTemp(dir, "tmp_obj_*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			lw.mark(filepath.Dir(dir))
			f, err = os.CreateTemp(dir, "tmp_obj_*")
		}
	}
	if err != nil {
		return h, err
	}
	if err := lw.compress(f, typ, data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return h, err
	}
	lw.temps = append(lw.temps, looseTemp{f: f, path: path})
	if lw.ids == nil {
		lw.ids = make(map[plumbing.Hash]bool)
	}
	lw.ids[h] = true
	lw.mark(dir)
	// A commit of thousands of files keeps no more than a batch open;
	// naming objects early is safe (nothing names them yet).
	if len(lw.temps) >= looseBatch {
		return h, lw.flush()
	}
	return h, nil
}

// looseBatch is how many objects a looseWriter holds before flushing.
const looseBatch = 256

func (lw *looseWriter) mark(dir string) {
	if lw.dirs == nil {
		lw.dirs = make(map[string]bool)
	}
	lw.dirs[dir] = true
}

// compress writes the object's loose form to f: zlib over its header and
// content, built in memory and written at once (the compressor writes in
// pieces of a few hundred bytes). The file is read-only, the owner's only.
func (lw *looseWriter) compress(f *os.File, typ plumbing.ObjectType, data []byte) error {
	lw.buf.Reset()
	zw, err := lw.compressor(typ, len(data))
	if err != nil {
		return err
	}
	hdr := strconv.AppendInt(append([]byte(typ.String()), ' '), int64(len(data)), 10)
	if _, err := zw.Write(append(hdr, 0)); err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if _, err := f.Write(lw.buf.Bytes()); err != nil {
		return err
	}
	return f.Chmod(0o400)
}

// storedTreeSize is the size from which a tree is stored uncompressed.
const storedTreeSize = 16 << 10

// compressor returns the zlib writer for an object, reset onto lw.buf.
// Objects are compressed for speed (zlib level 1, as git's
// core.looseCompression=1), and a large tree not at all (level 0): a
// folder of 10,000 notes is a 370 KB tree, mostly hashes, that level 1
// takes to 250 KB in 8 to 15 ms a commit, and level 0 stores in 0.3 ms.
// Each commit writes it anew; git gc packs them as deltas of each other.
func (lw *looseWriter) compressor(typ plumbing.ObjectType, size int) (*zlib.Writer, error) {
	zw, level := &lw.zw, zlib.BestSpeed
	if typ == plumbing.TreeObject && size >= storedTreeSize {
		zw, level = &lw.zstore, zlib.NoCompression
	}
	if *zw == nil {
		w, err := zlib.NewWriterLevel(&lw.buf, level)
		if err != nil {
			return nil, err
		}
		*zw = w
	} else {
		(*zw).Reset(&lw.buf)
	}
	return *zw, nil
}

// flush makes the objects put since the last flush durable and names
// them: every file fsync'd (together, so that the file system commits
// them at once), renamed to its object's name, and every folder whose
// entries changed fsync'd.
func (lw *looseWriter) flush() error {
	temps := lw.temps
	lw.temps, lw.ids = nil, nil
	err := parallel(len(temps), func(i int) error { return temps[i].f.Sync() })
	for _, t := range temps {
		if cerr := t.f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		for _, t := range temps {
			if err = os.Rename(t.f.Name(), t.path); err != nil {
				break
			}
		}
	}
	if err != nil {
		for _, t := range temps {
			os.Remove(t.f.Name())
		}
		return err
	}
	dirs := make([]string, 0, len(lw.dirs))
	for d := range lw.dirs {
		dirs = append(dirs, d)
	}
	lw.dirs = nil
	return parallel(len(dirs), func(i int) error { return syncDir(dirs[i]) })
}

// abort removes the objects put since the last flush.
func (lw *looseWriter) abort() {
	for _, t := range lw.temps {
		t.f.Close()
		os.Remove(t.f.Name())
	}
	lw.temps, lw.ids, lw.dirs = nil, nil, nil
}

// parallel runs f(0)…f(n-1) at once and returns the first error.
func parallel(n int, f func(i int) error) error {
	if n == 1 {
		return f(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
