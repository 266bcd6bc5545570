package embedded

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
)

// The in-memory index is columnar. A document lives in a slot (its number
// in insertion order); a replaced or deleted document's slot is marked
// dead and skipped until compaction renumbers the live ones. Per slot the
// index keeps an attr (the filter columns, 32 bytes) and a slot (where its
// id sits in the arena and its record in the file, 40 bytes); strings that
// repeat (kind, role, mode, channel, session) are interned. Postings are per term, as sorted
// slot numbers with a parallel term-frequency byte.

// deadLen is a dead slot's entry in state.lens.
const deadLen = math.MaxUint32

// attr holds what filters read per slot.
type attr struct {
	ts      int64 // Unix milliseconds
	session uint32
	role    uint32
	kind    uint32
	dl      uint32 // document length in tokens
	dead    bool
}

// slot holds the rest of a document. Its text and context stay in the
// file: they are read back (and their checksum checked) for the few
// documents a caller asks for, so that an index of a million turns does
// not hold every word of them in memory.
type slot struct {
	rec      uint64 // file offset of its record
	off      uint64 // arena offset of the id
	idLen    uint32
	mode     uint32
	channel  uint32
	salience float32
	row      int32  // vector row, or -1
	recSize  uint32 // bytes of its record in the file
}

// postings lists the slots holding a term: those a snapshot held (snapN
// of them, read from its file when a query needs them, see state.list),
// then those added since (on the heap), so that a new posting of a common
// term does not copy its whole list.
type postings struct {
	snapAt  uint64 // the first of its snapshot postings, in the snapshot's sections
	snapN   uint32
	more    []uint32 // ascending, after every one of the snapshot's
	moreTfs []uint8  // term frequency, saturated at 255
	live    uint32   // live slots among them: the document frequency
}

// len is the number of postings, live or dead.
func (p *postings) len() int { return int(p.snapN) + len(p.more) }

// arena stores ids in large chunks, so that a million documents
// are a few hundred allocations rather than two million strings for the
// garbage collector to trace.
type arena struct{ chunks [][]byte }

const chunkSize = 1 << 20

func (a *arena) add(id string) uint64 {
	n := len(id)
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		a.chunks = append(a.chunks, make([]byte, 0, max(chunkSize, n)))
		last++
	}
	c := a.chunks[last]
	off := uint64(last)<<32 | uint64(len(c))
	a.chunks[last] = append(c, id...)
	return off
}

func (a *arena) bytes(off uint64, n uint32) []byte {
	c := a.chunks[off>>32]
	p := uint32(off)
	return c[p : p+n : p+n]
}

func (a *arena) size() int64 {
	var n int64
	for _, c := range a.chunks {
		n += int64(cap(c))
	}
	return n
}

// interner maps repeated strings to small numbers; 0 is "".
type interner struct {
	ids  map[string]uint32
	strs []string
}

func newInterner() interner {
	return interner{ids: map[string]uint32{"": 0}, strs: []string{""}}
}

func (in *interner) intern(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	s = strings.Clone(s)
	id := uint32(len(in.strs))
	in.ids[s] = id
	in.strs = append(in.strs, s)
	return id
}

// idMap finds a slot by document id. It is keyed by a 64-bit hash of the
// id (checked against the id in the arena) so that it holds no strings;
// the rare id whose hash collides with another's goes to over. The ids
// of a snapshot are in table instead (in place, see snapshot.go): the map
// holds only those added since, and is asked first.
type idMap struct {
	seed   maphash.Seed
	byHash map[uint64]uint32
	over   map[string]uint32
	table  []uint32
}

// idHash is the id table's hash, FNV-1a: the same in every process.
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// tableLookup finds a live slot by id in the snapshot's id table.
func (st *state) tableLookup(id string) (uint32, bool) {
	t := st.ids.table
	if len(t) == 0 {
		return 0, false
	}
	mask := uint64(len(t) - 1)
	i := idHash(id) & mask
	for range t {
		e := t[i]
		if e == 0 {
			return 0, false
		}
		if s := e - 1; string(st.id(s)) == id {
			return s, !st.attrs[s].dead
		}
		i = (i + 1) & mask
	}
	return 0, false
}

