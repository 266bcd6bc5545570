package recall

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
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
	vfilters []Filter // what Vector was asked
}

func (f *fixedIndex) Upsert(context.Context, []Doc, [][]float32) error { return nil }
func (f *fixedIndex) Delete(context.Context, []string) error           { return nil }
func (f *fixedIndex) Lexical(_ context.Context, _ string, k int, fl Filter) ([]Scored, error) {
	f.mu.Lock()
	f.filters = append(f.filters, fl)
	f.mu.Unlock()
	return f.lex[:min(k, len(f.lex))], f.lexErr
}
func (f *fixedIndex) Vector(_ context.Context, _ []float32, k int, fl Filter) ([]Scored, error) {
	f.mu.Lock()
	f.vfilters = append(f.vfilters, fl)
	f.mu.Unlock()
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

func TestAbout(t *testing.T) {
	utc := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }
	day := func(y int, m time.Month, d int) Window { return Window{utc(y, m, d, 0), utc(y, m, d+1, 0)} }
	may15 := day(2024, 5, 15)
	year2024 := Window{utc(2024, 1, 1, 0), utc(2025, 1, 1, 0)}
	tests := []struct {
		name string
		doc  Doc
		w    Window
		want bool
	}{
		{"said in the window", Doc{Text: "I had coffee", TS: utc(2024, 5, 15, 9)}, may15, true},
		{"said at its start", Doc{Text: "I had coffee", TS: may15.Since}, may15, true},
		{"said at its end: half-open", Doc{Text: "I had coffee", TS: may15.Until}, may15, false},
		{"said the day after, naming no date", Doc{Text: "I had coffee", TS: utc(2024, 5, 16, 12)}, may15, false},
		{"yesterday, said the day after", Doc{Text: "yesterday I had coffee", TS: utc(2024, 5, 16, 12)}, may15, true},
		{"yesterday, said two days after", Doc{Text: "yesterday I had coffee", TS: utc(2024, 5, 17, 12)}, may15, false},
		// Relative dates are read from when the doc was said, not from now.
		{"yesterday, said long before", Doc{Text: "yesterday I had coffee", TS: utc(2024, 1, 1, 12)}, may15, false},
		{"one of several mentions", Doc{Text: "on Monday, and yesterday, I had coffee", TS: utc(2024, 5, 16, 12)}, may15, true},
		{"a date before it", Doc{Text: "2024-05-14 was coffee day", TS: utc(2024, 6, 1, 12)}, may15, false},
		{"an absolute date in it", Doc{Text: "2024-05-15 was coffee day", TS: utc(2024, 6, 1, 12)}, may15, true},
		{"last month, said the month after", Doc{Text: "last month was busy", TS: utc(2024, 6, 3, 12)}, may15, true},
		// Mentions longer than max(62 days, the window's span) are too vague.
		{"a year is not about a day", Doc{Text: "in 2024 I moved house", TS: utc(2024, 5, 16, 12)}, may15, false},
		{"a year is about the year", Doc{Text: "in 2024 I moved house", TS: utc(2025, 1, 10, 12)}, year2024, true},
		{"a year is not about a month", Doc{Text: "in 2024 I moved house", TS: utc(2025, 1, 10, 12)},
			Window{utc(2024, 5, 1, 0), utc(2024, 6, 1, 0)}, false},
		{"62 days is not too long", Doc{Text: "in the last two months", TS: utc(2024, 5, 16, 12)}, day(2024, 4, 1), true},
		{"91 days is too long", Doc{Text: "in the last three months", TS: utc(2024, 5, 16, 12)}, day(2024, 4, 1), false},
		{"a season is too long for a day in it", Doc{Text: "last summer we sailed", TS: utc(2024, 5, 16, 12)}, day(2023, 7, 4), false},
		{"a season is about a span as long", Doc{Text: "last summer we sailed", TS: utc(2024, 5, 16, 12)},
			Window{utc(2023, 7, 1, 0), utc(2023, 10, 1, 0)}, true},
		{"a season is not about a span it misses", Doc{Text: "last summer we sailed", TS: utc(2024, 5, 16, 12)},
			Window{utc(2023, 9, 1, 0), utc(2023, 12, 1, 0)}, false},
		{"no text, said elsewhere", Doc{TS: utc(2024, 5, 16, 12)}, may15, false},
	}
	for _, tt := range tests {
		if got := About(tt.doc, tt.w); got != tt.want {
			t.Errorf("%s: About(%q said %v, [%v, %v)) = %v, want %v", tt.name, tt.doc.Text, tt.doc.TS,
				tt.w.Since, tt.w.Until, got, tt.want)
		}
	}
}

