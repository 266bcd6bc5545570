package embedded

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
)

func openT(t testing.TB, dir string, dim int) *Index {
	t.Helper()
	ix, err := Open(dir, Options{Dim: dim})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return ix
}

func TestConformance(t *testing.T) {
	recalltest.RunIndexConformance(t, func(t *testing.T, dim int) recall.Index {
		return openT(t, t.TempDir(), dim)
	})
}

// reopener closes and reopens its index after every write, so the
// conformance suite checks what survives on disk.
type reopener struct {
	t   *testing.T
	dir string
	dim int
	mu  sync.RWMutex
	ix  *Index
}

func (r *reopener) write(fn func(ix *Index) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := fn(r.ix)
	if cerr := r.ix.Close(); cerr != nil {
		return cerr
	}
	ix, oerr := Open(r.dir, Options{Dim: r.dim})
	if oerr != nil {
		return oerr
	}
	r.ix = ix
	return err
}

func (r *reopener) read() (*Index, func()) {
	r.mu.RLock()
	return r.ix, r.mu.RUnlock
}

func (r *reopener) Upsert(ctx context.Context, docs []recall.Doc, vecs [][]float32) error {
	return r.write(func(ix *Index) error { return ix.Upsert(ctx, docs, vecs) })
}

func (r *reopener) Delete(ctx context.Context, ids []string) error {
	return r.write(func(ix *Index) error { return ix.Delete(ctx, ids) })
}

func (r *reopener) SetMeta(ctx context.Context, k, v string) error {
	return r.write(func(ix *Index) error { return ix.SetMeta(ctx, k, v) })
}

func (r *reopener) Reset(ctx context.Context) error {
	return r.write(func(ix *Index) error { return ix.Reset(ctx) })
}

func (r *reopener) Lexical(ctx context.Context, q string, k int, f recall.Filter) ([]recall.Scored, error) {
	ix, done := r.read()
	defer done()
	return ix.Lexical(ctx, q, k, f)
}

func (r *reopener) Vector(ctx context.Context, v []float32, k int, f recall.Filter) ([]recall.Scored, error) {
	ix, done := r.read()
	defer done()
	return ix.Vector(ctx, v, k, f)
}

func (r *reopener) Docs(ctx context.Context, ids []string) ([]recall.Doc, error) {
	ix, done := r.read()
	defer done()
	return ix.Docs(ctx, ids)
}

func (r *reopener) Count(ctx context.Context) (int, error) {
	ix, done := r.read()
	defer done()
	return ix.Count(ctx)
}

func (r *reopener) Meta(ctx context.Context, k string) (string, bool, error) {
	ix, done := r.read()
	defer done()
	return ix.Meta(ctx, k)
}

func (r *reopener) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ix.Close()
}

// TestConformanceReopened runs the suite against an index that is closed
// and reopened from its file after every write.
func TestConformanceReopened(t *testing.T) {
	recalltest.RunIndexConformance(t, func(t *testing.T, dim int) recall.Index {
		dir := t.TempDir()
		return &reopener{t: t, dir: dir, dim: dim, ix: openT(t, dir, dim)}
	})
}

func TestClosed(t *testing.T) {
	ix := openT(t, t.TempDir(), 4)
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	ctx := context.Background()
	checks := map[string]error{
		"Upsert":  ix.Upsert(ctx, []recall.Doc{{ID: "a"}}, nil),
		"Delete":  ix.Delete(ctx, []string{"a"}),
		"SetMeta": ix.SetMeta(ctx, "k", "v"),
		"Reset":   ix.Reset(ctx),
		"Flush":   ix.Flush(),
	}
	_, checks["Lexical"] = ix.Lexical(ctx, "a", 1, recall.Filter{})
	_, checks["Vector"] = ix.Vector(ctx, []float32{1, 0, 0, 0}, 1, recall.Filter{})
	_, checks["Docs"] = ix.Docs(ctx, []string{"a"})
	_, checks["Vectors"] = ix.Vectors(ctx, []string{"a"})
	_, checks["Count"] = ix.Count(ctx)
	_, _, checks["Meta"] = ix.Meta(ctx, "k")
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenDimensionMismatch(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, 8)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{Dim: 16})
	if !errors.Is(err, recall.ErrDimension) || IsCorrupt(err) {
		t.Errorf("Open with another dimension: %v, want ErrDimension and not corrupt", err)
	}
	for _, dim := range []int{-1, maxDim + 1} {
		if _, err := Open(t.TempDir(), Options{Dim: dim}); err == nil {
			t.Errorf("Open(Dim: %d) succeeded, want an error", dim)
		}
	}
}