// idTable returns an id table of the live slots.
func (st *state) idTable() []uint32 {
	if st.live == 0 {
		return nil
	}
	n := 16
	for n < 2*st.live {
		n *= 2
	}
	t := make([]uint32, n)
	mask := uint64(n - 1)
	for s := range st.slots {
		if st.attrs[s].dead {
			continue
		}
		i := idHash(string(st.id(uint32(s)))) & mask
		for t[i] != 0 {
			i = (i + 1) & mask
		}
		t[i] = uint32(s) + 1
	}
	return t
}

func newIDMap() idMap {
	return idMap{seed: maphash.MakeSeed(), byHash: map[uint64]uint32{}}
}

// meta is a stored meta value and the size of its record.
type metaVal struct {
	value   string
	recSize uint32
}

// state is the whole in-memory index. It is not safe for concurrent use:
// Index guards it.
type state struct {
	dim   int
	attrs []attr
	// lens is what BM25 reads of each slot's attr, in 4 bytes rather
	// than 32: its document length, or deadLen when dead. A lexical query
	// without a filter reads it instead of attrs, so that the common
	// terms' postings do not bring every page of attrs into memory.
	lens  []uint32
	slots []slot
	arena arena
	strs  interner
	ids   idMap
	terms map[string]uint32 // term → index in posts
	posts []postings
	vecs  slab
	meta  map[string]metaVal
	// read returns the record of n bytes at off in the index file,
	// checksum checked.
	read func(off uint64, n uint32) ([]byte, error)
	// release frees what the state was loaded from (a snapshot's
	// mapping, which its postings may point into); nil when nothing.
	release func()
	// lazy reads, and checks at first use, the snapshot's postings; nil
	// without a snapshot.
	lazy *lazyCheck

	live      int    // live documents
	totalDL   uint64 // Σ dl over live documents
	liveBytes int64  // file bytes that a compaction would keep
	postCount int64  // postings held, live or dead
}

func newState(dim int) *state {
	return &state{
		dim:       dim,
		strs:      newInterner(),
		ids:       newIDMap(),
		terms:     map[string]uint32{},
		vecs:      newSlab(dim),
		meta:      map[string]metaVal{},
		liveBytes: headerSize,
	}
}

func (st *state) id(s uint32) []byte {
	sl := &st.slots[s]
	return st.arena.bytes(sl.off, sl.idLen)
}

// upsert reads back slot s's record from the file. Its strings point into
// a new buffer of their own.
func (st *state) upsert(s uint32, q *quantized) (record, error) {
	sl := &st.slots[s]
	b, err := st.read(sl.rec, sl.recSize)
	if err != nil {
		return record{}, err
	}
	var r record
	if err := decodePayload(b, st.dim, &r, q); err != nil {
		return record{}, fmt.Errorf("record at offset %d: %w", sl.rec, err)
	}
	if r.typ != recUpsert || r.id != string(st.id(s)) {
		return record{}, fmt.Errorf("record at offset %d is not the upsert of %q: %w", sl.rec, st.id(s), ErrCorrupt)
	}
	return r, nil
}

func (st *state) lookup(id string) (uint32, bool) {
	if s, ok := st.ids.over[id]; ok {
		return s, true
	}
	s, ok := st.ids.byHash[maphash.String(st.ids.seed, id)]
	if ok && string(st.id(s)) == id {
		return s, true
	}
	return st.tableLookup(id)
}

func (st *state) setID(id string, s uint32) {
	if _, ok := st.ids.over[id]; ok {
		st.ids.over[id] = s
		return
	}
	h := maphash.String(st.ids.seed, id)
	if old, ok := st.ids.byHash[h]; ok && string(st.id(old)) != id {
		if st.ids.over == nil {
			st.ids.over = map[string]uint32{}
		}
		st.ids.over[strings.Clone(id)] = s
		return
	}
	st.ids.byHash[h] = s
}