// TestDatedQueryMentions checks that a dated query's window rankings count
// the documents about the window, including ones said after it that name
// it, and only those.
func TestDatedQueryMentions(t *testing.T) {
	// Thursday 16 May 2024; "yesterday" is the 15th.
	at := time.Date(2024, 5, 16, 18, 0, 0, 0, time.UTC)
	said := time.Date(2024, 5, 16, 10, 0, 0, 0, time.UTC) // the day after the window
	opts := fusionOnly(1, 1, 10)
	opts.DateWeight = 0.3
	rrf := func(rank int) float64 { return 11 / (10 + float64(rank)) }
	tests := []struct {
		name       string
		query      string
		docs       []Doc
		lex, vec   []string
		want       []string
		wantScore  map[string]float64
		wantWindow map[string]bool
	}{
		{
			name:  "undated: a tie, broken by id",
			query: "what about coffee",
			docs: []Doc{
				{ID: "a", Text: "I had coffee", TS: said},
				{ID: "b", Text: "yesterday I had coffee", TS: said},
			},
			lex: []string{"a"}, vec: []string{"b"},
			want:       []string{"a", "b"},
			wantScore:  map[string]float64{"a": 1, "b": 1},
			wantWindow: map[string]bool{"a": false, "b": false},
		},
		{
			name:  "said after the window, naming it: in the window",
			query: "what about coffee yesterday",
			docs: []Doc{
				{ID: "a", Text: "I had coffee", TS: said},
				{ID: "b", Text: "yesterday I had coffee", TS: said},
			},
			lex: []string{"a"}, vec: []string{"b"},
			want: []string{"b", "a"},
			// b: vector rank 1 twice (all and window) plus the date boost;
			// a: lexical rank 1 once, the window ranking skipping it.
			wantScore:  map[string]float64{"a": 1, "b": 2 + 0.3},
			wantWindow: map[string]bool{"a": false, "b": true},
		},
		{
			name:  "in the widened range but not about the window: no window contribution",
			query: "what about coffee yesterday",
			docs: []Doc{
				{ID: "c", Text: "coffee again", TS: time.Date(2024, 5, 20, 9, 0, 0, 0, time.UTC)},
				{ID: "d", Text: "yesterday: coffee", TS: said},
			},
			lex: []string{"c", "d"},
			// d is first of the documents about the window in its ranking.
			want:       []string{"d", "c"},
			wantScore:  map[string]float64{"c": rrf(1), "d": rrf(2) + rrf(1) + 0.3},
			wantWindow: map[string]bool{"c": false, "d": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{lex: ranked(tt.lex...), vec: ranked(tt.vec...), docs: map[string]Doc{}}
			for _, d := range tt.docs {
				ix.docs[d.ID] = d
			}
			s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: opts}
			hits, err := s.Search(context.Background(), Query{Text: tt.query, At: at})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
			for _, h := range hits {
				if math.Abs(h.Score-tt.wantScore[h.Doc.ID]) > 1e-9 || h.InWindow != tt.wantWindow[h.Doc.ID] {
					t.Errorf("%s: Score, InWindow = %v, %v; want %v, %v", h.Doc.ID, h.Score, h.InWindow,
						tt.wantScore[h.Doc.ID], tt.wantWindow[h.Doc.ID])
				}
			}
		})
	}
	t.Run("both window rankings use the widened filter", func(t *testing.T) {
		ix := &fixedIndex{lex: ranked("a"), vec: ranked("a"), docs: docsFor("a")}
		s := &Searcher{Index: ix, Embedder: constEmbedder{}, Opts: opts}
		f := Filter{Session: "s", Roles: []string{"user"}}
		if _, err := s.Search(context.Background(), Query{Text: "coffee yesterday", At: at, Filter: f}); err != nil {
			t.Fatal(err)
		}
		near := f
		near.Since = time.Date(2024, 5, 15, 0, 0, 0, 0, time.UTC)
		near.Until = time.Date(2024, 5, 16, 0, 0, 0, 0, time.UTC).Add(MentionLag)
		byStart := func(a, b Filter) int { return a.Since.Compare(b.Since) }
		slices.SortFunc(ix.filters, byStart)
		slices.SortFunc(ix.vfilters, byStart)
		if diff := cmp.Diff([]Filter{f, near}, ix.filters); diff != "" {
			t.Errorf("lexical filters mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]Filter{f, near}, ix.vfilters); diff != "" {
			t.Errorf("vector filters mismatch (-want +got):\n%s", diff)
		}
	})
}

