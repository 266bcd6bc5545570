package embedded

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"unsafe"
)

// A snapshot is the in-memory index written out whole, so that Open can
// load it instead of replaying, and tokenizing again, every record of the
// index file. It is derived from the file and only ever trusted after its
// checks pass; anything else makes Open discard it and replay the file.
//
//	snapshot = header | section*
//	header   = magic "mnemosnp" | version u16 | flags u16 | dim u32 |
//	           covers u64 | lastOff u64 | lastFrame [12] |
//	           slots u32 | rows u32 | terms u32 | 0 u32 | crc u32
//	section  = length u64 | pad to a 4 KiB boundary | data | pad to 8 |
//	           crc(data) u32 | 0 u32
//
// covers is the index file's size when the snapshot was taken: the
// snapshot holds exactly the records before it, and Open replays those
// after it. lastFrame is the frame header (length and checksums) of the
// last record before covers, at lastOff: Open checks it against the file,
// so that a snapshot of another file (compacted or reset since) is not
// taken for this one's. Rewriting the file removes the snapshot first.
//
// The sections, in order: interned strings, meta values, meta record
// sizes, ids, attrs, slots, the id table, vector rows, vector words, terms
// (each with its postings' count, live count and the CRC of its list),
// the postings' slot numbers (u32) and their term frequencies (u8). Every
// section's data starts on a page boundary, so that Open uses them in
// place: the ids and id table in a read-only mapping of the file, the
// postings read from it with pread (a query reads only its terms' lists,
// see lazyCheck), and the columns that change and grow — attrs, slots, vector rows and words, in this machine's layout
// of the structs — each in a private writable mapping with room to grow
// (see mapColumn). Version 1 decoded every column onto the heap and built
// the id map at open; version 2 had no CRC per term and checked every
// list at open. Older snapshots are replaced (the file is replayed once).
//
// What Open checks, and when: the header, every section's length, and
// the small sections (strings, meta, terms) through the mapping; the ids,
// attrs, slots and id table read through the file in 1 MiB chunks (CRC
// and every cross-reference), so that neither the mapping nor the
// columns are brought into memory by the check; the vector rows and words
// after reading them into memory. A postings list (slot numbers and
// frequencies) is checked, CRC and order, the first time a query or a
// snapshot uses it (lazyCheck): open reads none of them. A list found
// damaged then is treated as a damaged snapshot at open is: the snapshot
// is removed and the record file replayed before anything uses the list.
//
// The id table is open addressing with linear probing over a power of
// two of u32 entries, slot+1 (0 empty), at FNV-1a of the id: it finds a
// document by id from the mapping, without a map built at open.
const (
	snapMagic   = "mnemosnp"
	snapVersion = 3
	snapHeader  = 64
	snapAlign   = 4096
)

// SnapName is the snapshot inside the index directory.
const SnapName = "recall.snap"

// snapHead is a snapshot's header.
type snapHead struct {
	dim       int
	covers    uint64
	lastOff   uint64
	lastFrame [recHeader]byte
	slots     uint32
	rows      uint32
	terms     uint32
}