func (st *state) deleteID(id string) {
	if _, ok := st.ids.over[id]; ok {
		delete(st.ids.over, id)
		return
	}
	h := maphash.String(st.ids.seed, id)
	if s, ok := st.ids.byHash[h]; ok && string(st.id(s)) == id {
		delete(st.ids.byHash, h)
	}
}

// termFreqs sorts toks and returns the distinct terms with their counts
// (tfs reuses its backing array).
func termFreqs(toks []string, tfs []uint32) ([]string, []uint32) {
	slices.Sort(toks)
	tfs = tfs[:0]
	out := toks[:0]
	for i, t := range toks {
		if i > 0 && t == toks[i-1] {
			tfs[len(tfs)-1]++
			continue
		}
		out = append(out, t)
		tfs = append(tfs, 1)
	}
	return out, tfs
}

// prepared is a document ready to be applied: its record, its vector and
// its terms.
type prepared struct {
	rec   record
	q     quantized
	terms []string
	tfs   []uint32
	dl    int
}

// put applies an upsert whose record of recSize bytes sits at off in the
// file, replacing any document with the same id, and returns the garbage
// it made in the file (the replaced record).
func (st *state) put(p *prepared, off uint64, recSize uint32) (garbage int64, err error) {
	r := &p.rec
	if old, ok := st.lookup(r.id); ok {
		if garbage, err = st.kill(old); err != nil {
			return 0, err
		}
	}
	s := uint32(len(st.slots))
	st.lens = append(st.lens, min(uint32(p.dl), deadLen-1))
	st.attrs = append(st.attrs, attr{
		ts:      r.ts,
		session: st.strs.intern(r.sess),
		role:    st.strs.intern(r.role),
		kind:    st.strs.intern(r.kind),
		dl:      uint32(p.dl),
	})
	sl := slot{
		rec:      off,
		off:      st.arena.add(r.id),
		idLen:    uint32(len(r.id)),
		mode:     st.strs.intern(r.mode),
		channel:  st.strs.intern(r.chann),
		salience: r.sal,
		row:      -1,
		recSize:  recSize,
	}
	if r.vec != nil {
		sl.row = st.vecs.add(r.vec, s)
	}
	st.slots = append(st.slots, sl)
	st.setID(r.id, s)
	for i, t := range p.terms {
		ti, ok := st.terms[t]
		if !ok {
			ti = uint32(len(st.posts))
			st.terms[strings.Clone(t)] = ti
			st.posts = append(st.posts, postings{})
		}
		pl := &st.posts[ti]
		pl.more = append(pl.more, s)
		pl.moreTfs = append(pl.moreTfs, uint8(min(p.tfs[i], math.MaxUint8)))
		pl.live++
	}
	st.postCount += int64(len(p.terms))
	st.live++
	st.totalDL += uint64(p.dl)
	st.liveBytes += int64(recSize)
	return garbage, nil
}

// kill marks a live slot dead and returns the size of its record, which
// is now garbage in the file. It reads the record back for its terms; a
// record that cannot be read leaves the slot as it was.
func (st *state) kill(s uint32) (int64, error) {
	a := &st.attrs[s]
	sl := &st.slots[s]
	var q quantized
	r, err := st.upsert(s, &q)
	if err != nil {
		return 0, err
	}
	st.deleteID(r.id)
	terms, _ := termFreqs(indexTokens(nil, r.text, r.ctx), nil)
	for _, t := range terms {
		if ti, ok := st.terms[t]; ok {
			st.posts[ti].live--
		}
	}
	if sl.row >= 0 {
		st.vecs.rows[sl.row].slot = deadRow
	}
	a.dead = true
	st.lens[s] = deadLen
	st.live--
	st.totalDL -= uint64(a.dl)
	st.liveBytes -= int64(sl.recSize)
	return int64(sl.recSize), nil
}

