// Package embedded is mnemo's default recall index: BM25 over an inverted
// index of recall.Tokens plus a flat slab of quantised vectors searched
// exhaustively, in memory, persisted to one append-only file under the
// memory root's git-ignored index/ directory.
//
// The file is derived data. When Open reports a damaged file (IsCorrupt),
// the caller removes the directory and rebuilds the index from the
// journal.
package embedded

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/mnemo/mnemo/memory/recall"
)

// FileName is the index file inside the directory given to Open.
const FileName = "recall.idx"

// MaxTextBytes bounds a document's text and context together; Upsert
// rejects longer ones (the indexer chunks long records well below this).
const MaxTextBytes = 16 << 20

// maxFieldBytes bounds a document's id and labels together.
const maxFieldBytes = 64 << 10

// Options configure Open.
type Options struct {
	// Dim is the vector dimension; 0 makes a lexical-only index.
	Dim int
	// Log receives warnings (a torn tail cut on Open, a failed
	// compaction); nil discards them.
	Log *slog.Logger
	// SyncEvery is how many records may be written between fsyncs;
	// 0 means 1024. Flush and Close always sync.
	SyncEvery int
	// SnapshotEvery is how many records may be written after the last
	// snapshot before the next is taken (at least half the live
	// documents); 0 means 65,536, negative only at Close.
	SnapshotEvery int
}

// ErrClosed is returned by every method of a closed Index.
var ErrClosed = errors.New("embedded: index is closed")

// Index is the embedded recall.Index. It is safe for concurrent use:
// queries run in parallel with each other, writes one at a time.
type Index struct {
	path      string
	snapPath  string
	dim       int
	log       *slog.Logger
	syncEvery int
	scratch   sync.Pool // *scratch

	// compactMin is the least garbage, in bytes, worth a compaction.
	compactMin int64
	// procs bounds the goroutines one query uses; 0 means GOMAXPROCS.
	procs int

	mu       sync.RWMutex
	st       *state
	f        *os.File
	w        *bufio.Writer
	size     int64 // bytes in the file, including w's buffer
	unsynced int   // records written since the last fsync
	werr     error // a failed write: the file no longer matches memory
	closed   bool
	enc      []byte // encoding scratch

	lastOff   uint64 // offset of the last record in the file
	sinceSnap int    // records in the file after the last snapshot
	snapEvery int
	// snapHook, when set (by tests), runs at each stage of writing a
	// snapshot; an error stops the write there, as a crash would.
	snapHook func(stage string) error
}