// fakeReranker scores each text from a table, or fails.
type fakeReranker struct {
	scores map[string]float32 // by text; missing texts score 0
	err    error
	extra  int // scores added to (or, negative, dropped from) the answer

	mu    sync.Mutex
	calls [][]string // the texts of each call
}

func (r *fakeReranker) Rerank(_ context.Context, _ string, texts []string) ([]float32, error) {
	r.mu.Lock()
	r.calls = append(r.calls, slices.Clone(texts))
	r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	out := make([]float32, 0, len(texts)+max(r.extra, 0))
	for _, t := range texts {
		out = append(out, r.scores[t])
	}
	if r.extra > 0 {
		out = append(out, make([]float32, r.extra)...)
	}
	return out[:max(len(out)+min(r.extra, 0), 0)], nil
}

func TestRerank(t *testing.T) {
	rrf := func(rank int) float64 { return 11 / (10 + float64(rank)) }
	lifts := map[string]float32{"a": 0.1, "b": 0.5, "c": 0.9}
	base := fusionOnly(1, 0, 10)
	base.RerankWeight = 2
	with := func(f func(*SearchOptions)) SearchOptions {
		o := base
		f(&o)
		return o
	}
	tests := []struct {
		name      string
		opts      SearchOptions
		rr        *fakeReranker
		k         int
		want      []string
		wantScore map[string]float64 // nil: the same hits as without a reranker
		wantCalls [][]string
	}{
		{
			name: "lifts the doc it scores highest",
			opts: base, rr: &fakeReranker{scores: lifts},
			want: []string{"c", "b", "a"},
			wantScore: map[string]float64{
				"a": rrf(1) + 2*rrf(3),
				"b": rrf(2) + 2*rrf(2),
				"c": rrf(3) + 2*rrf(1),
			},
			wantCalls: [][]string{{"a", "b", "c"}},
		},
		{
			name: "small weight: a tie-breaker",
			opts: with(func(o *SearchOptions) { o.RerankWeight = 0.01 }), rr: &fakeReranker{scores: lifts},
			want: []string{"a", "b", "c"},
			wantScore: map[string]float64{
				"a": rrf(1) + 0.01*rrf(3),
				"b": rrf(2) + 0.01*rrf(2),
				"c": rrf(3) + 0.01*rrf(1),
			},
			wantCalls: [][]string{{"a", "b", "c"}},
		},
		{
			// Fused order c, b, a (by the vector side); the best two go.
			name: "only the best RerankDepth by fused score",
			opts: with(func(o *SearchOptions) {
				o.LexicalWeight, o.VectorWeight, o.RerankDepth = 0.1, 1, 2
			}),
			rr: &fakeReranker{scores: map[string]float32{"a": 1, "b": 0.9, "c": 0.1}}, k: 1,
			want:      []string{"b"},
			wantScore: map[string]float64{"b": 0.1*rrf(2) + rrf(2) + 2*rrf(1)},
			wantCalls: [][]string{{"c", "b"}},
		},
		{
			name: "an error is ignored", opts: base, rr: &fakeReranker{scores: lifts, err: errors.New("reranker down")},
			want: []string{"a", "b", "c"}, wantCalls: [][]string{{"a", "b", "c"}},
		},
		{
			name: "too few scores are ignored", opts: base, rr: &fakeReranker{scores: lifts, extra: -1},
			want: []string{"a", "b", "c"}, wantCalls: [][]string{{"a", "b", "c"}},
		},
		{
			name: "too many scores are ignored", opts: base, rr: &fakeReranker{scores: lifts, extra: 1},
			want: []string{"a", "b", "c"}, wantCalls: [][]string{{"a", "b", "c"}},
		},
		{
			name: "weight 0 disables it", opts: with(func(o *SearchOptions) { o.RerankWeight = 0 }),
			rr: &fakeReranker{scores: lifts}, want: []string{"a", "b", "c"},
		},
		{
			name: "lexical mode never calls it", opts: with(func(o *SearchOptions) { o.Mode = ModeLexical }),
			rr: &fakeReranker{scores: lifts}, want: []string{"a", "b", "c"},
		},
		{
			name: "vector mode never calls it", opts: with(func(o *SearchOptions) { o.Mode = ModeVector; o.VectorWeight = 1 }),
			rr: &fakeReranker{scores: lifts}, want: []string{"c", "b", "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := func() *fixedIndex {
				return &fixedIndex{lex: ranked("a", "b", "c"), vec: ranked("c", "b", "a"), docs: docsFor("a", "b", "c")}
			}
			q := Query{Text: "q", K: tt.k}
			var logs bytes.Buffer
			s := &Searcher{Index: ix(), Embedder: constEmbedder{}, Reranker: tt.rr, Opts: tt.opts,
				Log: slog.New(slog.NewTextHandler(&logs, nil))}
			hits, err := s.Search(context.Background(), q)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, tt.rr.calls); diff != "" {
				t.Errorf("reranker calls mismatch (-want +got):\n%s", diff)
			}
			if tt.wantScore == nil {
				// Exactly what a searcher without a reranker returns.
				plain := &Searcher{Index: ix(), Embedder: constEmbedder{}, Opts: tt.opts}
				want, err := plain.Search(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, hits); diff != "" {
					t.Errorf("hits differ from no reranker (-want +got):\n%s", diff)
				}
				if len(tt.wantCalls) > 0 && !strings.Contains(logs.String(), "reranking failed") {
					t.Errorf("ignored reranker failure not logged; log:\n%s", logs.String())
				}
				return
			}
			for _, h := range hits {
				if math.Abs(h.Score-tt.wantScore[h.Doc.ID]) > 1e-9 {
					t.Errorf("score of %s = %v, want %v", h.Doc.ID, h.Score, tt.wantScore[h.Doc.ID])
				}
				if want := float64(tt.rr.scores[h.Doc.ID]); h.Rerank != want {
					t.Errorf("Rerank of %s = %v, want %v", h.Doc.ID, h.Rerank, want)
				}
			}
		})
	}
}

