package embedded

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/maphash"
	"math"
	"strings"
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
//	section  = length u64 | data | pad to 8 | crc(data) u32 | 0 u32
//
// covers is the index file's size when the snapshot was taken: the
// snapshot holds exactly the records before it, and Open replays those
// after it. lastFrame is the frame header (length and checksums) of the
// last record before covers, at lastOff: Open checks it against the file,
// so that a snapshot of another file (compacted or reset since) is not
// taken for this one's. Rewriting the file removes the snapshot first.
//
// The sections, in order: interned strings, meta values, attrs, slots,
// ids, vector rows, vector words, terms (each with its postings' count and
// live count), the postings' slot numbers (u32) and their term
// frequencies (u8). Every section starts 8-byte aligned, so that Open can
// use the postings in place in a read-only mapping of the file: they are
// most of an index's memory and a query reads only its terms' lists.
const (
	snapMagic   = "mnemosnp"
	snapVersion = 1
	snapHeader  = 64
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

// Fixed sizes of the per-slot, per-row records in a snapshot.
const (
	snapAttr = 25 // ts i64 | session | role | kind | dl u32 | dead u8
	snapSlot = 32 // rec u64 | idLen | mode | channel | salience | row | recSize u32
	snapRow  = 16 // min | step | h | slot u32
)

// snapWriter writes sections.
type snapWriter struct {
	w    *bufio.Writer
	crc  hash.Hash32
	n    uint64 // bytes of the current section written
	want uint64
	err  error
	tmp  []byte
}

func (sw *snapWriter) begin(n uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	sw.raw(b[:])
	sw.crc.Reset()
	sw.n, sw.want = 0, n
}

func (sw *snapWriter) raw(b []byte) {
	if sw.err == nil {
		_, sw.err = sw.w.Write(b)
	}
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

// writeSnapshot writes st as a snapshot with header h to w.
func writeSnapshot(w *bufio.Writer, st *state, h snapHead) error {
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

	var b []byte
	flush := func(force bool) {
		if len(b) >= 64<<10 || force && len(b) > 0 {
			sw.write(b)
			b = b[:0]
		}
	}
	sw.begin(uint64(len(st.attrs)) * snapAttr)
	for i := range st.attrs {
		a := &st.attrs[i]
		b = binary.LittleEndian.AppendUint64(b, uint64(a.ts))
		b = binary.LittleEndian.AppendUint32(b, a.session)
		b = binary.LittleEndian.AppendUint32(b, a.role)
		b = binary.LittleEndian.AppendUint32(b, a.kind)
		b = binary.LittleEndian.AppendUint32(b, a.dl)
		var dead byte
		if a.dead {
			dead = 1
		}
		b = append(b, dead)
		flush(false)
	}
	flush(true)
	sw.end()

	var idBytes uint64
	sw.begin(uint64(len(st.slots)) * snapSlot)
	for i := range st.slots {
		s := &st.slots[i]
		b = binary.LittleEndian.AppendUint64(b, s.rec)
		for _, v := range [...]uint32{s.idLen, s.mode, s.channel, math.Float32bits(s.salience), uint32(s.row), s.recSize} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		idBytes += uint64(s.idLen)
		flush(false)
	}
	flush(true)
	sw.end()

	sw.begin(idBytes)
	for i := range st.slots {
		sw.write(st.id(uint32(i)))
	}
	sw.end()

	sw.begin(uint64(len(st.vecs.rows)) * snapRow)
	for _, r := range st.vecs.rows {
		for _, v := range [...]uint32{math.Float32bits(r.min), math.Float32bits(r.step), r.h, r.slot} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		flush(false)
	}
	flush(true)
	sw.end()

	sw.begin(uint64(len(st.vecs.words)) * 8)
	for _, v := range st.vecs.words {
		b = binary.LittleEndian.AppendUint64(b, v)
		flush(false)
	}
	flush(true)
	sw.end()

	// Terms in posting order, each with its counts.
	names := make([]string, len(st.posts))
	for t, i := range st.terms {
		names[i] = t
	}
	var termBytes, postings uint64
	for i, t := range names {
		termBytes += uint64(uvarintLen(uint64(len(t)))+len(t)) + 8
		postings += uint64(len(st.posts[i].slots))
	}
	sw.begin(termBytes)
	for i, t := range names {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(st.posts[i].slots)))
		b = binary.LittleEndian.AppendUint32(b, st.posts[i].live)
		flush(false)
	}
	flush(true)
	sw.end()

	sw.begin(postings * 4)
	for i := range st.posts {
		for _, s := range st.posts[i].slots {
			b = binary.LittleEndian.AppendUint32(b, s)
			flush(false)
		}
	}
	flush(true)
	sw.end()

	sw.begin(postings)
	for i := range st.posts {
		sw.write(st.posts[i].tfs)
	}
	sw.end()
	return sw.err
}