// Open opens the index in dir, creating dir (0700) and an empty index
// (0600) if needed.
// A file that is damaged — a bad header, a record that fails its checksum
// or does not decode — makes Open fail with an error for which IsCorrupt
// is true. A record cut short at the end of the file (a crash during a
// write) is dropped with a warning, keeping the records before it. A file
// holding vectors of another dimension fails with recall.ErrDimension.
func Open(dir string, opts Options) (*Index, error) {
	if opts.Dim < 0 || opts.Dim > maxDim {
		return nil, fmt.Errorf("embedded: dimension %d out of range [0, %d]", opts.Dim, maxDim)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.SyncEvery <= 0 {
		opts.SyncEvery = 1024
	}
	if opts.SnapshotEvery == 0 {
		opts.SnapshotEvery = 1 << 16
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	ix := &Index{
		path:       filepath.Join(dir, FileName),
		dim:        opts.Dim,
		log:        opts.Log,
		syncEvery:  opts.SyncEvery,
		snapEvery:  opts.SnapshotEvery,
		compactMin: 1 << 20,
	}
	ix.snapPath = filepath.Join(dir, SnapName)
	ix.scratch.New = func() any { return new(scratch) }
	for _, tmp := range []string{ix.path + ".tmp", ix.snapPath + ".tmp"} {
		if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("embedded: %w", err)
		}
	}
	f, err := os.OpenFile(ix.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err := ix.create(); err != nil {
			return nil, err
		}
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := makePrivate(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := ix.load(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", ix.path, err)
	}
	return ix, nil
}

// makePrivate makes an index file that an older hearth created readable by
// others (0644) private to the owner: it holds the conversation's text.
func makePrivate(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return f.Chmod(0o600)
}

// create writes an empty index file (through a temporary file, so that a
// crash never leaves a file without a header) and starts on it.
func (ix *Index) create() error {
	f, err := ix.writeFile(func(w *bufio.Writer) (int64, error) {
		_, err := w.Write(encodeHeader(ix.dim))
		return headerSize, err
	})
	if err != nil {
		return err
	}
	ix.start(f, headerSize, ix.newState())
	ix.lastOff, ix.sinceSnap = 0, 0
	return nil
}

// writeFile writes a new index file with fill, syncs it, renames it over
// the index and returns it open for appending.
func (ix *Index) writeFile(fill func(*bufio.Writer) (int64, error)) (*os.File, error) {
	tmp := ix.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("embedded: write %s: %w", tmp, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	size, err := fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		_, err = f.Seek(size, io.SeekStart)
	}
	if err != nil {
		return fail(err)
	}
	// The snapshot describes the old file: it goes first, so that a crash
	// never leaves it beside the new one.
	if err := os.Remove(ix.snapPath); err == nil {
		if err := syncDir(filepath.Dir(ix.path)); err != nil {
			return fail(err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	if err := os.Rename(tmp, ix.path); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(ix.path)); err != nil {
		ix.log.Warn("recall index: sync directory", "err", err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (ix *Index) start(f *os.File, size int64, st *state) {
	if ix.st != nil && ix.st != st && ix.st.release != nil {
		ix.st.release()
	}
	ix.f = f
	ix.w = bufio.NewWriterSize(f, 256<<10)
	ix.size = size
	ix.st = st
	ix.unsynced = 0
}

// load loads the snapshot, if there is one that matches the file, and
// replays the records after it (every record, without one).
func (ix *Index) load(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	total := fi.Size()
	var h [headerSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return fmt.Errorf("read header: %v: %w", err, ErrCorrupt)
	}
	dim, err := decodeHeader(h[:])
	if err != nil {
		return err
	}
	if dim != ix.dim {
		return fmt.Errorf("file holds %d-dim vectors, want %d: %w", dim, ix.dim, recall.ErrDimension)
	}
	ix.f = f // replacing a document reads its record back
	st, off := ix.loadSnapshot(f, total)
	if st == nil {
		st, off = ix.newState(), headerSize
	}
	ix.st = st // released by start, or below on failure
	if err := ix.replay(f, st, off, total); err != nil {
		if st.release != nil {
			st.release()
		}
		ix.st = nil
		return err
	}
	return nil
}

// replay applies the records of f from off to its end to st and starts
// the index on it.
func (ix *Index) replay(f *os.File, st *state, off, total int64) error {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		buf []byte
		p   prepared
		n   int64
		err error
	)
	for {
		buf, n, err = readRecord(r, total-off, buf)
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTorn) {
			ix.log.Warn("recall index: dropping a torn record at the end of the file", "path", ix.path, "offset", off, "bytes", total-off)
			if err := f.Truncate(off); err != nil {
				return err
			}
			break
		}
		if err != nil {
			return fmt.Errorf("record at offset %d: %w", off, err)
		}
		if err := decodePayload(buf, ix.dim, &p.rec, &p.q); err != nil {
			return fmt.Errorf("record at offset %d: %w", off, err)
		}
		if _, err := ix.apply(st, &p, uint64(off), uint32(n)); err != nil {
			return fmt.Errorf("record at offset %d: %w", off, err)
		}
		ix.lastOff = uint64(off)
		ix.sinceSnap++
		off += n
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	ix.start(f, off, st)
	return nil
}

// loadSnapshot loads the snapshot when there is one that matches f (of
// total bytes) and returns it with the offset of the first record it does
// not hold. Without one it returns nil; a snapshot that does not check
// out is removed (the file is replayed instead).
func (ix *Index) loadSnapshot(f *os.File, total int64) (*state, int64) {
	sf, err := os.Open(ix.snapPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0
	}
	discard := func(err error) (*state, int64) {
		ix.log.Warn("recall index: snapshot unusable, replaying the index file", "path", ix.snapPath, "err", err)
		if err := os.Remove(ix.snapPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			ix.log.Warn("recall index: remove snapshot", "path", ix.snapPath, "err", err)
		}
		return nil, 0
	}
	if err != nil {
		return discard(err)
	}
	// The file stays open with the state: its postings are read from it.
	fi, err := sf.Stat()
	if err != nil {
		sf.Close()
		return discard(err)
	}
	b, drop, unmap, err := mapFile(sf, fi.Size())
	if err != nil {
		sf.Close()
		return discard(err)
	}
	release := func() { unmap(); sf.Close() }
	col := func(off, n, capBytes int, hot bool) ([]byte, func(), error) {
		return mapColumn(sf, int64(off), n, capBytes, hot)
	}
	st, h, err := decodeSnapshot(b, sf, ix.dim, col)
	if err == nil {
		if err = matchFile(f, total, h); err != nil {
			st.release()
		}
	}
	if err != nil {
		release()
		return discard(err)
	}
	drop()
	st.read = ix.readRecord
	columns := st.release
	st.release = func() { columns(); release() }
	ix.lastOff = h.lastOff
	return st, int64(h.covers)
}

// matchFile checks that a snapshot with header h was taken of f: f is at
// least as long as what it covers, and the last record before that is
// the one it names.
func matchFile(f *os.File, total int64, h snapHead) error {
	if h.covers > uint64(total) || h.covers < headerSize {
		return fmt.Errorf("snapshot covers %d bytes of a file of %d: %w", h.covers, total, ErrCorrupt)
	}
	if h.covers == headerSize {
		return nil
	}
	if h.lastOff < headerSize || h.lastOff > h.covers-recHeader {
		return fmt.Errorf("snapshot's last record at %d: %w", h.lastOff, ErrCorrupt)
	}
	var fr [recHeader]byte
	if _, err := f.ReadAt(fr[:], int64(h.lastOff)); err != nil {
		return err
	}
	if fr != h.lastFrame || h.lastOff+recHeader+uint64(binary.LittleEndian.Uint32(fr[:])) != h.covers {
		return fmt.Errorf("snapshot is of another index file: %w", ErrCorrupt)
	}
	return nil
}

// snapshotLocked syncs the file and writes a snapshot of the index
// through a temporary file, synced and renamed over the last one.
func (ix *Index) snapshotLocked() error {
	if err := ix.syncLocked(); err != nil {
		return err
	}
	// A list not yet checked is checked now: written out, damage would
	// get fresh checksums.
	if err := ix.st.checkAll(); err != nil {
		if err := ix.replaySnapshotLocked(ix.st, err); err != nil {
			return err
		}
	}
	h := snapHead{covers: uint64(ix.size), lastOff: ix.lastOff}
	if ix.size > headerSize {
		if _, err := ix.f.ReadAt(h.lastFrame[:], int64(ix.lastOff)); err != nil {
			return fmt.Errorf("embedded: snapshot: %w", err)
		}
	}
	hook := func(stage string) error {
		if ix.snapHook == nil {
			return nil
		}
		return ix.snapHook(stage)
	}
	tmp := ix.snapPath + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("embedded: snapshot: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = writeSnapshot(w, ix.st, h)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = hook("synced")
	}
	if err == nil {
		err = os.Rename(tmp, ix.snapPath)
	}
	if err == nil {
		err = hook("renamed")
	}
	if err == nil {
		err = syncDir(filepath.Dir(ix.snapPath))
	}
	if err != nil {
		return fmt.Errorf("embedded: snapshot %s: %w", ix.snapPath, err)
	}
	ix.sinceSnap = 0
	return nil
}

// replaySnapshotLocked answers a snapshot found damaged after open (a
// postings list whose check failed at first use) as Open answers one
// damaged at open: the snapshot is removed and the state rebuilt by
// replaying the whole record file. st is the state the damage was found
// in; when it is no longer the index's, another caller did this already.
func (ix *Index) replaySnapshotLocked(st *state, damage error) error {
	if ix.st != st || ix.closed {
		return nil
	}
	ix.log.Warn("recall index: snapshot damaged, replaying the index file", "path", ix.snapPath, "err", damage)
	if err := os.Remove(ix.snapPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		ix.log.Warn("recall index: remove snapshot", "path", ix.snapPath, "err", err)
	}
	if err := ix.syncLocked(); err != nil {
		return err
	}
	ix.sinceSnap = 0
	if err := ix.replay(ix.f, ix.newState(), headerSize, ix.size); err != nil {
		return fmt.Errorf("embedded: replay after a damaged snapshot: %w", err)
	}
	return nil
}

// apply applies a decoded record, found at off in the file, to st and
// returns the garbage it makes.
func (ix *Index) apply(st *state, p *prepared, off uint64, size uint32) (int64, error) {
	switch p.rec.typ {
	case recUpsert:
		p.tokenize()
		return st.put(p, off, size)
	case recDelete:
		g, err := st.remove(p.rec.id)
		return g + int64(size), err
	case recMeta:
		return st.setMeta(p.rec.id, p.rec.text, size), nil
	}
	return 0, nil
}

// newState returns an empty state reading its records from ix's file.
func (ix *Index) newState() *state {
	st := newState(ix.dim)
	st.read = ix.readRecord
	return st
}

// readRecord reads the record of n bytes at off from the index file and
// checks its checksums. It returns a new buffer holding the payload. The
// caller holds ix.mu; records still in the write buffer are flushed first
// when it holds it for writing (a reader never finds any: every write
// call ends with a flush, and one that failed set werr).
func (ix *Index) readRecord(off uint64, n uint32) ([]byte, error) {
	if ix.w != nil && ix.w.Buffered() > 0 && int64(off)+int64(n) > ix.size-int64(ix.w.Buffered()) {
		if ix.werr != nil {
			return nil, ix.werr
		}
		if err := ix.w.Flush(); err != nil {
			ix.werr = fmt.Errorf("embedded: write %s: %w", ix.path, err)
			return nil, ix.werr
		}
	}
	if n < recHeader {
		return nil, fmt.Errorf("record of %d bytes at offset %d: %w", n, off, ErrCorrupt)
	}
	buf := make([]byte, n)
	if _, err := ix.f.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("embedded: read %s at %d: %w", ix.path, off, err)
	}
	return checkRecord(buf)
}

// indexTokens appends the lexical terms of a document's text and context:
// recall.IndexTokens, so that every backend agrees.
func indexTokens(dst []string, text, ctx string) []string {
	return recall.IndexTokens(dst, recall.Doc{Text: text, Context: ctx})
}

// tokenize fills p's terms from its text and context.
func (p *prepared) tokenize() {
	toks := indexTokens(p.terms[:0], p.rec.text, p.rec.ctx)
	p.dl = len(toks)
	p.terms, p.tfs = termFreqs(toks, p.tfs)
}

// writeLocked appends a record to the file and returns where it starts
// and its size.
func (ix *Index) writeLocked(payload []byte) (uint64, uint32, error) {
	if ix.werr != nil {
		return 0, 0, ix.werr
	}
	off := uint64(ix.size)
	ix.enc = appendRecord(ix.enc[:0], payload)
	if _, err := ix.w.Write(ix.enc); err != nil {
		ix.werr = fmt.Errorf("embedded: write %s: %w", ix.path, err)
		return 0, 0, ix.werr
	}
	ix.size += int64(len(ix.enc))
	ix.unsynced++
	ix.lastOff = off
	ix.sinceSnap++
	return off, uint32(len(ix.enc)), nil
}

// commitLocked hands what was written to the OS, syncs when due, and
// compacts when the file holds more garbage than live data.
func (ix *Index) commitLocked() error {
	if ix.werr != nil {
		return ix.werr
	}
	if err := ix.w.Flush(); err != nil {
		ix.werr = fmt.Errorf("embedded: write %s: %w", ix.path, err)
		return ix.werr
	}
	if ix.unsynced >= ix.syncEvery {
		if err := ix.f.Sync(); err != nil {
			ix.werr = fmt.Errorf("embedded: sync %s: %w", ix.path, err)
			return ix.werr
		}
		ix.unsynced = 0
	}
	if garbage := ix.size - ix.st.liveBytes; garbage > ix.compactMin && garbage > ix.st.liveBytes {
		if err := ix.compactLocked(); err != nil {
			// The old file is intact; try again once it has grown.
			ix.log.Warn("recall index: compaction failed", "path", ix.path, "err", err)
			ix.compactMin = 2 * ix.size
		}
	}
	if ix.snapEvery > 0 && ix.sinceSnap >= max(ix.snapEvery, ix.st.live/2) {
		if err := ix.snapshotLocked(); err != nil {
			ix.log.Warn("recall index: snapshot failed", "path", ix.snapPath, "err", err)
			ix.sinceSnap = 0 // try again after as many records
		}
	}
	return nil
}

// compactLocked rewrites the file with only live records and rebuilds the
// in-memory index, renumbering slots densely.
func (ix *Index) compactLocked() error {
	old := ix.st
	st := ix.newState() // reads from ix.f, the new file once started
	var p prepared
	var q quantized
	var lastOff uint64
	records := 0
	f, err := ix.writeFile(func(w *bufio.Writer) (int64, error) {
		size := int64(headerSize)
		if _, err := w.Write(encodeHeader(ix.dim)); err != nil {
			return 0, err
		}
		var enc, payload []byte
		write := func() (uint64, uint32, error) {
			off := size
			lastOff = uint64(off)
			records++
			enc = appendRecord(enc[:0], payload)
			_, err := w.Write(enc)
			size += int64(len(enc))
			return uint64(off), uint32(len(enc)), err
		}
		for s := range old.slots {
			if old.attrs[s].dead {
				continue
			}
			r, err := old.record(uint32(s), &q)
			if err != nil {
				return 0, err
			}
			p.rec = r
			payload = encodeUpsert(payload[:0], &p.rec)
			off, n, err := write()
			if err != nil {
				return 0, err
			}
			p.tokenize()
			// Ids are unique among live slots: put reads nothing back.
			if _, err := st.put(&p, off, n); err != nil {
				return 0, err
			}
		}
		for k, m := range old.meta {
			payload = encodeMeta(payload[:0], k, m.value)
			_, n, err := write()
			if err != nil {
				return 0, err
			}
			st.setMeta(k, m.value, n)
		}
		return size, nil
	})
	if err != nil {
		return err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return err
	}
	ix.f.Close()
	ix.start(f, size, st)
	ix.lastOff, ix.sinceSnap = lastOff, records
	return nil
}

func (ix *Index) checkLocked() error {
	if ix.closed {
		return ErrClosed
	}
	return nil
}

// Upsert implements recall.Index.
func (ix *Index) Upsert(ctx context.Context, docs []recall.Doc, vecs [][]float32) error {
	if vecs != nil && len(vecs) != len(docs) {
		return fmt.Errorf("embedded: upsert: %d vectors for %d docs", len(vecs), len(docs))
	}
	// Validate, quantise and tokenize outside the lock.
	ps := make([]prepared, len(docs))
	unit := make([]float32, ix.dim)
	for i := range docs {
		d := &docs[i]
		if n := len(d.Text) + len(d.Context); n > MaxTextBytes {
			return fmt.Errorf("embedded: upsert %q: text and context of %d bytes over %d", d.ID, n, MaxTextBytes)
		}
		if n := len(d.ID) + len(d.Kind) + len(d.Role) + len(d.Mode) + len(d.Channel) + len(d.Session); n > maxFieldBytes {
			return fmt.Errorf("embedded: upsert %.64q: id and labels of %d bytes over %d", d.ID, n, maxFieldBytes)
		}
		if !finite(d.Salience) {
			return fmt.Errorf("embedded: upsert %q: salience %v", d.ID, d.Salience)
		}
		p := &ps[i]
		p.rec = record{typ: recUpsert, id: d.ID, kind: d.Kind, role: d.Role, mode: d.Mode, chann: d.Channel, sess: d.Session,
			text: d.Text, ctx: d.Context, ts: d.TS.UnixMilli(), sal: d.Salience}
		if vecs != nil {
			if len(vecs[i]) != ix.dim || ix.dim == 0 {
				return fmt.Errorf("embedded: upsert %q: vector of %d, index of %d: %w", d.ID, len(vecs[i]), ix.dim, recall.ErrDimension)
			}
			if !normalize(unit, vecs[i]) {
				return fmt.Errorf("embedded: upsert %q: vector has NaN or infinite values", d.ID)
			}
			p.q.codes = make([]byte, ix.dim)
			quantize(unit, &p.q)
			p.rec.vec = &p.q
		}
		p.tokenize()
		if i%64 == 63 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	var payload []byte
	for i := range ps {
		payload = encodeUpsert(payload[:0], &ps[i].rec)
		off, n, err := ix.writeLocked(payload)
		if err != nil {
			return err
		}
		if _, err := ix.st.put(&ps[i], off, n); err != nil {
			// The file holds a record that memory does not.
			ix.werr = fmt.Errorf("embedded: upsert %q: %w", ps[i].rec.id, err)
			return ix.werr
		}
	}
	return ix.commitLocked()
}

// Delete implements recall.Index.
func (ix *Index) Delete(ctx context.Context, ids []string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	var payload []byte
	for _, id := range ids {
		if _, ok := ix.st.lookup(id); !ok {
			continue
		}
		payload = encodeDelete(payload[:0], id)
		if _, _, err := ix.writeLocked(payload); err != nil {
			return err
		}
		if _, err := ix.st.remove(id); err != nil {
			ix.werr = fmt.Errorf("embedded: delete %q: %w", id, err)
			return ix.werr
		}
	}
	return ix.commitLocked()
}

// Compact rewrites the file with only live records, whatever garbage it
// holds: what deleted and replaced documents said leaves the disk (a
// forgotten turn must not survive in the index file).
func (ix *Index) Compact(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	if err := ix.w.Flush(); err != nil {
		return fmt.Errorf("embedded: write %s: %w", ix.path, err)
	}
	if err := ix.compactLocked(); err != nil {
		return fmt.Errorf("embedded: compact %s: %w", ix.path, err)
	}
	return nil
}

// Lexical implements recall.Index.
// A postings list of the snapshot found damaged at its first use makes
// the index replay its record file (see replaySnapshotLocked) and the
// query run again on the rebuilt state: no query uses a list whose check
// failed.
func (ix *Index) Lexical(ctx context.Context, query string, k int, f recall.Filter) ([]recall.Scored, error) {
	out, st, err := ix.lexical(query, k, f)
	var damage *snapshotDamage
	if errors.As(err, &damage) {
		ix.mu.Lock()
		err = ix.replaySnapshotLocked(st, err)
		ix.mu.Unlock()
		if err == nil {
			out, _, err = ix.lexical(query, k, f)
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lexical runs a lexical query on the current state, which it returns.
func (ix *Index) lexical(query string, k int, f recall.Filter) ([]recall.Scored, *state, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return nil, nil, err
	}
	cf, ok := ix.st.compile(f)
	if !ok {
		return nil, ix.st, nil
	}
	sc := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(sc)
	hits, err := ix.st.lexical(query, k, cf, sc, ix.procs)
	if err != nil {
		return nil, ix.st, err
	}
	return ix.scoredLocked(hits), ix.st, nil
}

// Vector implements recall.Index. Scores are cosine similarities computed
// from the stored 8-bit codes.
func (ix *Index) Vector(ctx context.Context, vec []float32, k int, f recall.Filter) ([]recall.Scored, error) {
	if len(vec) != ix.dim || ix.dim == 0 {
		return nil, fmt.Errorf("embedded: query vector of %d, index of %d: %w", len(vec), ix.dim, recall.ErrDimension)
	}
	unit := make([]float32, ix.dim)
	if !normalize(unit, vec) {
		return nil, fmt.Errorf("embedded: query vector has NaN or infinite values")
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return nil, err
	}
	cf, ok := ix.st.compile(f)
	if !ok {
		return nil, nil
	}
	return ix.scoredLocked(ix.st.vector(unit, k, cf, ix.procs)), nil
}

func (ix *Index) scoredLocked(hits []hit) []recall.Scored {
	if len(hits) == 0 {
		return nil
	}
	out := make([]recall.Scored, len(hits))
	for i, h := range hits {
		out[i] = recall.Scored{ID: string(ix.st.id(h.id)), Score: h.score}
	}
	return out
}

// Docs implements recall.Index.
func (ix *Index) Docs(ctx context.Context, ids []string) ([]recall.Doc, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return nil, err
	}
	var out []recall.Doc
	for _, id := range ids {
		if s, ok := ix.st.lookup(id); ok {
			d, err := ix.st.doc(s)
			if err != nil {
				return nil, fmt.Errorf("embedded: docs: %w", err)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// Vectors returns the stored (unit, dequantised) vectors of the documents
// with those ids, in that order; an entry is nil for a document that is
// not stored or has no vector. It implements recall.VectorStore.
func (ix *Index) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(ids))
	for i, id := range ids {
		if s, ok := ix.st.lookup(id); ok && ix.st.slots[s].row >= 0 {
			out[i] = ix.st.vecs.vector(int(ix.st.slots[s].row))
		}
	}
	return out, nil
}

// Count implements recall.Index.
func (ix *Index) Count(ctx context.Context) (int, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return 0, err
	}
	return ix.st.live, nil
}

// Meta implements recall.Index.
func (ix *Index) Meta(ctx context.Context, key string) (string, bool, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.checkLocked(); err != nil {
		return "", false, err
	}
	m, ok := ix.st.meta[key]
	return m.value, ok, nil
}

// SetMeta implements recall.Index.
func (ix *Index) SetMeta(ctx context.Context, key, value string) error {
	if len(key)+len(value) > MaxTextBytes {
		return fmt.Errorf("embedded: meta %q: %d bytes over %d", key, len(key)+len(value), MaxTextBytes)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	_, n, err := ix.writeLocked(encodeMeta(nil, key, value))
	if err != nil {
		return err
	}
	ix.st.setMeta(key, value, n)
	return ix.commitLocked()
}

// Reset implements recall.Index: it replaces the file with an empty one.
func (ix *Index) Reset(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	old := ix.f
	if err := ix.create(); err != nil {
		return err
	}
	old.Close()
	ix.werr = nil
	return nil
}

// Flush writes buffered records and syncs the file.
func (ix *Index) Flush() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.checkLocked(); err != nil {
		return err
	}
	return ix.syncLocked()
}

func (ix *Index) syncLocked() error {
	if ix.werr != nil {
		return ix.werr
	}
	if err := ix.w.Flush(); err != nil {
		return fmt.Errorf("embedded: write %s: %w", ix.path, err)
	}
	if err := ix.f.Sync(); err != nil {
		return fmt.Errorf("embedded: sync %s: %w", ix.path, err)
	}
	ix.unsynced = 0
	return nil
}

// Close flushes, syncs and closes the file. Closing twice is a no-op.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	err := ix.syncLocked()
	if err == nil && ix.sinceSnap > 0 {
		// The next Open loads this instead of replaying the file.
		if serr := ix.snapshotLocked(); serr != nil {
			ix.log.Warn("recall index: snapshot failed", "path", ix.snapPath, "err", serr)
		}
	}
	if cerr := ix.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("embedded: close %s: %w", ix.path, cerr)
	}
	if ix.st.release != nil {
		ix.st.release()
	}
	ix.st = nil
	return err
}

// Stats describe an index's size.
type Stats struct {
	Docs      int   // live documents
	Vectors   int   // live documents with a vector
	Slots     int   // live and dead slots (dead ones go at compaction)
	Terms     int   // distinct terms
	Postings  int64 // postings held, live or dead
	FileBytes int64 // the index file
	TextBytes int64 // the arena holding ids and texts
}

// Stats returns the index's current size.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return Stats{}
	}
	st := ix.st
	vecs := 0
	for _, r := range st.vecs.rows {
		if r.slot != deadRow {
			vecs++
		}
	}
	return Stats{Docs: st.live, Vectors: vecs, Slots: len(st.slots), Terms: len(st.terms), Postings: st.postCount,
		FileBytes: ix.size, TextBytes: st.arena.size()}
}

var _ recall.Index = (*Index)(nil)