func (h *snapHead) encode() []byte {
	b := make([]byte, snapHeader)
	copy(b, snapMagic)
	binary.LittleEndian.PutUint16(b[8:], snapVersion)
	binary.LittleEndian.PutUint32(b[12:], uint32(h.dim))
	binary.LittleEndian.PutUint64(b[16:], h.covers)
	binary.LittleEndian.PutUint64(b[24:], h.lastOff)
	copy(b[32:44], h.lastFrame[:])
	binary.LittleEndian.PutUint32(b[44:], h.slots)
	binary.LittleEndian.PutUint32(b[48:], h.rows)
	binary.LittleEndian.PutUint32(b[52:], h.terms)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

func decodeSnapHead(b []byte) (snapHead, error) {
	var h snapHead
	if len(b) < snapHeader {
		return h, fmt.Errorf("snapshot header is %d bytes: %w", len(b), ErrCorrupt)
	}
	if string(b[:8]) != snapMagic {
		return h, fmt.Errorf("snapshot: bad magic: %w", ErrCorrupt)
	}
	if got, want := binary.LittleEndian.Uint32(b[60:]), crc32.Checksum(b[:60], castagnoli); got != want {
		return h, fmt.Errorf("snapshot header crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != snapVersion {
		return h, fmt.Errorf("snapshot version %d, want %d: %w", v, snapVersion, ErrCorrupt)
	}
	dim := binary.LittleEndian.Uint32(b[12:])
	if dim > maxDim {
		return h, fmt.Errorf("snapshot dimension %d: %w", dim, ErrCorrupt)
	}
	h.dim = int(dim)
	h.covers = binary.LittleEndian.Uint64(b[16:])
	h.lastOff = binary.LittleEndian.Uint64(b[24:])
	copy(h.lastFrame[:], b[32:44])
	h.slots = binary.LittleEndian.Uint32(b[44:])
	h.rows = binary.LittleEndian.Uint32(b[48:])
	h.terms = binary.LittleEndian.Uint32(b[52:])
	return h, nil
}

// Sizes of the per-slot and per-row records in a snapshot: the structs
// as they are in memory (little-endian, Go's layout; the arrays below fail
// to compile if the layout changes). attr: ts i64 | session | role | kind
// | dl u32 | dead u8 | pad [7]; slot: rec u64 | off u64 | idLen | mode |
// channel | salience | row | recSize u32; rowMeta: min | step | h | slot.
const (
	snapAttr = int(unsafe.Sizeof(attr{}))
	snapSlot = int(unsafe.Sizeof(slot{}))
	snapRow  = int(unsafe.Sizeof(rowMeta{}))
)

var (
	_ = [1]int{}[unsafe.Sizeof(attr{})-32]
	_ = [1]int{}[unsafe.Offsetof(attr{}.dead)-24]
	_ = [1]int{}[unsafe.Sizeof(slot{})-40]
	_ = [1]int{}[unsafe.Offsetof(slot{}.recSize)-36]
	_ = [1]int{}[unsafe.Sizeof(rowMeta{})-16]
)

// snapWriter writes sections.
type snapWriter struct {
	w    *bufio.Writer
	crc  hash.Hash32
	pos  uint64 // bytes written
	n    uint64 // bytes of the current section written
	want uint64
	err  error
	tmp  []byte
}

var zeros [snapAlign]byte

func (sw *snapWriter) begin(n uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	sw.raw(b[:])
	sw.raw(zeros[:alignPad(sw.pos)])
	sw.crc.Reset()
	sw.n, sw.want = 0, n
}

// alignPad is how many bytes take pos to the next page boundary.
func alignPad(pos uint64) uint64 { return (snapAlign - pos%snapAlign) % snapAlign }

func (sw *snapWriter) raw(b []byte) {
	if sw.err == nil {
		_, sw.err = sw.w.Write(b)
	}
	sw.pos += uint64(len(b))
}

func (sw *snapWriter) write(b []byte) {
	sw.crc.Write(b)
	sw.n += uint64(len(b))
	sw.raw(b)
}

func (sw *snapWriter) end() {
	if sw.err == nil && sw.n != sw.want {
		sw.err = fmt.Errorf("snapshot section of %d bytes, announced %d", sw.n, sw.want)
	}
	var pad [8]byte
	sw.raw(pad[:(8-sw.n%8)%8])
	var t [8]byte
	binary.LittleEndian.PutUint32(t[:], sw.crc.Sum32())
	sw.raw(t[:])
}

// strings writes a section of strings (uvarint length, bytes).
func (sw *snapWriter) strings(ss []string) {
	var n uint64
	for _, s := range ss {
		n += uint64(uvarintLen(uint64(len(s))) + len(s))
	}
	sw.begin(n)
	for _, s := range ss {
		sw.tmp = binary.AppendUvarint(sw.tmp[:0], uint64(len(s)))
		sw.write(sw.tmp)
		sw.write(unsafeBytes(s))
	}
	sw.end()
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func unsafeBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// bytesOf views a slice of pointer-free values as its bytes in memory.
func bytesOf[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}

// writeSnapshot writes st as a snapshot with header h to w.
func writeSnapshot(w *bufio.Writer, st *state, h snapHead) error {
	if !nativeLE {
		return errors.New("snapshots are written on little-endian machines only")
	}
	h.dim = st.dim
	h.slots, h.rows, h.terms = uint32(len(st.slots)), uint32(len(st.vecs.rows)), uint32(len(st.posts))
	sw := &snapWriter{w: w, crc: crc32.New(castagnoli)}
	sw.raw(h.encode())

	sw.strings(st.strs.strs)

	metaStrs := make([]string, 0, 2*len(st.meta))
	var sizes []byte
	for k, m := range st.meta {
		metaStrs = append(metaStrs, k, m.value)
		sizes = binary.LittleEndian.AppendUint32(sizes, m.recSize)
	}
	sw.strings(metaStrs)
	sw.begin(uint64(len(sizes)))
	sw.write(sizes)
	sw.end()

	// The ids, each slot's at the offset its record below names.
	var idBytes uint64
	for i := range st.slots {
		idBytes += uint64(st.slots[i].idLen)
	}
	sw.begin(idBytes)
	for i := range st.slots {
		sw.write(st.id(uint32(i)))
	}
	sw.end()

	sw.begin(uint64(len(st.attrs) * snapAttr))
	sw.write(bytesOf(st.attrs))
	sw.end()

	var b []slot
	flush := func(force bool) {
		if len(b) >= 4096 || force && len(b) > 0 {
			sw.write(bytesOf(b))
			b = b[:0]
		}
	}
	sw.begin(uint64(len(st.slots) * snapSlot))
	var off uint64
	for i := range st.slots {
		s := st.slots[i]
		s.off = off
		off += uint64(s.idLen)
		b = append(b, s)
		flush(false)
	}
	flush(true)
	sw.end()

	table := st.idTable()
	sw.begin(uint64(len(table) * 4))
	sw.write(bytesOf(table))
	sw.end()

	sw.begin(uint64(len(st.vecs.rows) * snapRow))
	sw.write(bytesOf(st.vecs.rows))
	sw.end()

	sw.begin(uint64(len(st.vecs.words)) * 8)
	sw.write(bytesOf(st.vecs.words))
	sw.end()

	// Terms in posting order, each with its counts.
	names := make([]string, len(st.posts))
	for t, i := range st.terms {
		names[i] = t
	}
	var termBytes, postings uint64
	for i, t := range names {
		termBytes += uint64(uvarintLen(uint64(len(t)))+len(t)) + 12
		postings += uint64(st.posts[i].len())
	}
	// The lists are read three times (here for the checksums, then for
	// the slots and for the frequencies): from the page cache, a fraction
	// of writing them.
	crcs := make([]uint32, len(st.posts))
	var slots []uint32
	var tfs []uint8
	for i := range st.posts {
		var err error
		if slots, tfs, err = st.list(uint32(i), slots, tfs); err != nil {
			return err
		}
		p := &st.posts[i]
		crcs[i] = termCRC(slots, p.more, tfs, p.moreTfs)
	}
	var tb []byte
	sw.begin(termBytes)
	for i, t := range names {
		p := &st.posts[i]
		tb = binary.AppendUvarint(tb, uint64(len(t)))
		tb = append(tb, t...)
		tb = binary.LittleEndian.AppendUint32(tb, uint32(p.len()))
		tb = binary.LittleEndian.AppendUint32(tb, p.live)
		tb = binary.LittleEndian.AppendUint32(tb, crcs[i])
		if len(tb) >= 64<<10 {
			sw.write(tb)
			tb = tb[:0]
		}
	}
	sw.write(tb)
	sw.end()

	var slotsBuf []uint32
	var tfsBuf []uint8
	sw.begin(postings * 4)
	for i := range st.posts {
		var err error
		if slotsBuf, tfsBuf, err = st.list(uint32(i), slotsBuf, tfsBuf); err != nil {
			return err
		}
		sw.write(bytesOf(slotsBuf))
		sw.write(bytesOf(st.posts[i].more))
	}
	sw.end()

	sw.begin(postings)
	for i := range st.posts {
		var err error
		if slotsBuf, tfsBuf, err = st.list(uint32(i), slotsBuf, tfsBuf); err != nil {
			return err
		}
		sw.write(tfsBuf)
		sw.write(st.posts[i].moreTfs)
	}
	sw.end()
	return sw.err
}

// snapReader reads sections from a snapshot: b is the whole snapshot
// (mapped), r reads the same bytes without touching the mapping.
type snapReader struct {
	b   []byte
	r   io.ReaderAt
	off int
	at  int    // where the last section's data starts
	buf []byte // for check
}

// next returns the next section's data and its stored checksum, not yet
// checked.
func (sr *snapReader) next(what string) ([]byte, uint32, error) {
	if len(sr.b)-sr.off < 8 {
		return nil, 0, fmt.Errorf("snapshot: %s: truncated: %w", what, ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(sr.b[sr.off:])
	start := sr.off + 8 + int(alignPad(uint64(sr.off+8)))
	if start > len(sr.b) {
		return nil, 0, fmt.Errorf("snapshot: %s: truncated: %w", what, ErrCorrupt)
	}
	padded := n + (8-n%8)%8
	if padded < n || padded > uint64(len(sr.b)-start) || uint64(len(sr.b)-start)-padded < 8 {
		return nil, 0, fmt.Errorf("snapshot: %s: length %d past the end: %w", what, n, ErrCorrupt)
	}
	data := sr.b[start : start+int(n) : start+int(n)]
	tail := start + int(padded)
	sr.off = tail + 8
	sr.at = start
	return data, binary.LittleEndian.Uint32(sr.b[tail:]), nil
}

func crcError(what string, got, want uint32) error {
	return fmt.Errorf("snapshot: %s: crc %#x, want %#x: %w", what, got, want, ErrCorrupt)
}

// section returns the next section's data, its checksum checked through
// the mapping (for the small sections).
func (sr *snapReader) section(what string) ([]byte, error) {
	data, want, err := sr.next(what)
	if err != nil {
		return nil, err
	}
	if got := crc32.Checksum(data, castagnoli); got != want {
		return nil, crcError(what, got, want)
	}
	return data, nil
}

// checkChunk is how many bytes check reads at a time.
const checkChunk = 1 << 20

// check returns the next section's data after reading it through r, in
// chunks of whole units (unit bytes each, 1 for none), checking its
// checksum and handing each chunk to visit (when not nil) with the number
// of its first unit. The mapping is not touched: a check reads the page
// cache, not the process's resident set, and the pages stay out of it
// until a query uses them. The data is trusted only when check returns
// no error.
func (sr *snapReader) check(what string, unit int, visit func(chunk []byte, first int) error) ([]byte, error) {
	data, want, err := sr.next(what)
	if err != nil {
		return nil, err
	}
	unit = max(unit, 1)
	if len(data)%unit != 0 {
		return nil, errSnap("%s: %d bytes, not whole records of %d", what, len(data), unit)
	}
	step := max(checkChunk/unit, 1) * unit
	if len(sr.buf) < step {
		sr.buf = make([]byte, step)
	}
	var crc uint32
	for pos := 0; pos < len(data); pos += step {
		c := sr.buf[:min(step, len(data)-pos)]
		if _, err := sr.r.ReadAt(c, int64(sr.at+pos)); err != nil {
			return nil, fmt.Errorf("snapshot: %s: read: %v: %w", what, err, ErrCorrupt)
		}
		crc = crc32.Update(crc, castagnoli, c)
		if visit != nil {
			if err := visit(c, pos/unit); err != nil {
				return nil, err
			}
		}
	}
	if crc != want {
		return nil, crcError(what, crc, want)
	}
	return data, nil
}

// termCRC is a term's checksum in the terms section: its slot numbers
// (little-endian u32) then its frequencies, each in two runs.
func termCRC(slots, more []uint32, tfs, moreTfs []uint8) uint32 {
	crc := crc32.Update(0, castagnoli, bytesOf(slots))
	crc = crc32.Update(crc, castagnoli, bytesOf(more))
	crc = crc32.Update(crc, castagnoli, tfs)
	return crc32.Update(crc, castagnoli, moreTfs)
}

// lazyCheck reads a snapshot's postings lists from its file, into the
// caller's buffers, when a query or the next snapshot needs them: they
// are never mapped, so that the lists of the common terms, read by most
// queries, stay in the page cache rather than in the process's resident
// set. Each list is checked (its checksum, its order, its range) the
// first time it is read, not at open, so that opening a large index
// reads none of them; a list is used by nothing before its check passes.
type lazyCheck struct {
	r       io.ReaderAt
	slotsAt int64           // the postings section's data
	tfsAt   int64           // the frequencies section's data
	crcs    []uint32        // by term, the snapshot's terms
	done    []atomic.Uint32 // 1 once checked
	slots   uint32          // the snapshot's slots: every posting is below
}

// snapshotDamage is a snapshot found corrupt after open. It carries
// ErrCorrupt; Index answers it by replaying the record file.
type snapshotDamage struct{ err error }

func (e *snapshotDamage) Error() string { return e.err.Error() }
func (e *snapshotDamage) Unwrap() error { return e.err }

// list returns term ti's postings from the snapshot (not those added
// since, in more), read into slots and tfs (grown as needed), checked
// unless that was done. Concurrent calls may check the same list twice,
// never use it unchecked. Its error is a *snapshotDamage, or the read's.
func (st *state) list(ti uint32, slots []uint32, tfs []uint8) ([]uint32, []uint8, error) {
	p := &st.posts[ti]
	n := int(p.snapN)
	if n == 0 {
		return slots[:0], tfs[:0], nil
	}
	lc := st.lazy
	if cap(slots) < n {
		slots = make([]uint32, n, n+n/4)
	}
	if cap(tfs) < n {
		tfs = make([]uint8, n, n+n/4)
	}
	slots, tfs = slots[:n], tfs[:n]
	if _, err := lc.r.ReadAt(bytesOf(slots), lc.slotsAt+4*int64(p.snapAt)); err != nil {
		return nil, nil, fmt.Errorf("embedded: read postings: %w", err)
	}
	if _, err := lc.r.ReadAt(tfs, lc.tfsAt+int64(p.snapAt)); err != nil {
		return nil, nil, fmt.Errorf("embedded: read postings: %w", err)
	}
	if lc.done[ti].Load() != 0 {
		return slots, tfs, nil
	}
	if got := termCRC(slots, nil, tfs, nil); got != lc.crcs[ti] {
		return nil, nil, &snapshotDamage{errSnap("term %d: postings crc %#x, want %#x", ti, got, lc.crcs[ti])}
	}
	for j, s := range slots {
		if s >= lc.slots || j > 0 && s <= slots[j-1] {
			return nil, nil, &snapshotDamage{errSnap("term %d: posting %d out of order or range", ti, s)}
		}
	}
	lc.done[ti].Store(1)
	return slots, tfs, nil
}

// checkAll checks every postings list not yet checked: before the state
// is written out again, which must not carry damage into a snapshot with
// fresh checksums.
func (st *state) checkAll() error {
	if st.lazy == nil {
		return nil
	}
	var slots []uint32
	var tfs []uint8
	for ti := range st.lazy.crcs {
		if st.lazy.done[ti].Load() != 0 {
			continue
		}
		var err error
		if slots, tfs, err = st.list(uint32(ti), slots, tfs); err != nil {
			return err
		}
	}
	return nil
}

// columnFunc returns the n bytes of a snapshot at off (a page boundary) as
// a column the index may change and append to, with room for about
// capBytes, and what frees it. A hot column is read whole by every query.
type columnFunc func(off, n, capBytes int, hot bool) ([]byte, func(), error)

// heapColumns is a columnFunc copying from b onto the heap.
func heapColumns(b []byte) columnFunc {
	return func(off, n, _ int, _ bool) ([]byte, func(), error) {
		c := heapColumn(n, n)
		copy(c, b[off:off+n])
		return c, func() {}, nil
	}
}

// heapColumn is n bytes of zeros with room for capBytes, aligned for any
// of the columns' types.
func heapColumn(n, capBytes int) []byte {
	words := make([]uint64, (max(n, capBytes)+7)/8)
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))[:n]
}

// viewAs views a column's bytes (aligned for T) as a []T of the same
// capacity.
func viewAs[T any](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if cap(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/size)[:len(b)/size]
}

// growRoom is the capacity a column loaded from a snapshot gets for n
// bytes: as much again, at least 64k of its records (address space only,
// until used).
func growRoom(n, unit int) int { return n + max(n, unit<<16) }

func decodeStrings(b []byte, what string) ([]string, error) {
	d := decoder{b: b}
	var out []string
	for len(d.b) > 0 && d.err == nil {
		out = append(out, strings.Clone(d.string(what)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.err)
	}
	return out, nil
}

var errSnap = func(format string, args ...any) error {
	return fmt.Errorf("snapshot: "+format+": %w", append(args, ErrCorrupt)...)
}

// nativeLE reports whether this machine is little-endian, so that the
// postings' slot numbers can be used in place.
var nativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// u32s views b (little-endian u32s) as a []uint32, in place when it is
// aligned and the machine little-endian, else as a copy.
func u32s(b []byte) []uint32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if nativeLE && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// u64s is u32s for little-endian u64s.
func u64s(b []byte) []uint64 {
	n := len(b) / 8
	if n == 0 {
		return nil
	}
	if nativeLE && uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// decodeSnapshot decodes a snapshot of an index of dimension dim; r reads
// the same bytes as b, and the state reads its postings through r. Its ids
// and id table alias b, which must outlive it and never change (they are
// only ever appended to, and an append to a full slice copies); its
// attrs, slots, vector rows and words come from col. It checks every checksum and cross-reference
// of what it uses, so that a snapshot that passes cannot make a query
// index out of range, except the postings: each term's list is checked
// the first time it is used (see lazyCheck). The state's release frees
// the columns.
func decodeSnapshot(b []byte, r io.ReaderAt, dim int, col columnFunc) (*state, snapHead, error) {
	h, err := decodeSnapHead(b)
	if err != nil {
		return nil, h, err
	}
	if h.dim != dim {
		return nil, h, errSnap("dimension %d, want %d", h.dim, dim)
	}
	if !nativeLE {
		return nil, h, errSnap("a snapshot is used in place on little-endian machines only")
	}
	var releases []func()
	st, err := decodeSections(b, r, h, col, &releases)
	if err != nil {
		for _, r := range releases {
			r()
		}
		return nil, h, err
	}
	st.release = func() {
		for _, r := range releases {
			r()
		}
	}
	return st, h, nil
}

func decodeSections(b []byte, r io.ReaderAt, h snapHead, col columnFunc, releases *[]func()) (*state, error) {
	dim := h.dim
	sr := &snapReader{b: b, r: r, off: snapHeader}
	st := newState(dim)
	count := func(what string, data []byte, unit int, n uint32) error {
		if uint64(len(data)) != uint64(unit)*uint64(n) {
			return errSnap("%s: %d bytes for %d", what, len(data), n)
		}
		return nil
	}
	column := func(data []byte, unit int, hot bool) ([]byte, error) {
		c, release, err := col(sr.at, len(data), growRoom(len(data), unit), hot)
		if err != nil {
			return nil, fmt.Errorf("snapshot: map column: %v: %w", err, ErrCorrupt)
		}
		*releases = append(*releases, release)
		return c, nil
	}

	data, err := sr.section("strings")
	if err != nil {
		return nil, err
	}
	strs, err := decodeStrings(data, "string")
	if err != nil {
		return nil, err
	}
	if len(strs) == 0 || strs[0] != "" {
		return nil, errSnap("strings do not start with the empty one")
	}
	for _, s := range strs[1:] {
		if _, dup := st.strs.ids[s]; dup || s == "" {
			return nil, errSnap("string %q twice", s)
		}
		st.strs.ids[s] = uint32(len(st.strs.strs))
		st.strs.strs = append(st.strs.strs, s)
	}
	nstrs := uint32(len(st.strs.strs))

	if data, err = sr.section("meta"); err != nil {
		return nil, err
	}
	kv, err := decodeStrings(data, "meta")
	if err != nil {
		return nil, err
	}
	if len(kv)%2 != 0 {
		return nil, errSnap("meta: odd number of strings")
	}
	if data, err = sr.section("meta sizes"); err != nil {
		return nil, err
	}
	if err := count("meta sizes", data, 4, uint32(len(kv)/2)); err != nil {
		return nil, err
	}
	var live int64 = headerSize
	for i := 0; i < len(kv); i += 2 {
		if _, dup := st.meta[kv[i]]; dup {
			return nil, errSnap("meta %q twice", kv[i])
		}
		n := binary.LittleEndian.Uint32(data[2*i:])
		st.meta[kv[i]] = metaVal{value: kv[i+1], recSize: n}
		live += int64(n)
	}

	ids, err := sr.check("ids", 1, nil)
	if err != nil {
		return nil, err
	}
	if len(ids) > math.MaxUint32 {
		return nil, errSnap("ids of %d bytes", len(ids))
	}

	// The big columns are checked through r, so that neither the mapping
	// nor the columns are read at open; what the checks need later is
	// kept aside (dead, rowOf, seen).
	dead := make([]bool, h.slots)
	st.lens = make([]uint32, h.slots)
	data, err = sr.check("attrs", snapAttr, func(c []byte, first int) error {
		if first+len(c)/snapAttr > len(dead) {
			return errSnap("attrs: more than %d", h.slots)
		}
		for j := range len(c) / snapAttr {
			i := first + j
			p := c[j*snapAttr:]
			a := attr{
				session: binary.LittleEndian.Uint32(p[8:]),
				role:    binary.LittleEndian.Uint32(p[12:]),
				kind:    binary.LittleEndian.Uint32(p[16:]),
				dl:      binary.LittleEndian.Uint32(p[20:]),
			}
			switch p[24] {
			case 0:
			case 1:
				dead[i] = true
			default:
				return errSnap("slot %d: dead flag %d", i, p[24])
			}
			if a.session >= nstrs || a.role >= nstrs || a.kind >= nstrs {
				return errSnap("slot %d: label out of range", i)
			}
			st.lens[i] = deadLen
			if !dead[i] {
				st.live++
				st.totalDL += uint64(a.dl)
				st.lens[i] = min(a.dl, deadLen-1)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := count("attrs", data, snapAttr, h.slots); err != nil {
		return nil, err
	}
	c, err := column(data, snapAttr, false)
	if err != nil {
		return nil, err
	}
	st.attrs = viewAs[attr](c)

	rowOf := make([]int32, h.slots)
	var idOff uint64
	data, err = sr.check("slots", snapSlot, func(c []byte, first int) error {
		if first+len(c)/snapSlot > len(rowOf) {
			return errSnap("slots: more than %d", h.slots)
		}
		for j := range len(c) / snapSlot {
			i := first + j
			p := c[j*snapSlot:]
			s := slot{
				rec:      binary.LittleEndian.Uint64(p),
				off:      binary.LittleEndian.Uint64(p[8:]),
				idLen:    binary.LittleEndian.Uint32(p[16:]),
				mode:     binary.LittleEndian.Uint32(p[20:]),
				channel:  binary.LittleEndian.Uint32(p[24:]),
				salience: math.Float32frombits(binary.LittleEndian.Uint32(p[28:])),
				row:      int32(binary.LittleEndian.Uint32(p[32:])),
				recSize:  binary.LittleEndian.Uint32(p[36:]),
			}
			if s.mode >= nstrs || s.channel >= nstrs || !finite(s.salience) {
				return errSnap("slot %d: label or salience out of range", i)
			}
			if s.row < -1 || int64(s.row) >= int64(h.rows) {
				return errSnap("slot %d: row %d of %d", i, s.row, h.rows)
			}
			if s.recSize < recHeader || s.rec < headerSize || s.rec > h.covers || uint64(s.recSize) > h.covers-s.rec {
				return errSnap("slot %d: record %d+%d outside %d", i, s.rec, s.recSize, h.covers)
			}
			if s.off != idOff || uint64(s.idLen) > uint64(len(ids))-idOff {
				return errSnap("slot %d: id at %d+%d, expected at %d of %d", i, s.off, s.idLen, idOff, len(ids))
			}
			idOff += uint64(s.idLen)
			rowOf[i] = s.row
			if !dead[i] {
				live += int64(s.recSize)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := count("slots", data, snapSlot, h.slots); err != nil {
		return nil, err
	}
	if idOff != uint64(len(ids)) {
		return nil, errSnap("ids of %d bytes, slots use %d", len(ids), idOff)
	}
	if c, err = column(data, snapSlot, false); err != nil {
		return nil, err
	}
	st.slots = viewAs[slot](c)
	// The ids stay in place as the arena's first chunk: it is full, so
	// new ids go to new chunks and it is never written.
	st.arena.chunks = [][]byte{ids}
	st.liveBytes = live

	seen := make([]bool, h.slots)
	entries := 0
	data, err = sr.check("id table", 4, func(c []byte, _ int) error {
		for j := 0; j < len(c); j += 4 {
			e := binary.LittleEndian.Uint32(c[j:])
			if e == 0 {
				continue
			}
			s := e - 1
			if s >= h.slots || dead[s] || seen[s] {
				return errSnap("id table names slot %d", s)
			}
			seen[s] = true
			entries++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	table := u32s(data)
	if n := len(table); n&(n-1) != 0 || n > 0 && n < 2*st.live || n == 0 && st.live > 0 {
		return nil, errSnap("id table of %d bytes for %d documents", len(data), st.live)
	}
	if entries != st.live {
		return nil, errSnap("id table holds %d of %d documents", entries, st.live)
	}
	st.ids.table = table

	// The vector columns are read whole into memory (hot): checked there.
	hot := func(what string, unit int, n uint32) ([]byte, error) {
		data, want, err := sr.next(what)
		if err != nil {
			return nil, err
		}
		if err := count(what, data, unit, n); err != nil {
			return nil, err
		}
		c, err := column(data, unit, true)
		if err != nil {
			return nil, err
		}
		if got := crc32.Checksum(c, castagnoli); got != want {
			return nil, crcError(what, got, want)
		}
		return c, nil
	}
	if c, err = hot("rows", snapRow, h.rows); err != nil {
		return nil, err
	}
	for i := range h.rows {
		p := c[int(i)*snapRow:]
		r := rowMeta{
			min:  math.Float32frombits(binary.LittleEndian.Uint32(p)),
			step: math.Float32frombits(binary.LittleEndian.Uint32(p[4:])),
			h:    binary.LittleEndian.Uint32(p[8:]),
			slot: binary.LittleEndian.Uint32(p[12:]),
		}
		if !finite(r.min) || !finite(r.step) {
			return nil, errSnap("row %d: not finite", i)
		}
		if r.slot != deadRow && (r.slot >= h.slots || rowOf[r.slot] != int32(i) || dead[r.slot]) {
			return nil, errSnap("row %d: slot %d", i, r.slot)
		}
		if r.slot != deadRow {
			seen[r.slot] = false // its row names it back
		}
	}
	for i, r := range rowOf {
		if r >= 0 && !dead[i] && seen[i] {
			return nil, errSnap("slot %d: row %d belongs to another", i, r)
		}
	}
	st.vecs.rows = viewAs[rowMeta](c)
	if c, err = hot("words", st.vecs.wpr*8, h.rows); err != nil {
		return nil, err
	}
	st.vecs.words = viewAs[uint64](c)

	if data, err = sr.section("terms"); err != nil {
		return nil, err
	}
	type termCount struct{ n, live uint32 }
	counts := make([]termCount, 0, h.terms)
	lc := &lazyCheck{crcs: make([]uint32, 0, h.terms), slots: h.slots}
	st.posts = make([]postings, 0, h.terms)
	d := decoder{b: data}
	for len(d.b) > 0 && d.err == nil {
		t := d.string("term")
		n, lv, crc := d.u32("term postings"), d.u32("term live"), d.u32("term crc")
		if d.err != nil {
			break
		}
		if _, dup := st.terms[t]; dup || lv > n {
			return nil, errSnap("term %q: twice or counts %d/%d", t, lv, n)
		}
		st.terms[strings.Clone(t)] = uint32(len(counts))
		counts = append(counts, termCount{n, lv})
		lc.crcs = append(lc.crcs, crc)
	}
	if d.err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.err)
	}
	if uint32(len(counts)) != h.terms {
		return nil, errSnap("%d terms, header says %d", len(counts), h.terms)
	}
	var total uint64
	for _, c := range counts {
		total += uint64(c.n)
	}
	if total > uint64(math.MaxInt)/4 {
		return nil, errSnap("%d postings", total)
	}
	// The postings and their frequencies: their lengths are checked
	// here, their contents term by term when first read (lazyCheck).
	if data, _, err = sr.next("postings"); err != nil {
		return nil, err
	}
	if uint64(len(data)) != 4*total {
		return nil, errSnap("postings: %d bytes for %d", len(data), total)
	}
	lc.slotsAt = int64(sr.at)
	tfs, _, err := sr.next("frequencies")
	if err != nil {
		return nil, err
	}
	if uint64(len(tfs)) != total {
		return nil, errSnap("frequencies: %d for %d postings", len(tfs), total)
	}
	lc.tfsAt = int64(sr.at)
	var at uint64
	for _, c := range counts {
		st.posts = append(st.posts, postings{snapAt: at, snapN: c.n, live: c.live})
		at += uint64(c.n)
	}
	lc.r = r
	lc.done = make([]atomic.Uint32, len(lc.crcs))
	st.lazy = lc
	st.postCount = int64(total)
	if sr.off != len(b) {
		return nil, errSnap("%d bytes after the last section", len(b)-sr.off)
	}
	return st, nil
}