// snapReader reads sections from a snapshot in memory.
type snapReader struct {
	b   []byte
	off int
}

// section returns the next section's data, its checksum checked.
func (sr *snapReader) section(what string) ([]byte, error) {
	if len(sr.b)-sr.off < 8 {
		return nil, fmt.Errorf("snapshot: %s: truncated: %w", what, ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(sr.b[sr.off:])
	start := sr.off + 8
	padded := n + (8-n%8)%8
	if padded < n || padded > uint64(len(sr.b)-start) || uint64(len(sr.b)-start)-padded < 8 {
		return nil, fmt.Errorf("snapshot: %s: length %d past the end: %w", what, n, ErrCorrupt)
	}
	data := sr.b[start : start+int(n) : start+int(n)]
	tail := start + int(padded)
	if got, want := binary.LittleEndian.Uint32(sr.b[tail:]), crc32.Checksum(data, castagnoli); got != want {
		return nil, fmt.Errorf("snapshot: %s: crc %#x, want %#x: %w", what, got, want, ErrCorrupt)
	}
	sr.off = tail + 8
	return data, nil
}

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

// decodeSnapshot decodes a snapshot of an index of dimension dim. The
// state's postings and vector words alias b, which must outlive it and
// never change (they are only ever appended to, and an append to a full
// slice copies). It checks every checksum and every cross-reference, so that a snapshot
// that passes cannot make a query index out of range.
func decodeSnapshot(b []byte, dim int) (*state, snapHead, error) {
	h, err := decodeSnapHead(b)
	if err != nil {
		return nil, h, err
	}
	if h.dim != dim {
		return nil, h, errSnap("dimension %d, want %d", h.dim, dim)
	}
	sr := &snapReader{b: b, off: snapHeader}
	st := newState(dim)
	sec := func(what string, unit uint64, count uint32) ([]byte, error) {
		data, err := sr.section(what)
		if err == nil && unit > 0 && uint64(len(data)) != unit*uint64(count) {
			err = errSnap("%s: %d bytes for %d", what, len(data), count)
		}
		return data, err
	}

	data, err := sec("strings", 0, 0)
	if err != nil {
		return nil, h, err
	}
	strs, err := decodeStrings(data, "string")
	if err != nil {
		return nil, h, err
	}
	if len(strs) == 0 || strs[0] != "" {
		return nil, h, errSnap("strings do not start with the empty one")
	}
	for _, s := range strs[1:] {
		if _, dup := st.strs.ids[s]; dup || s == "" {
			return nil, h, errSnap("string %q twice", s)
		}
		st.strs.ids[s] = uint32(len(st.strs.strs))
		st.strs.strs = append(st.strs.strs, s)
	}
	nstrs := uint32(len(st.strs.strs))

	if data, err = sec("meta", 0, 0); err != nil {
		return nil, h, err
	}
	kv, err := decodeStrings(data, "meta")
	if err != nil {
		return nil, h, err
	}
	if len(kv)%2 != 0 {
		return nil, h, errSnap("meta: odd number of strings")
	}
	if data, err = sec("meta sizes", 4, uint32(len(kv)/2)); err != nil {
		return nil, h, err
	}
	var live int64 = headerSize
	for i := 0; i < len(kv); i += 2 {
		if _, dup := st.meta[kv[i]]; dup {
			return nil, h, errSnap("meta %q twice", kv[i])
		}
		n := binary.LittleEndian.Uint32(data[2*i:])
		st.meta[kv[i]] = metaVal{value: kv[i+1], recSize: n}
		live += int64(n)
	}

	if data, err = sec("attrs", snapAttr, h.slots); err != nil {
		return nil, h, err
	}
	st.attrs = make([]attr, h.slots)
	for i := range st.attrs {
		p := data[i*snapAttr:]
		a := attr{
			ts:      int64(binary.LittleEndian.Uint64(p)),
			session: binary.LittleEndian.Uint32(p[8:]),
			role:    binary.LittleEndian.Uint32(p[12:]),
			kind:    binary.LittleEndian.Uint32(p[16:]),
			dl:      binary.LittleEndian.Uint32(p[20:]),
		}
		switch p[24] {
		case 0:
		case 1:
			a.dead = true
		default:
			return nil, h, errSnap("slot %d: dead flag %d", i, p[24])
		}
		if a.session >= nstrs || a.role >= nstrs || a.kind >= nstrs {
			return nil, h, errSnap("slot %d: label out of range", i)
		}
		st.attrs[i] = a
		if !a.dead {
			st.live++
			st.totalDL += uint64(a.dl)
		}
	}

	if data, err = sec("slots", snapSlot, h.slots); err != nil {
		return nil, h, err
	}
	slotData := data
	if data, err = sec("ids", 0, 0); err != nil {
		return nil, h, err
	}
	ids := data
	st.slots = make([]slot, h.slots)
	var idOff uint64
	for i := range st.slots {
		p := slotData[i*snapSlot:]
		s := slot{
			rec:      binary.LittleEndian.Uint64(p),
			idLen:    binary.LittleEndian.Uint32(p[8:]),
			mode:     binary.LittleEndian.Uint32(p[12:]),
			channel:  binary.LittleEndian.Uint32(p[16:]),
			salience: math.Float32frombits(binary.LittleEndian.Uint32(p[20:])),
			row:      int32(binary.LittleEndian.Uint32(p[24:])),
			recSize:  binary.LittleEndian.Uint32(p[28:]),
		}
		if s.mode >= nstrs || s.channel >= nstrs || !finite(s.salience) {
			return nil, h, errSnap("slot %d: label or salience out of range", i)
		}
		if s.row < -1 || int64(s.row) >= int64(h.rows) {
			return nil, h, errSnap("slot %d: row %d of %d", i, s.row, h.rows)
		}
		if s.recSize < recHeader || s.rec < headerSize || s.rec > h.covers || uint64(s.recSize) > h.covers-s.rec {
			return nil, h, errSnap("slot %d: record %d+%d outside %d", i, s.rec, s.recSize, h.covers)
		}
		if uint64(s.idLen) > uint64(len(ids))-idOff {
			return nil, h, errSnap("slot %d: id past the ids", i)
		}
		s.off = idOff
		idOff += uint64(s.idLen)
		st.slots[i] = s
		if !st.attrs[i].dead {
			live += int64(s.recSize)
		}
	}
	if idOff != uint64(len(ids)) {
		return nil, h, errSnap("ids of %d bytes, slots use %d", len(ids), idOff)
	}
	if len(ids) > math.MaxUint32 {
		return nil, h, errSnap("ids of %d bytes", len(ids))
	}
	// The ids stay in place as the arena's first chunk: it is full, so
	// new ids go to new chunks and it is never written.
	st.arena.chunks = [][]byte{ids}
	st.ids.byHash = make(map[uint64]uint32, st.live)
	for i := range st.slots {
		if st.attrs[i].dead {
			continue
		}
		id := st.id(uint32(i))
		hv := maphash.Bytes(st.ids.seed, id)
		old, ok := st.ids.byHash[hv]
		if !ok {
			st.ids.byHash[hv] = uint32(i)
			continue
		}
		if _, dup := st.ids.over[string(id)]; dup || bytes.Equal(st.id(old), id) {
			return nil, h, errSnap("id %q twice", id)
		}
		if st.ids.over == nil {
			st.ids.over = map[string]uint32{}
		}
		st.ids.over[string(id)] = uint32(i)
	}
	st.liveBytes = live

	if data, err = sec("rows", snapRow, h.rows); err != nil {
		return nil, h, err
	}
	st.vecs.rows = make([]rowMeta, h.rows)
	for i := range st.vecs.rows {
		p := data[i*snapRow:]
		r := rowMeta{
			min:  math.Float32frombits(binary.LittleEndian.Uint32(p)),
			step: math.Float32frombits(binary.LittleEndian.Uint32(p[4:])),
			h:    binary.LittleEndian.Uint32(p[8:]),
			slot: binary.LittleEndian.Uint32(p[12:]),
		}
		if !finite(r.min) || !finite(r.step) {
			return nil, h, errSnap("row %d: not finite", i)
		}
		if r.slot != deadRow && (r.slot >= h.slots || st.slots[r.slot].row != int32(i) || st.attrs[r.slot].dead) {
			return nil, h, errSnap("row %d: slot %d", i, r.slot)
		}
		st.vecs.rows[i] = r
	}
	for i := range st.slots {
		if r := st.slots[i].row; r >= 0 && !st.attrs[i].dead && st.vecs.rows[r].slot != uint32(i) {
			return nil, h, errSnap("slot %d: row %d belongs to another", i, r)
		}
	}
	if data, err = sec("words", uint64(st.vecs.wpr)*8, h.rows); err != nil {
		return nil, h, err
	}
	// In place too: a query scans them all, but not copying them halves
	// the open; the first vector added after it moves them to the heap.
	st.vecs.words = u64s(data)

	if data, err = sec("terms", 0, 0); err != nil {
		return nil, h, err
	}
	type termCount struct{ n, live uint32 }
	counts := make([]termCount, 0, h.terms)
	st.posts = make([]postings, 0, h.terms)
	d := decoder{b: data}
	for len(d.b) > 0 && d.err == nil {
		t := d.string("term")
		n, lv := d.u32("term postings"), d.u32("term live")
		if d.err != nil {
			break
		}
		if _, dup := st.terms[t]; dup || lv > n {
			return nil, h, errSnap("term %q: twice or counts %d/%d", t, lv, n)
		}
		st.terms[strings.Clone(t)] = uint32(len(counts))
		counts = append(counts, termCount{n, lv})
	}
	if d.err != nil {
		return nil, h, fmt.Errorf("snapshot: %w", d.err)
	}
	if uint32(len(counts)) != h.terms {
		return nil, h, errSnap("%d terms, header says %d", len(counts), h.terms)
	}
	var total uint64
	for _, c := range counts {
		total += uint64(c.n)
	}
	if total > uint64(math.MaxInt)/4 {
		return nil, h, errSnap("%d postings", total)
	}
	if data, err = sec("postings", 4, uint32(min(total, math.MaxUint32))); err != nil || uint64(len(data)) != 4*total {
		if err == nil {
			err = errSnap("postings: %d bytes for %d", len(data), total)
		}
		return nil, h, err
	}
	slots := u32s(data)
	tfs, err := sr.section("frequencies")
	if err != nil {
		return nil, h, err
	}
	if uint64(len(tfs)) != total {
		return nil, h, errSnap("frequencies: %d for %d postings", len(tfs), total)
	}
	var at uint64
	for i, c := range counts {
		ps := slots[at : at+uint64(c.n) : at+uint64(c.n)]
		for j, s := range ps {
			if s >= h.slots || j > 0 && s <= ps[j-1] {
				return nil, h, errSnap("term %d: posting %d out of order or range", i, s)
			}
		}
		st.posts = append(st.posts, postings{slots: ps, tfs: tfs[at : at+uint64(c.n) : at+uint64(c.n)], live: c.live})
		at += uint64(c.n)
	}
	st.postCount = int64(total)
	if sr.off != len(b) {
		return nil, h, errSnap("%d bytes after the last section", len(b)-sr.off)
	}
	return st, h, nil
}
