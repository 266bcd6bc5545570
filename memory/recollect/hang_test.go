package recollect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
)

// faultyIndex is an index whose searches hang until their caller gives
// up (hang) or fail at once.
type faultyIndex struct {
	recall.Index
	hang bool
}

func (f faultyIndex) Lexical(ctx context.Context, _ string, _ int, _ recall.Filter) ([]recall.Scored, error) {
	if f.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("qdrant: connection refused")
}

// TestSearchIndexFaultFallsBack: a search whose index hangs (Qdrant
// stalled) or fails (Qdrant stopped) is answered by keywords over the
// journal before the caller's deadline, and counted as such.
func TestSearchIndexFaultFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang bool
	}{{"hangs", true}, {"fails", false}} {
		t.Run(tc.name, func(t *testing.T) {
			j, recs := openJournal(t, journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"})
			m := New(Options{Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)})
			m.rs = newSystem(faultyIndex{Index: openIndex(t, docsOf(recs)...), hang: tc.hang}, nil, "qdrant", m.o)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			hits, err := m.Search(ctx, memory.SearchRequest{Query: "tomatoes", K: 5})
			if err != nil || len(hits) != 1 || hits[0].ID != recs[0].ID {
				t.Fatalf("search with the index faulty = %+v, %v; want the record by keywords", hits, err)
			}
			if ctx.Err() != nil {
				t.Error("the search answered only once its deadline had passed")
			}
			if s := m.Health().Searches; s != (memory.SearchCounts{Keyword: 1}) {
				t.Errorf("searches = %+v, want one by keywords", s)
			}
		})
	}
}
