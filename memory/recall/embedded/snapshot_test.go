package embedded

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/recall"
)

const snapDim = 8

// fillIndex writes n documents from seed (every seventh replaces an
// earlier one, every eleventh deletes one), a meta value and vectors on
// most of them.
func fillIndex(t testing.TB, ix *Index, seed uint64, n int) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	words := []string{"coffee", "tea", "paris", "garden", "violin", "rain", "book", "river", "sister", "train", "bread", "snow"}
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("%d-%d", seed, i)
		if i%7 == 6 {
			id = fmt.Sprintf("%d-%d", seed, r.IntN(i))
		}
		text := ""
		for range 3 + r.IntN(6) {
			text += words[r.IntN(len(words))] + " "
		}
		d := recall.Doc{ID: id, Kind: recall.KindTurn, Role: []string{"user", "agent"}[i%2], Session: fmt.Sprintf("s%d", i/10),
			Channel: "chat", Mode: "text", Text: text, Context: "before: " + words[i%len(words)], TS: ts.Add(time.Duration(i) * time.Minute), Salience: float32(i%5) / 4}
		var vecs [][]float32
		if i%4 != 3 {
			v := make([]float32, snapDim)
			for j := range v {
				v[j] = r.Float32()*2 - 1
			}
			vecs = [][]float32{v}
		}
		if err := ix.Upsert(ctx, []recall.Doc{d}, vecs); err != nil {
			t.Fatal(err)
		}
		if i%11 == 10 {
			if err := ix.Delete(ctx, []string{fmt.Sprintf("%d-%d", seed, r.IntN(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ix.SetMeta(ctx, "cursor", fmt.Sprintf("%d-%d", seed, n)); err != nil {
		t.Fatal(err)
	}
}

// answers is everything a caller sees of an index, for comparing one
// before and after a reopen.
type answers struct {
	Count int
	Meta  string
	Lex   [][]recall.Scored
	Vec   [][]recall.Scored
	Docs  []recall.Doc
}

func answersOf(t testing.TB, ix *Index) answers {
	t.Helper()
	ctx := context.Background()
	var a answers
	var err error
	if a.Count, err = ix.Count(ctx); err != nil {
		t.Fatal(err)
	}
	a.Meta, _, _ = ix.Meta(ctx, "cursor")
	filters := []recall.Filter{{}, {Roles: []string{"user"}}, {Session: "s3"}, {Since: time.Date(2024, 1, 1, 2, 0, 0, 0, time.UTC)}}
	for _, q := range []string{"coffee tea", "violin river snow", "before garden", "sister"} {
		for _, f := range filters {
			res, err := ix.Lexical(ctx, q, 8, f)
			if err != nil {
				t.Fatal(err)
			}
			a.Lex = append(a.Lex, res)
		}
	}
	r := rand.New(rand.NewPCG(99, 1))
	for range 4 {
		v := make([]float32, snapDim)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		for _, f := range filters {
			res, err := ix.Vector(ctx, v, 8, f)
			if err != nil {
				t.Fatal(err)
			}
			a.Vec = append(a.Vec, res)
		}
	}
	var ids []string
	for i := range 400 {
		ids = append(ids, fmt.Sprintf("1-%d", i), fmt.Sprintf("2-%d", i))
	}
	if a.Docs, err = ix.Docs(ctx, ids); err != nil {
		t.Fatal(err)
	}
	return a
}

func diffAnswers(want, got answers) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }))
}

// crash abandons an index as a killed process would: what was written
// reached the OS (every call ends with a flush), nothing else runs.
func crash(ix *Index) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.f.Close()
	if ix.st.release != nil {
		ix.st.release()
	}
	ix.closed = true
}