// remove deletes a document by id, if stored.
func (st *state) remove(id string) (garbage int64, err error) {
	s, ok := st.lookup(id)
	if !ok {
		return 0, nil
	}
	return st.kill(s)
}

func (st *state) setMeta(key, value string, recSize uint32) (garbage int64) {
	if old, ok := st.meta[key]; ok {
		garbage = int64(old.recSize)
		st.liveBytes -= garbage
	}
	st.meta[strings.Clone(key)] = metaVal{value: strings.Clone(value), recSize: recSize}
	st.liveBytes += int64(recSize)
	return garbage
}

// record reads back the record of a live slot (for compaction), with its
// vector from the slab (the same codes the file holds).
func (st *state) record(s uint32, q *quantized) (record, error) {
	return st.upsert(s, q)
}

// doc reads back a live slot's document.
func (st *state) doc(s uint32) (recall.Doc, error) {
	var q quantized
	r, err := st.upsert(s, &q)
	if err != nil {
		return recall.Doc{}, err
	}
	a := &st.attrs[s]
	sl := &st.slots[s]
	return recall.Doc{
		ID:       strings.Clone(r.id),
		Kind:     st.strs.strs[a.kind],
		Role:     st.strs.strs[a.role],
		Mode:     st.strs.strs[sl.mode],
		Channel:  st.strs.strs[sl.channel],
		Session:  st.strs.strs[a.session],
		Text:     r.text,
		Context:  r.ctx,
		TS:       time.UnixMilli(a.ts),
		Salience: sl.salience,
	}, nil
}

// filter is a compiled recall.Filter.
type filter struct {
	kinds, roles []uint32 // nil: any
	session      uint32
	hasSession   bool
	since, until int64 // Unix milliseconds
	hasSince     bool
	hasUntil     bool
}

// compile returns the filter for f, nil when f lets every live document
// through, and false when f can match nothing in this index.
func (st *state) compile(f recall.Filter) (*filter, bool) {
	var c filter
	internAll := func(ss []string) ([]uint32, bool) {
		if len(ss) == 0 {
			return nil, true
		}
		out := make([]uint32, 0, len(ss))
		for _, s := range ss {
			if id, ok := st.strs.ids[s]; ok {
				out = append(out, id)
			}
		}
		return out, len(out) > 0
	}
	var ok bool
	if c.kinds, ok = internAll(f.Kinds); !ok {
		return nil, false
	}
	if c.roles, ok = internAll(f.Roles); !ok {
		return nil, false
	}
	if f.Session != "" {
		if c.session, ok = st.strs.ids[f.Session]; !ok {
			return nil, false
		}
		c.hasSession = true
	}
	if !f.Since.IsZero() {
		c.since, c.hasSince = ceilMilli(f.Since), true
	}
	if !f.Until.IsZero() {
		c.until, c.hasUntil = ceilMilli(f.Until), true
	}
	if c.hasSince && c.hasUntil && c.since >= c.until {
		return nil, false
	}
	if c.kinds == nil && c.roles == nil && !c.hasSession && !c.hasSince && !c.hasUntil {
		return nil, true
	}
	return &c, true
}

// ceilMilli is t in Unix milliseconds, rounded up: a stored timestamp (in
// whole milliseconds) ts satisfies ts >= ceilMilli(t) exactly when the
// instant ts ms is not before t.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}

func (f *filter) match(a *attr) bool {
	if a.dead {
		return false
	}
	if f.hasSince && a.ts < f.since || f.hasUntil && a.ts >= f.until {
		return false
	}
	if f.hasSession && a.session != f.session {
		return false
	}
	if f.kinds != nil && !slices.Contains(f.kinds, a.kind) {
		return false
	}
	if f.roles != nil && !slices.Contains(f.roles, a.role) {
		return false
	}
	return true
}
