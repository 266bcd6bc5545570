package recall_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
)

// hungEmbedder never answers: it waits for its caller to give up.
type hungEmbedder struct{}

func (hungEmbedder) Name() string { return "hung" }
func (hungEmbedder) Dim() int     { return dim }
func (hungEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestSearchHungEmbedder: a hybrid search whose embedder hangs answers
// with its lexical results before the caller's deadline, instead of
// failing with it.
func TestSearchHungEmbedder(t *testing.T) {
	ix := index(t, nil, []recall.Doc{
		turn("pets", "we adopted a puppy called Biscuit", time.Hour),
		turn("food", "dinner was pasta with pesto", time.Hour),
	})
	s := &recall.Searcher{Index: ix, Embedder: hungEmbedder{}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	hits, err := s.Search(ctx, recall.Query{Text: "what is the puppy called?", At: now})
	if err != nil {
		t.Fatalf("search with a hung embedder: %v, want the lexical results", err)
	}
	if !slices.Equal(ids(hits), []string{"pets"}) {
		t.Errorf("hits = %v, want [pets]", ids(hits))
	}
	if ctx.Err() != nil {
		t.Error("the search answered only once its deadline had passed")
	}
}