// TestSnapshotReopen writes an index, closes it (taking a snapshot), does
// something to the snapshot, and reopens: every case answers exactly as
// the index did before, whether it loads the snapshot or falls back to
// replaying the file.
func TestSnapshotReopen(t *testing.T) {
	snapOf := func(dir string) string { return filepath.Join(dir, SnapName) }
	damage := func(fn func(b []byte) []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			b, err := os.ReadFile(snapOf(dir))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(snapOf(dir), fn(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		// before runs on the open index before the second Close: the
		// answers compared are the ones after it.
		before func(t *testing.T, ix *Index, dir string)
		after  func(t *testing.T, dir string) // then, on the closed files
		loaded bool                           // the snapshot is used
	}{
		{name: "intact", loaded: true},
		{name: "missing", after: func(t *testing.T, dir string) { os.Remove(snapOf(dir)) }},
		// The postings are checked at first use (TestSnapshotSectionDamage).
		{name: "flipped byte in the postings", after: damage(func(b []byte) []byte { b[len(b)-40] ^= 1; return b }), loaded: true},
		{name: "flipped byte in the header", after: damage(func(b []byte) []byte { b[20] ^= 0x80; return b })},
		{name: "torn", after: damage(func(b []byte) []byte { return b[:len(b)/2] })},
		{name: "empty", after: damage(func(b []byte) []byte { return nil })},
		{name: "garbage after it", after: damage(func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 0) })},
		{name: "other version", after: damage(func(b []byte) []byte {
			b[8] = 9
			copy(b[60:], (&snapHead{}).encode()[60:]) // a bad crc either way
			return b
		})},
		{
			// An older snapshot of the same file: it is used and the
			// records after it replayed.
			name: "stale but of this file",
			before: func(t *testing.T, ix *Index, dir string) {
				old, err := os.ReadFile(snapOf(dir))
				if err != nil {
					t.Fatal(err)
				}
				fillIndex(t, ix, 2, 150)
				ix.mu.Lock()
				ix.snapHook = func(stage string) error {
					if stage == "renamed" {
						return os.WriteFile(snapOf(dir), old, 0o600)
					}
					return nil
				}
				ix.mu.Unlock()
			},
			loaded: true,
		},
		{
			// A snapshot of the file before a compaction rewrote it.
			name: "of another file",
			before: func(t *testing.T, ix *Index, dir string) {
				old, err := os.ReadFile(snapOf(dir))
				if err != nil {
					t.Fatal(err)
				}
				if err := ix.Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(snapOf(dir)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("snapshot still there after a compaction: %v", err)
				}
				fillIndex(t, ix, 2, 30)
				ix.mu.Lock()
				ix.snapHook = func(stage string) error {
					if stage == "renamed" {
						return os.WriteFile(snapOf(dir), old, 0o600)
					}
					return nil
				}
				ix.mu.Unlock()
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ix := openT(t, dir, snapDim)
			fillIndex(t, ix, 1, 300)
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ix = openT(t, dir, snapDim)
			if ix.st.release == nil {
				t.Fatal("the snapshot Close wrote was not loaded")
			}
			if tc.before != nil {
				tc.before(t, ix, dir)
			}
			want := answersOf(t, ix)
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(t, dir)
			}
			ix = openT(t, dir, snapDim)
			defer ix.Close()
			if loaded := ix.st.release != nil; loaded != tc.loaded {
				t.Errorf("snapshot loaded: %v, want %v", loaded, tc.loaded)
			}
			if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
				t.Errorf("answers after reopen differ (-before +after):\n%s", diff)
			}
			// The index takes writes and reopens the same again.
			fillIndex(t, ix, 3, 20)
			want = answersOf(t, ix)
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ix = openT(t, dir, snapDim)
			if ix.st.release == nil {
				t.Error("the snapshot of the second Close was not loaded")
			}
			if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
				t.Errorf("answers after the second reopen differ (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSnapshotCrash stops a snapshot at each stage of its write, as a
// crash would, with records written after the last good snapshot: the
// reopened index answers as the crashed one did.
func TestSnapshotCrash(t *testing.T) {
	for _, stage := range []string{"synced", "renamed"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			ix := openT(t, dir, snapDim)
			fillIndex(t, ix, 1, 200)
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ix = openT(t, dir, snapDim)
			fillIndex(t, ix, 2, 100)
			want := answersOf(t, ix)
			crashed := errors.New("crash")
			ix.mu.Lock()
			ix.snapHook = func(s string) error {
				if s == stage {
					return crashed
				}
				return nil
			}
			err := ix.snapshotLocked()
			ix.mu.Unlock()
			if !errors.Is(err, crashed) {
				t.Fatalf("snapshot = %v, want the crash", err)
			}
			crash(ix)
			if stage == "synced" {
				if _, err := os.Stat(filepath.Join(dir, SnapName+".tmp")); err != nil {
					t.Fatalf("no temporary snapshot left by the crash: %v", err)
				}
			}
			ix = openT(t, dir, snapDim)
			defer ix.Close()
			if ix.st.release == nil {
				t.Error("no snapshot loaded")
			}
			if _, err := os.Stat(filepath.Join(dir, SnapName+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temporary snapshot not removed by Open: %v", err)
			}
			if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
				t.Errorf("answers after the crash differ (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSnapshotPeriodic takes snapshots while writing, without a Close: a
// crash then replays only the records after the last one.
func TestSnapshotPeriodic(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir, Options{Dim: snapDim, SnapshotEvery: 100})
	if err != nil {
		t.Fatal(err)
	}
	fillIndex(t, ix, 1, 350)
	want := answersOf(t, ix)
	crash(ix)
	ix = openT(t, dir, snapDim)
	defer ix.Close()
	if ix.st.release == nil {
		t.Fatal("no snapshot taken while writing")
	}
	if ix.sinceSnap >= 100 {
		t.Errorf("replayed %d records after the snapshot, want under 100", ix.sinceSnap)
	}
	if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
		t.Errorf("answers differ (-before +after):\n%s", diff)
	}
}

// snapshotBytes returns the snapshot of a small index.
func snapshotBytes(t testing.TB) []byte {
	dir := t.TempDir()
	ix := openT(t, dir, snapDim)
	fillIndex(t, ix, 1, 60)
	var buf bytes.Buffer
	ix.mu.Lock()
	w := bufio.NewWriter(&buf)
	err := writeSnapshot(w, ix.st, snapHead{covers: uint64(ix.size)})
	if err == nil {
		err = w.Flush()
	}
	ix.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	return buf.Bytes()
}

// FuzzDecodeSnapshot decodes arbitrary snapshots: never a panic, an error
// is ErrCorrupt, and a state that decodes answers queries without going
// out of range.
func FuzzDecodeSnapshot(f *testing.F) {
	good := snapshotBytes(f)
	f.Add(good)
	f.Add(good[:snapHeader])
	f.Add(good[:len(good)/3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAndQuery(t, b)
		// Again with the checksums made right, so that the checks behind
		// them see the mutation.
		decodeAndQuery(t, fixCRCs(bytes.Clone(b)))
	})
}

// fixCRCs recomputes the header's and each section's checksum of a
// snapshot, as far as its lengths allow.
func fixCRCs(b []byte) []byte {
	if len(b) < snapHeader {
		return b
	}
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	off := snapHeader
	for len(b)-off >= 8 {
		n := binary.LittleEndian.Uint64(b[off:])
		padded := n + (8-n%8)%8
		start := off + 8 + int(alignPad(uint64(off+8)))
		if start > len(b) || padded < n || padded > uint64(len(b)-start) || uint64(len(b)-start)-padded < 8 {
			break
		}
		tail := start + int(padded)
		binary.LittleEndian.PutUint32(b[tail:], crc32.Checksum(b[start:start+int(n)], castagnoli))
		off = tail + 8
	}
	fixTermCRCs(b)
	return b
}

// fixTermCRCs recomputes each term's checksum of its postings, and then
// the terms section's, as far as the sections are there.
func fixTermCRCs(b []byte) {
	sr := &snapReader{b: b, off: snapHeader}
	var terms, posts, tfs []byte
	termsTail := 0
	for _, name := range snapSectionNames {
		data, _, err := sr.next(name)
		if err != nil {
			return
		}
		switch name {
		case "terms":
			terms, termsTail = data, sr.off-8
		case "postings":
			posts = data
		case "frequencies":
			tfs = data
		}
	}
	d := decoder{b: terms}
	at := 0
	for len(d.b) > 0 && d.err == nil {
		d.string("term")
		n := int(d.u32("n"))
		d.u32("live")
		if d.err != nil || len(d.b) < 4 || n < 0 || at+n > len(tfs) || 4*(at+n) > len(posts) {
			break
		}
		crc := crc32.Update(crc32.Checksum(posts[4*at:4*(at+n)], castagnoli), castagnoli, tfs[at:at+n])
		binary.LittleEndian.PutUint32(d.b, crc)
		d.b = d.b[4:]
		at += n
	}
	binary.LittleEndian.PutUint32(b[termsTail:], crc32.Checksum(terms, castagnoli))
}

func decodeAndQuery(t *testing.T, b []byte) {
	{
		st, _, err := decodeSnapshot(b, bytes.NewReader(b), snapDim, heapColumns(b))
		if err != nil {
			if !IsCorrupt(err) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		st.read = func(uint64, uint32) ([]byte, error) { return nil, errors.New("no file") }
		sc := new(scratch)
		// A damaged list is an error, never a query out of range.
		for _, q := range []struct {
			text  string
			f     *filter
			procs int
		}{{"coffee tea river", nil, 2}, {"coffee", &filter{roles: []uint32{1}}, 1}} {
			if _, err := st.lexical(q.text, 5, q.f, sc, q.procs); err != nil && !IsCorrupt(err) {
				t.Fatalf("lexical: error %v is not ErrCorrupt", err)
			}
		}
		if err := st.checkAll(); err != nil && !IsCorrupt(err) {
			t.Fatalf("checkAll: error %v is not ErrCorrupt", err)
		}
		st.vector([]float32{1, 0, 0, 0, 0, 0, 0, 0}, 5, nil, 2)
		for s := range st.slots {
			st.id(uint32(s))
		}
	}
}

// TestSnapshotRoundTrip decodes what writeSnapshot wrote into the same
// state, column by column.
func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, snapDim)
	defer ix.Close()
	fillIndex(t, ix, 1, 120)
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := writeSnapshot(w, ix.st, snapHead{covers: uint64(ix.size), lastOff: ix.lastOff}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	st, h, err := decodeSnapshot(buf.Bytes(), bytes.NewReader(buf.Bytes()), snapDim, heapColumns(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h.covers != uint64(ix.size) || h.lastOff != ix.lastOff {
		t.Errorf("header %+v", h)
	}
	old := ix.st
	opts := []cmp.Option{cmp.AllowUnexported(attr{}, slot{}, postings{}, rowMeta{}, slab{}, interner{}, metaVal{})}
	for name, pair := range map[string][2]any{
		"attrs": {old.attrs, st.attrs}, "lens": {old.lens, st.lens}, "strs": {old.strs, st.strs}, "terms": {old.terms, st.terms},
		"rows": {old.vecs.rows, st.vecs.rows}, "words": {old.vecs.words, st.vecs.words}, "meta": {old.meta, st.meta},
		"counts": {[]any{old.live, old.totalDL, old.liveBytes, old.postCount}, []any{st.live, st.totalDL, st.liveBytes, st.postCount}},
	} {
		if diff := cmp.Diff(pair[0], pair[1], opts...); diff != "" {
			t.Errorf("%s differ (-written +read):\n%s", name, diff)
		}
	}
	for i := range old.posts {
		a, b := old.posts[i], st.posts[i]
		as, at, err := old.list(uint32(i), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs, bt, err := st.list(uint32(i), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slicesEqual(slices.Concat(as, a.more), slices.Concat(bs, b.more)) ||
			!bytes.Equal(slices.Concat(at, a.moreTfs), slices.Concat(bt, b.moreTfs)) || a.live != b.live {
			t.Errorf("postings %d differ", i)
		}
	}
	for i := range old.slots {
		a, b := old.slots[i], st.slots[i]
		a.off, b.off = 0, 0
		if a != b || string(old.id(uint32(i))) != string(st.id(uint32(i))) {
			t.Errorf("slot %d: %+v %q, read %+v %q", i, a, old.id(uint32(i)), b, st.id(uint32(i)))
		}
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSnapshotColumnsWritable writes to an index loaded from a snapshot —
// replacing, deleting and adding documents, which changes and grows the
// columns used in place — and checks that it answers as an index that
// took the same writes without ever loading a snapshot, and that the
// snapshot file itself did not change under the writes (the columns are
// private mappings: copy on write).
func TestSnapshotColumnsWritable(t *testing.T) {
	loaded, direct := t.TempDir(), t.TempDir()
	ix := openT(t, loaded, snapDim)
	fillIndex(t, ix, 1, 300)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(loaded, SnapName))
	if err != nil {
		t.Fatal(err)
	}
	ix = openT(t, loaded, snapDim)
	defer ix.Close()
	if ix.st.release == nil {
		t.Fatal("snapshot not loaded")
	}
	ref, err := Open(direct, Options{Dim: snapDim, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	fillIndex(t, ref, 1, 300)
	for seed := uint64(2); seed < 5; seed++ {
		fillIndex(t, ix, seed, 200)
		fillIndex(t, ref, seed, 200)
	}
	// Replace and delete documents the snapshot holds.
	ctx := context.Background()
	for _, x := range []*Index{ix, ref} {
		if err := x.Delete(ctx, []string{"1-3", "1-10", "1-299"}); err != nil {
			t.Fatal(err)
		}
		doc := recall.Doc{ID: "1-5", Kind: recall.KindTurn, Text: "coffee again, replaced", TS: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)}
		if err := x.Upsert(ctx, []recall.Doc{doc}, [][]float32{{1, 0, 0, 0, 0, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := diffAnswers(answersOf(t, ref), answersOf(t, ix)); diff != "" {
		t.Errorf("index loaded from a snapshot answers otherwise after writes (-never loaded +loaded):\n%s", diff)
	}
	after, err := os.ReadFile(filepath.Join(loaded, SnapName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("writes to the loaded index changed the snapshot file")
	}
}

// TestSnapshotPostingsStayInPlace adds documents to an index loaded from a
// snapshot: the terms' lists the snapshot held stay in its file (a new
// posting goes to the list's heap part) instead of each list that gains
// a document being copied whole to the heap.
func TestSnapshotPostingsStayInPlace(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, snapDim)
	fillIndex(t, ix, 1, 300)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openT(t, dir, snapDim)
	defer ix.Close()
	ix.mu.RLock()
	p := &ix.st.posts[ix.st.terms["coffee"]]
	before := *p
	ix.mu.RUnlock()
	fillIndex(t, ix, 2, 50) // "coffee" again, among others
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p = &ix.st.posts[ix.st.terms["coffee"]]
	if before.snapN == 0 || p.snapAt != before.snapAt || p.snapN != before.snapN {
		t.Errorf("the snapshot's list of \"coffee\" moved or changed (%d postings at %d, were %d at %d)", p.snapN, p.snapAt, before.snapN, before.snapAt)
	}
	if len(p.more) == 0 {
		t.Error("the new postings of \"coffee\" are not in its heap part")
	}
}

// snapSectionNames are a snapshot's sections, in order.
var snapSectionNames = []string{"strings", "meta", "meta sizes", "ids", "attrs", "slots", "id table", "rows", "words", "terms", "postings", "frequencies"}

// lazySections are checked at first use, not at open.
var lazySections = map[string]bool{"postings": true, "frequencies": true}

// damageAt returns where in the snapshot in dir flipping a byte damages
// section name: its middle, or for the lazily checked postings and
// frequencies the list of a term every answersOf asks for.
func damageAt(t *testing.T, dir, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, SnapName))
	if err != nil {
		t.Fatal(err)
	}
	sr := &snapReader{b: b, off: snapHeader}
	at := map[string][2]int{}
	for _, n := range snapSectionNames {
		data, _, err := sr.next(n)
		if err != nil {
			t.Fatal(err)
		}
		at[n] = [2]int{sr.at, len(data)}
	}
	if !lazySections[name] {
		return int64(at[name][0] + at[name][1]/2)
	}
	// The postings before the term's, in term order.
	ix := openT(t, dir, snapDim)
	defer ix.Close()
	ti, ok := ix.st.terms[recall.Tokens("coffee")[0]]
	if !ok {
		t.Fatal("no term coffee")
	}
	before := 0
	for i := range ti {
		before += int(ix.st.posts[i].snapN)
	}
	if name == "postings" {
		return int64(at[name][0] + 4*before + 1)
	}
	return int64(at[name][0] + before)
}

// flipByte flips a bit of the byte at off of the file, in place (a
// mapping of it sees the change).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotSectionDamage damages each section of a snapshot, before
// the open and (for the sections checked at first use) after it: the
// damage is caught before the section's data is used, the snapshot is
// dropped and the record file replayed, and the index answers as it did
// before.
func TestSnapshotSectionDamage(t *testing.T) {
	type when int
	const (
		beforeOpen when = iota
		afterOpen
	)
	for _, name := range snapSectionNames {
		for _, w := range []when{beforeOpen, afterOpen} {
			if w == afterOpen && !lazySections[name] {
				continue // checked at open, used in place after
			}
			t.Run(fmt.Sprintf("%s/%v", name, map[when]string{beforeOpen: "before open", afterOpen: "after open"}[w]), func(t *testing.T) {
				dir := t.TempDir()
				snap := filepath.Join(dir, SnapName)
				ix := openT(t, dir, snapDim)
				fillIndex(t, ix, 1, 300)
				want := answersOf(t, ix)
				if err := ix.Close(); err != nil {
					t.Fatal(err)
				}
				off := damageAt(t, dir, name)
				if w == beforeOpen {
					flipByte(t, snap, off)
				}
				ix = openT(t, dir, snapDim)
				defer ix.Close()
				loaded := ix.st.release != nil
				if loaded != lazySections[name] {
					t.Fatalf("snapshot loaded at open: %v, want %v", loaded, lazySections[name])
				}
				if w == afterOpen {
					flipByte(t, snap, off)
				}
				if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
					t.Errorf("answers differ (-before +after):\n%s", diff)
				}
				if ix.st.release != nil || ix.st.lazy != nil {
					t.Error("still on the damaged snapshot after the queries")
				}
				if _, err := os.Stat(snap); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("damaged snapshot not removed: %v", err)
				}
			})
		}
	}
}

// TestSnapshotUncheckedNotWritten: a postings list no query used is
// checked before a snapshot is written, so that damage in it is not
// written out again under a fresh checksum.
func TestSnapshotUncheckedNotWritten(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, SnapName)
	ix := openT(t, dir, snapDim)
	fillIndex(t, ix, 1, 300)
	want := answersOf(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	off := damageAt(t, dir, "postings")
	ix = openT(t, dir, snapDim)
	flipByte(t, snap, off)
	ix.mu.Lock()
	err := ix.snapshotLocked()
	ix.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if ix.st.lazy != nil {
		t.Error("the snapshot was written from the damaged state")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openT(t, dir, snapDim)
	defer ix.Close()
	if ix.st.release == nil {
		t.Error("no snapshot written after the replay")
	}
	if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
		t.Errorf("answers differ (-before +after):\n%s", diff)
	}
	if ix.st.release == nil {
		t.Error("the new snapshot was found damaged")
	}
}

// TestSnapshotTermOrderChecked: postings out of order under right
// checksums (what the fuzz target's fixCRCs makes) decode, and the list
// is refused at its first use.
func TestSnapshotTermOrderChecked(t *testing.T) {
	good := snapshotBytes(t)
	if !bytes.Equal(fixCRCs(bytes.Clone(good)), good) {
		t.Fatal("fixCRCs changes an intact snapshot")
	}
	b := bytes.Clone(good)
	sr := &snapReader{b: b, off: snapHeader}
	var posts []byte
	for _, name := range snapSectionNames {
		data, _, err := sr.next(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "postings" {
			posts = data
		}
	}
	// The first term with two postings or more, its first two swapped.
	st, _, err := decodeSnapshot(good, bytes.NewReader(good), snapDim, heapColumns(good))
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, p := range st.posts {
		if p.snapN >= 2 {
			break
		}
		at += int(p.snapN)
	}
	x, y := binary.LittleEndian.Uint32(posts[4*at:]), binary.LittleEndian.Uint32(posts[4*at+4:])
	binary.LittleEndian.PutUint32(posts[4*at:], y)
	binary.LittleEndian.PutUint32(posts[4*at+4:], x)
	b = fixCRCs(b)
	st, _, err = decodeSnapshot(b, bytes.NewReader(b), snapDim, heapColumns(b))
	if err != nil {
		t.Fatalf("decode: %v (the lists are checked at first use)", err)
	}
	if err := st.checkAll(); !IsCorrupt(err) {
		t.Errorf("checkAll = %v, want ErrCorrupt", err)
	}
}

// TestLexicalReadsLens: a lexical query without a filter scores from the
// lengths column alone (attrs, 32 bytes a slot, stay out of memory), and
// the column follows deletes and replacements, in memory and through a
// snapshot.
func TestLexicalReadsLens(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, snapDim)
	fillIndex(t, ix, 1, 200)
	want := answersOf(t, ix)
	check := func(ix *Index) {
		t.Helper()
		ix.mu.Lock()
		defer ix.mu.Unlock()
		st := ix.st
		for s := range st.attrs {
			a := &st.attrs[s]
			if w := map[bool]uint32{true: deadLen, false: a.dl}[a.dead]; st.lens[s] != w {
				t.Fatalf("slot %d: length %d, want %d", s, st.lens[s], w)
			}
		}
		attrs := st.attrs
		st.attrs = nil // read, it panics
		defer func() { st.attrs = attrs }()
		hits, err := st.lexical("coffee tea violin", 10, nil, new(scratch), 2)
		if err != nil || len(hits) == 0 {
			t.Fatalf("lexical = %v, %v", hits, err)
		}
	}
	check(ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openT(t, dir, snapDim)
	defer ix.Close()
	check(ix)
	if diff := diffAnswers(want, answersOf(t, ix)); diff != "" {
		t.Errorf("answers differ (-before +after):\n%s", diff)
	}
}

// TestLexicalFilterAtSelection: a filter asked only when a document would
// enter the best k ranks exactly as filtering every posting did: the
// unfiltered ranking of every document, filtered, cut at k.
func TestLexicalFilterAtSelection(t *testing.T) {
	ix := openT(t, t.TempDir(), snapDim)
	defer ix.Close()
	fillIndex(t, ix, 1, 600)
	filters := []recall.Filter{
		{Roles: []string{"user"}},
		{Session: "s3"},
		{Since: time.Date(2024, 1, 1, 2, 0, 0, 0, time.UTC)},
		{Until: time.Date(2024, 1, 1, 3, 0, 0, 0, time.UTC), Roles: []string{"agent"}},
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.st
	for _, q := range []string{"coffee", "tea river", "before garden snow"} {
		for i, rf := range filters {
			for _, k := range []int{1, 5, 40} {
				cf, ok := st.compile(rf)
				if !ok {
					t.Fatalf("filter %d matches nothing", i)
				}
				got, err := st.lexical(q, k, cf, new(scratch), 2)
				if err != nil {
					t.Fatal(err)
				}
				all, err := st.lexical(q, len(st.slots), nil, new(scratch), 1)
				if err != nil {
					t.Fatal(err)
				}
				var want []hit
				for _, h := range all {
					if cf.match(&st.attrs[h.id]) && len(want) < k {
						want = append(want, h)
					}
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(hit{})); diff != "" {
					t.Errorf("%q, filter %d, k %d (-want +got):\n%s", q, i, k, diff)
				}
			}
		}
	}
}
