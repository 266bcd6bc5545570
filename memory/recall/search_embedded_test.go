package recall_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
)

// These tests run Searcher over the real embedded index and the hash
// embedder.

const dim = 64

func index(t *testing.T, emb recall.Embedder, docs []recall.Doc) *embedded.Index {
	t.Helper()
	ix, err := embedded.Open(t.TempDir(), embedded.Options{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	var vecs [][]float32
	if emb != nil {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Text
		}
		if vecs, err = emb.Embed(context.Background(), texts); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Upsert(context.Background(), docs, vecs); err != nil {
		t.Fatal(err)
	}
	return ix
}

var now = time.Date(2024, 5, 16, 18, 0, 0, 0, time.UTC)

func turn(id, text string, ago time.Duration) recall.Doc {
	return recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Session: "s", Text: text, TS: now.Add(-ago)}
}

func ids(hits []recall.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Doc.ID
	}
	return out
}

func TestSearchLexicalOnly(t *testing.T) {
	ix := index(t, nil, []recall.Doc{
		turn("pets", "we adopted a puppy called Biscuit", time.Hour),
		turn("food", "dinner was pasta with pesto", time.Hour),
	})
	s := &recall.Searcher{Index: ix}
	hits, err := s.Search(context.Background(), recall.Query{Text: "what is the puppy called?", At: now})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(hits), []string{"pets"}) {
		t.Errorf("hits = %v, want [pets]", ids(hits))
	}
	if h := hits[0]; h.LexicalRank != 1 || h.Lexical <= 0 || h.VectorRank != 0 || h.Recency <= 0.99 || h.Doc.Text == "" {
		t.Errorf("provenance = %+v", h)
	}
}

func TestSearchMMRRemovesNearDuplicates(t *testing.T) {
	emb := recalltest.NewHashEmbedder(dim)
	docs := []recall.Doc{
		turn("dup1", "espresso beans roast coffee grinder", time.Hour),
		turn("dup2", "espresso beans roast coffee grinder again", time.Hour),
		turn("dup3", "espresso beans roast coffee grinder once more", time.Hour),
		turn("other", "coffee with oat milk at the cafe downtown", time.Hour),
	}
	for i := range 20 {
		docs = append(docs, turn(fmt.Sprint("filler", i), fmt.Sprintf("unrelated filler about gardening number %d", i), time.Hour))
	}
	ix := index(t, emb, docs)
	search := func(lambda float64) []string {
		o := recall.DefaultSearchOptions()
		o.MMRLambda = lambda
		o.Now = func() time.Time { return now }
		s := &recall.Searcher{Index: ix, Embedder: emb, Opts: o}
		hits, err := s.Search(context.Background(), recall.Query{Text: "espresso coffee beans", K: 3})
		if err != nil {
			t.Fatal(err)
		}
		return ids(hits)
	}
	if got := search(0); slices.Contains(got, "other") {
		t.Fatalf("without MMR: %v; want the three near-duplicates on top (test premise)", got)
	}
	if got := search(0.5); !slices.Contains(got, "other") || got[0] != "dup1" {
		t.Errorf("with MMR: %v; want dup1 first and other among the top 3", got)
	}
}

func TestSearchDatedQuestion(t *testing.T) {
	emb := recalltest.NewHashEmbedder(dim)
	day := 24 * time.Hour
	ix := index(t, emb, []recall.Doc{
		turn("monday", "I said the coffee machine is broken again", 3*day),
		turn("monday2", "coffee coffee coffee all day long", 3*day),
		turn("yesterday", "the plumber finally came to fix the sink", 30*time.Hour),
		turn("today", "nothing much happened", time.Hour),
	})
	s := &recall.Searcher{Index: ix, Embedder: emb}
	hits, err := s.Search(context.Background(), recall.Query{Text: "what did I say yesterday?", K: 2, At: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Doc.ID != "yesterday" || !hits[0].InWindow {
		t.Errorf("hits = %v; want yesterday's turn first, in the window", ids(hits))
	}
}

func TestSearchFilterAndK(t *testing.T) {
	emb := recalltest.NewHashEmbedder(dim)
	var docs []recall.Doc
	for i := range 30 {
		d := turn(fmt.Sprint("d", i), fmt.Sprintf("shared topic sentence %d", i), time.Duration(i)*time.Hour)
		if i%3 == 0 {
			d.Kind, d.Role = recall.KindTool, "tool"
		}
		docs = append(docs, d)
	}
	ix := index(t, emb, docs)
	s := &recall.Searcher{Index: ix, Embedder: emb}
	hits, err := s.Search(context.Background(), recall.Query{Text: "shared topic", Filter: recall.Filter{Kinds: []string{recall.KindTool}}, At: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 10 {
		t.Errorf("got %d hits, want the default K of 10", len(hits))
	}
	for _, h := range hits {
		if h.Doc.Kind != recall.KindTool {
			t.Errorf("hit %s of kind %q passed a tool filter", h.Doc.ID, h.Doc.Kind)
		}
	}
	hits, err = s.Search(context.Background(), recall.Query{Text: "", At: now})
	if err != nil || len(hits) != 0 {
		t.Errorf("empty query: %v, %v; want nothing", ids(hits), err)
	}
}
