package recall

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixedIndex returns canned rankings, so fusion can be checked exactly.
type fixedIndex struct {
	lex, vec []Scored
	docs     map[string]Doc
	lexErr   error
	vecErr   error
	mu       sync.Mutex
	filters  []Filter // what Lexical was asked
}

func (f *fixedIndex) Upsert(context.Context, []Doc, [][]float32) error { return nil }
func (f *fixedIndex) Delete(context.Context, []string) error           { return nil }
func (f *fixedIndex) Lexical(_ context.Context, _ string, k int, fl Filter) ([]Scored, error) {
	f.mu.Lock()
	f.filters = append(f.filters, fl)
	f.mu.Unlock()
	return f.lex[:min(k, len(f.lex))], f.lexErr
}
func (f *fixedIndex) Vector(_ context.Context, _ []float32, k int, _ Filter) ([]Scored, error) {
	return f.vec[:min(k, len(f.vec))], f.vecErr
}
func (f *fixedIndex) Docs(_ context.Context, ids []string) ([]Doc, error) {
	var out []Doc
	for _, id := range ids {
		if d, ok := f.docs[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}
func (f *fixedIndex) Count(context.Context) (int, error)                 { return len(f.docs), nil }
func (f *fixedIndex) Meta(context.Context, string) (string, bool, error) { return "", false, nil }
func (f *fixedIndex) SetMeta(context.Context, string, string) error      { return nil }
func (f *fixedIndex) Reset(context.Context) error                        { return nil }
func (f *fixedIndex) Close() error                                       { return nil }

// constEmbedder embeds everything as the same vector, or fails.
type constEmbedder struct{ err error }

func (constEmbedder) Name() string { return "const" }
func (constEmbedder) Dim() int     { return 2 }
func (e constEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.err != nil {
		return nil, e.err
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

var t0 = time.Date(2024, 5, 16, 12, 0, 0, 0, time.UTC)

func ranked(ids ...string) []Scored {
	out := make([]Scored, len(ids))
	for i, id := range ids {
		out[i] = Scored{ID: id, Score: float32(len(ids) - i)}
	}
	return out
}

func docsFor(ids ...string) map[string]Doc {
	m := map[string]Doc{}
	for _, id := range ids {
		m[id] = Doc{ID: id, Text: id, TS: t0}
	}
	return m
}

func hitIDs(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Doc.ID
	}
	return out
}

// fusionOnly has no recency, salience, date boost or MMR.
func fusionOnly(lw, vw, k float64) SearchOptions {
	return SearchOptions{LexicalWeight: lw, VectorWeight: vw, RRFK: k, Now: func() time.Time { return t0 }}
}

func TestFusion(t *testing.T) {
	tests := []struct {
		name     string
		lex, vec []string
		opts     SearchOptions
		want     []string
	}{
		{"both lists beat one", []string{"a", "b", "c"}, []string{"d", "b"}, fusionOnly(1, 1, 60), []string{"b", "a", "d", "c"}},
		{"lexical weight dominates", []string{"a", "b", "c"}, []string{"c", "b", "a"}, fusionOnly(1, 0.1, 60), []string{"a", "b", "c"}},
		{"vector weight dominates", []string{"a", "b", "c"}, []string{"c", "b", "a"}, fusionOnly(0.1, 1, 60), []string{"c", "b", "a"}},
		// With a small k the top of one list outweighs the middle of both.
		{"small k favours first places", []string{"a", "x", "z", "b"}, []string{"c", "y", "w", "b"}, fusionOnly(1, 1, 1), []string{"a", "c", "b", "x", "y", "w", "z"}},
		{"large k favours agreement", []string{"a", "x", "z", "b"}, []string{"c", "y", "w", "b"}, fusionOnly(1, 1, 60), []string{"b", "a", "c", "x", "y", "w", "z"}},
		{"ties by id", []string{"b"}, []string{"a"}, fusionOnly(1, 1, 60), []string{"a", "b"}},
		{"lexical mode ignores vectors", []string{"a", "b"}, []string{"c"}, func() SearchOptions {
			o := fusionOnly(1, 1, 60)
			o.Mode = ModeLexical
			return o
		}(), []string{"a", "b"}},
		{"vector mode ignores words", []string{"a", "b"}, []string{"c"}, func() SearchOptions {
			o := fusionOnly(1, 1, 60)
			o.Mode = ModeVector
			return o
		}(), []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{lex: ranked(tt.lex...), vec: ranked(tt.vec...), docs: docsFor("a", "b", "c", "d", "w", "x", "y", "z")}
			s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: tt.opts}
			hits, err := s.Search(context.Background(), Query{Text: "q", K: 10})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFusionScores(t *testing.T) {
	ix := &fixedIndex{lex: ranked("a", "b"), vec: ranked("b"), docs: docsFor("a", "b")}
	s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: fusionOnly(1, 0.5, 60)}
	hits, err := s.Search(context.Background(), Query{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"a": 1,                     // lexical rank 1
		"b": 61.0/62 + 0.5*61.0/61, // lexical rank 2, vector rank 1 at half weight
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.Doc.ID]) > 1e-9 {
			t.Errorf("score of %s = %v, want %v", h.Doc.ID, h.Score, want[h.Doc.ID])
		}
	}
}

func TestProvenance(t *testing.T) {
	ix := &fixedIndex{lex: ranked("a", "b"), vec: ranked("b", "c"), docs: docsFor("a", "b", "c")}
	ix.docs["b"] = Doc{ID: "b", Session: "s9", Role: "user", TS: t0.Add(-30 * 24 * time.Hour)}
	opts := DefaultSearchOptions()
	opts.Now = func() time.Time { return t0 }
	s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: opts}
	hits, err := s.Search(context.Background(), Query{Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(hits, func(h Hit) bool { return h.Doc.ID == "b" })
	if i < 0 {
		t.Fatalf("b missing from %v", hitIDs(hits))
	}
	got := hits[i]
	got.Score = 0
	want := Hit{Doc: ix.docs["b"], LexicalRank: 2, Lexical: 1, VectorRank: 1, Vector: 2, Recency: 0.5}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("provenance mismatch (-want +got):\n%s", diff)
	}
}

func TestSearchDegradesWithoutVectors(t *testing.T) {
	boom := errors.New("embedder down")
	tests := []struct {
		name    string
		emb     Embedder
		vecErr  error
		mode    string
		want    []string
		wantErr error
	}{
		{"nil embedder is lexical", nil, nil, "", []string{"a", "b"}, nil},
		{"embedder down", constEmbedder{err: boom}, nil, ModeHybrid, []string{"a", "b"}, nil},
		{"vector index fails", constEmbedder{}, ErrDimension, ModeHybrid, []string{"a", "b"}, nil},
		{"vector mode without embedder", nil, nil, ModeVector, nil, ErrNoEmbedder},
		{"vector mode with embedder down", constEmbedder{err: boom}, nil, ModeVector, nil, boom},
		{"vector mode with index failing", constEmbedder{}, ErrDimension, ModeVector, nil, ErrDimension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{lex: ranked("a", "b"), vec: ranked("c"), vecErr: tt.vecErr, docs: docsFor("a", "b", "c")}
			o := fusionOnly(1, 1, 60)
			o.Mode = tt.mode
			s := &Searcher{Index: ix, Embedder: tt.emb, Opts: o}
			hits, err := s.Search(context.Background(), Query{Text: "q"})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Search error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); err == nil && diff != "" {
				t.Errorf("hits mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("lexical failure fails", func(t *testing.T) {
		ix := &fixedIndex{lexErr: boom, docs: docsFor()}
		s := &Searcher{Index: ix, Embedder: constEmbedder{}}
		if _, err := s.Search(context.Background(), Query{Text: "q"}); !errors.Is(err, boom) {
			t.Errorf("Search error = %v, want %v", err, boom)
		}
	})
	t.Run("unknown mode", func(t *testing.T) {
		s := &Searcher{Index: &fixedIndex{}, Opts: SearchOptions{Mode: "psychic"}}
		if _, err := s.Search(context.Background(), Query{Text: "q"}); err == nil {
			t.Error("Search with an unknown mode succeeded")
		}
	})
}

func TestRecencyAndSalience(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name string
		docs []Doc
		opts SearchOptions
		want []string
	}{
		// Ties otherwise go by id: "a" first.
		{"newer wins a tie", []Doc{{ID: "a", TS: t0.Add(-90 * day)}, {ID: "b", TS: t0.Add(-day)}},
			SearchOptions{LexicalWeight: 1, RecencyWeight: 0.01}, []string{"b", "a"}},
		{"recency off", []Doc{{ID: "a", TS: t0.Add(-90 * day)}, {ID: "b", TS: t0.Add(-day)}},
			SearchOptions{LexicalWeight: 1}, []string{"a", "b"}},
		{"salience wins a tie", []Doc{{ID: "a", TS: t0}, {ID: "b", TS: t0, Salience: 1}},
			SearchOptions{LexicalWeight: 1, SalienceWeight: 0.01}, []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{docs: map[string]Doc{}}
			for _, d := range tt.docs {
				ix.docs[d.ID] = d
			}
			// Both at the same fused score: equal lexical scores, one list
			// each at rank 1.
			ix.lex = []Scored{{ID: tt.docs[0].ID, Score: 1}}
			ix.vec = []Scored{{ID: tt.docs[1].ID, Score: 1}}
			tt.opts.VectorWeight = tt.opts.LexicalWeight
			tt.opts.Now = func() time.Time { return t0 }
			s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: tt.opts}
			hits, err := s.Search(context.Background(), Query{Text: "q"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDateWindowBoost(t *testing.T) {
	// Thursday 16 May 2024; "yesterday" is the 15th.
	at := time.Date(2024, 5, 16, 18, 0, 0, 0, time.UTC)
	ix := &fixedIndex{
		lex: ranked("monday", "wednesday"),
		docs: map[string]Doc{
			"monday":    {ID: "monday", TS: time.Date(2024, 5, 13, 9, 0, 0, 0, time.UTC)},
			"wednesday": {ID: "wednesday", TS: time.Date(2024, 5, 15, 9, 0, 0, 0, time.UTC)},
		},
	}
	s := &Searcher{Index: ix, Opts: SearchOptions{LexicalWeight: 1, DateWeight: 0.3}}
	hits, err := s.Search(context.Background(), Query{Text: "what did I say about coffee yesterday", At: at, Filter: Filter{Session: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"wednesday", "monday"}, hitIDs(hits)); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	if !hits[0].InWindow || hits[1].InWindow {
		t.Errorf("InWindow = %v, %v; want true, false", hits[0].InWindow, hits[1].InWindow)
	}
	// A second lexical ranking ran over the window and MentionLag after it
	// (where documents may still mention it), keeping the filter.
	want := []Filter{{Session: "s"}, {Session: "s", Since: time.Date(2024, 5, 15, 0, 0, 0, 0, time.UTC), Until: time.Date(2024, 5, 16, 0, 0, 0, 0, time.UTC).Add(MentionLag)}}
	slices.SortFunc(ix.filters, func(a, b Filter) int { return a.Since.Compare(b.Since) })
	if diff := cmp.Diff(want, ix.filters); diff != "" {
		t.Errorf("lexical filters mismatch (-want +got):\n%s", diff)
	}
	// A window outside the caller's filter adds no ranking.
	ix.filters = nil
	_, err = s.Search(context.Background(), Query{Text: "coffee yesterday", At: at, Filter: Filter{Until: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)}})
	if err != nil || len(ix.filters) != 1 {
		t.Errorf("Search with a disjoint window: %d lexical calls, err %v; want 1, nil", len(ix.filters), err)
	}
}

func TestMMR(t *testing.T) {
	hit := func(id string, score float64) Hit { return Hit{Doc: Doc{ID: id}, Score: score} }
	hits := []Hit{hit("a", 1), hit("a2", 0.99), hit("a3", 0.98), hit("b", 0.9), hit("c", 0.5)}
	vecs := [][]float32{{1, 0}, {1, 0.01}, {1, 0.02}, {0, 1}, nil}
	tests := []struct {
		lambda float64
		k      int
		want   []string
	}{
		{1, 3, []string{"a", "a2", "a3"}},
		{0.5, 3, []string{"a", "b", "c"}},
		{0.7, 2, []string{"a", "b"}},
		{0.5, 10, []string{"a", "b", "c", "a2", "a3"}},
		{0.5, 0, nil},
	}
	for _, tt := range tests {
		got := hitIDs(MMR(hits, vecs, tt.lambda, tt.k))
		if diff := cmp.Diff(tt.want, got); len(tt.want)+len(got) > 0 && diff != "" {
			t.Errorf("MMR(λ=%v, k=%d) mismatch (-want +got):\n%s", tt.lambda, tt.k, diff)
		}
	}
}

func TestRecency(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		age, half time.Duration
		want      float64
	}{
		{0, 30 * day, 1},
		{-day, 30 * day, 1},
		{30 * day, 30 * day, 0.5},
		{60 * day, 30 * day, 0.25},
		{day, 0, 1},
	}
	for _, tt := range tests {
		if got := Recency(tt.age, tt.half); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Recency(%v, %v) = %v, want %v", tt.age, tt.half, got, tt.want)
		}
	}
}

func TestSearchOptionsDefaults(t *testing.T) {
	got := SearchOptions{}.resolved()
	want := DefaultSearchOptions()
	if got.Now == nil {
		t.Fatal("Now not defaulted")
	}
	got.Now, want.Now = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("zero options mismatch (-want +got):\n%s", diff)
	}
	// Any weight set: the others are used as given.
	got = SearchOptions{LexicalWeight: 2}.resolved()
	if got.VectorWeight != 0 || got.MMRLambda != 0 || got.Candidates != 100 || got.RRFK != want.RRFK {
		t.Errorf("partial options resolved to %+v", got)
	}
}