func TestUpsertRejects(t *testing.T) {
	ix := openT(t, t.TempDir(), 2)
	defer ix.Close()
	ctx := context.Background()
	nan := float32(math.NaN())
	tests := []struct {
		name string
		doc  recall.Doc
		vec  []float32
	}{
		{"NaN vector", recall.Doc{ID: "a"}, []float32{nan, 1}},
		{"infinite vector", recall.Doc{ID: "a"}, []float32{float32(math.Inf(1)), 1}},
		{"NaN salience", recall.Doc{ID: "a", Salience: nan}, nil},
		{"huge text", recall.Doc{ID: "a", Text: strings.Repeat("x", MaxTextBytes+1)}, nil},
		{"huge id", recall.Doc{ID: strings.Repeat("x", maxFieldBytes+1)}, nil},
	}
	for _, tt := range tests {
		var vecs [][]float32
		if tt.vec != nil {
			vecs = [][]float32{tt.vec}
		}
		if err := ix.Upsert(ctx, []recall.Doc{tt.doc}, vecs); err == nil {
			t.Errorf("%s: Upsert succeeded, want an error", tt.name)
		}
	}
	if n, _ := ix.Count(ctx); n != 0 {
		t.Errorf("Count = %d after rejected upserts, want 0", n)
	}
	// A rejected doc in a batch rejects the whole batch.
	err := ix.Upsert(ctx, []recall.Doc{{ID: "ok"}, {ID: "bad", Salience: nan}}, nil)
	if n, _ := ix.Count(ctx); err == nil || n != 0 {
		t.Errorf("batch with a bad doc: err %v, Count %d; want an error and 0", err, n)
	}
}

func TestVectors(t *testing.T) {
	ix := openT(t, t.TempDir(), 3)
	defer ix.Close()
	ctx := context.Background()
	if err := ix.Upsert(ctx, []recall.Doc{{ID: "v"}, {ID: "z"}}, [][]float32{{3, 0, 4}, {0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert(ctx, []recall.Doc{{ID: "lex"}}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := ix.Vectors(ctx, []string{"v", "lex", "missing", "z"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.6, 0, 0.8}, nil, nil, {0, 0, 0}}
	approx := cmp.Comparer(func(a, b float32) bool { return math.Abs(float64(a-b)) < 0.005 })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Vectors mismatch (-want +got):\n%s", diff)
	}
	var _ recall.VectorStore = ix
}

// TestParallelLexical checks that splitting BM25 scoring across
// goroutines ranks exactly like one goroutine.
func TestParallelLexical(t *testing.T) {
	ix := openT(t, t.TempDir(), 0)
	defer ix.Close()
	ctx := context.Background()
	syn := recalltest.NewSynth(3)
	var docs []recall.Doc
	for range 12000 {
		docs = append(docs, syn.Next())
	}
	if err := ix.Upsert(ctx, docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(ctx, []string{docs[5].ID, docs[500].ID}); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Postings < parallelPostings {
		t.Fatalf("only %d postings: the parallel path would not run", st.Postings)
	}
	for i := range 20 {
		q := syn.Query()
		f := recall.Filter{}
		if i%2 == 1 {
			f.Kinds = []string{recall.KindTurn}
		}
		ix.procs = 1
		one, err := ix.Lexical(ctx, q, 50, f)
		if err != nil {
			t.Fatal(err)
		}
		ix.procs = 4
		many, err := ix.Lexical(ctx, q, 50, f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(one, many); diff != "" {
			t.Errorf("Lexical(%q): parallel differs (-one +many):\n%s", q, diff)
		}
	}
}

// TestIDHashCollision forces two ids onto one hash to exercise the
// overflow map.
func TestIDHashCollision(t *testing.T) {
	st, log := newMemState(0)
	put := func(id, text string) {
		p := prepared{rec: record{typ: recUpsert, id: id, text: text}}
		p.tokenize()
		log.put(t, st, &p)
	}
	put("a", "alpha")
	sa, _ := st.lookup("a")
	// Pretend "b" hashes like "a".
	st.ids.byHash[maphash.String(st.ids.seed, "b")] = sa
	put("b", "beta")
	sb, ok := st.lookup("b")
	if !ok || sb == sa || st.ids.over["b"] != sb {
		t.Fatalf("lookup(b) = %d, %v; over = %v; want b in the overflow map", sb, ok, st.ids.over)
	}
	put("b", "beta replaced")
	s, _ := st.lookup("b")
	if d, err := st.doc(s); err != nil || d.Text != "beta replaced" || st.live != 2 {
		t.Errorf("after replacing b: doc %+v, %v, live %d", d, err, st.live)
	}
	if _, err := st.remove("b"); err != nil || st.live != 1 {
		t.Fatalf("remove(b): %v, live %d", err, st.live)
	}
	if _, ok := st.lookup("b"); ok {
		t.Error("b still found after remove")
	}
	if s, ok := st.lookup("a"); !ok || s != sa {
		t.Errorf("lookup(a) = %d, %v after removing b; want %d", s, ok, sa)
	}
}