func TestSpeaker(t *testing.T) {
	rrf := func(rank int) float64 { return 11 / (10 + float64(rank)) }
	tests := []struct {
		name    string
		role    string // of b, second lexically; a's is "Bob"
		query   string
		weight  float64
		want    []string
		speaker bool // b's Speaker
	}{
		{"named", "Caroline", "What did Caroline paint?", 0.2, []string{"b", "a"}, true},
		{"named in any case", "caroline", "WHAT DID CAROLINE PAINT", 0.2, []string{"b", "a"}, true},
		{"named possessively", "Caroline", "What did Caroline's sister paint?", 0.2, []string{"b", "a"}, true},
		{"every token named", "Mary Ann", "What did Mary Ann paint?", 0.2, []string{"b", "a"}, true},
		{"every token named, in any order", "Mary Ann", "Did Ann or Mary paint?", 0.2, []string{"b", "a"}, true},
		{"partly named", "Mary Ann", "What did Mary paint?", 0.2, []string{"a", "b"}, false},
		{"someone else named", "Caroline", "What did Melanie paint?", 0.2, []string{"a", "b"}, false},
		{"a name inside a word is not named", "Ann", "What did Annabel paint?", 0.2, []string{"a", "b"}, false},
		{"no role", "", "What did paint?", 0.2, []string{"a", "b"}, false},
		{"a role of stopwords only", "I", "What did I paint?", 0.2, []string{"a", "b"}, false},
		// Off: reported, but no boost.
		{"weight 0", "Caroline", "What did Caroline paint?", 0, []string{"a", "b"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{lex: ranked("a", "b"), docs: map[string]Doc{
				"a": {ID: "a", Role: "Bob", TS: t0},
				"b": {ID: "b", Role: tt.role, TS: t0},
			}}
			o := fusionOnly(1, 0, 10)
			o.SpeakerWeight = tt.weight
			s := &Searcher{Index: ix, Opts: o}
			hits, err := s.Search(context.Background(), Query{Text: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Fatalf("order mismatch (-want +got):\n%s", diff)
			}
			for _, h := range hits {
				want, score := false, rrf(1)
				if h.Doc.ID == "b" {
					want, score = tt.speaker, rrf(2)
				}
				if want {
					score += tt.weight
				}
				if h.Speaker != want || math.Abs(h.Score-score) > 1e-9 {
					t.Errorf("%s (role %q): Speaker, Score = %v, %v; want %v, %v", h.Doc.ID, h.Doc.Role, h.Speaker, h.Score, want, score)
				}
			}
		})
	}
	t.Run("off by default", func(t *testing.T) {
		if w := DefaultSearchOptions().SpeakerWeight; w != 0 {
			t.Fatalf("DefaultSearchOptions().SpeakerWeight = %v, want 0", w)
		}
		score := func(role string) float64 {
			ix := &fixedIndex{lex: ranked("a"), docs: map[string]Doc{"a": {ID: "a", Role: role, TS: t0}}}
			o := DefaultSearchOptions()
			o.Now = func() time.Time { return t0 }
			hits, err := (&Searcher{Index: ix, Opts: o}).Search(context.Background(), Query{Text: "What did Caroline paint?"})
			if err != nil || len(hits) != 1 {
				t.Fatalf("Search = %v, %v", hits, err)
			}
			return hits[0].Score
		}
		if named, other := score("Caroline"), score("Melanie"); named != other {
			t.Errorf("with the defaults, a named speaker scores %v, another %v; want equal", named, other)
		}
	})
}

func TestAsksWhen(t *testing.T) {
	tests := []struct {
		q    string
		want bool
	}{
		{"When did Caroline go to the support group?", true},
		{"when is my dentist appointment", true},
		{"What date was the concert?", true},
		{"At what time did you wake up?", true},
		{"Which day did we meet?", true},
		{"How long ago did I move?", true},
		{"In what year did she graduate?", true},
		{"What did Caroline paint?", false},
		{"Tell me about the time we met", false},
		{"whenever you like", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := AsksWhen(tt.q); got != tt.want {
			t.Errorf("AsksWhen(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

// TestTimeWeight: a question asking when prefers, among equals, the turn
// that names a time other than the day it was said.
func TestTimeWeight(t *testing.T) {
	said := time.Date(2024, 5, 16, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		query  string
		b      string // b's text; a's names no time
		weight float64
		want   []string
		timed  bool
	}{
		{"when, b names yesterday", "When did I go bowling?", "yesterday I went bowling", 0.2, []string{"b", "a"}, true},
		{"when, b names a month", "When did I go bowling?", "I went bowling last May", 0.2, []string{"b", "a"}, true},
		{"when, b names only its own day", "When did I go bowling?", "today I went bowling", 0.2, []string{"a", "b"}, false},
		{"not asking when", "Did I go bowling?", "yesterday I went bowling", 0.2, []string{"a", "b"}, false},
		{"weight 0", "When did I go bowling?", "yesterday I went bowling", 0, []string{"a", "b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &fixedIndex{lex: ranked("a", "b"), docs: map[string]Doc{
				"a": {ID: "a", Text: "I went bowling", TS: said},
				"b": {ID: "b", Text: tt.b, TS: said},
			}}
			o := fusionOnly(1, 0, 10)
			o.TimeWeight = tt.weight
			s := &Searcher{Index: ix, Opts: o}
			hits, err := s.Search(context.Background(), Query{Text: tt.query, At: said})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, hitIDs(hits)); diff != "" {
				t.Fatalf("order mismatch (-want +got):\n%s", diff)
			}
			for _, h := range hits {
				if h.Doc.ID == "b" && h.Timed != tt.timed {
					t.Errorf("b.Timed = %v, want %v", h.Timed, tt.timed)
				}
			}
		})
	}
}

// TestQueryVector: a query carrying its embedding is not embedded again,
// and its vector is what the vector ranking gets.
func TestQueryVector(t *testing.T) {
	ix := &fixedIndex{lex: ranked("a"), vec: ranked("b"), docs: map[string]Doc{"a": {ID: "a", TS: t0}, "b": {ID: "b", TS: t0}}}
	s := &Searcher{Index: ix, Embedder: constEmbedder{err: errors.New("must not be called")}, Opts: fusionOnly(1, 1, 10)}
	hits, err := s.Search(context.Background(), Query{Text: "q", Vector: []float32{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, hitIDs(hits)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// All zeros: no vector signal, lexical only.
	hits, err = s.Search(context.Background(), Query{Text: "q", Vector: []float32{0, 0}})
	if err != nil || len(hits) != 1 || hits[0].Doc.ID != "a" {
		t.Errorf("zero vector: hits %v, err %v; want a alone", hitIDs(hits), err)
	}
}
