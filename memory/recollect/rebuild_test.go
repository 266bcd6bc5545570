package recollect

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/vault"
)

// TestRebuildIndex: RebuildIndex drops the index (a document the journal
// does not hold goes) and fills it again from the journal in the
// background; meanwhile search uses keywords over the journal and health
// says Rebuilding with its progress; once done, search is recall's again
// and the index holds the journal's turns.
func TestRebuildIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, recs := openJournal(t,
			journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"},
			journal.Record{Role: memory.RoleAgent, Text: "tomatoes like sun"},
		)
		root := t.TempDir()
		writeNote(t, root, "knowledge/people/ana.md", note(vault.NewNoteID(), "active", 0.9, "## Garden\n\nAna grows tomatoes.\n"))
		m := New(Options{Root: root, Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)})
		// A note's section no vault holds (this memory has no root).
		ghost := recall.Doc{ID: "note:ghost#0", Kind: recall.KindKnowledge, Role: memory.StatusActive, Mode: "text", Channel: "knowledge/ghost.md", Text: "tomatoes from nowhere", TS: recs[0].TS}
		gate := make(chan struct{}, 2)
		gate <- struct{}{} // the first catch-up's one batch
		gate <- struct{}{} // the note
		m.opener = func(context.Context) (*system, error) {
			return newSystem(&gatedIndex{Index: openIndex(t), gate: gate}, nil, "embedded", m.o), nil
		}
		if err := m.RebuildIndex(t.Context()); err == nil {
			t.Error("RebuildIndex before recall opened succeeded")
		}
		stop := run(m)
		defer stop()
		synctest.Wait()
		if h := m.Health(); !h.Ready || h.IndexedSinceStart != 2 {
			t.Fatalf("health before = %+v, want ready with 2 documents", h)
		}
		count := func() int {
			t.Helper()
			n, err := m.rs.index.(*gatedIndex).Index.(*embedded.Index).Count(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// The embedder check at start resets an index it does not know:
		// the stray document goes in now.
		if err := m.rs.index.(*gatedIndex).Index.Upsert(t.Context(), []recall.Doc{ghost}, nil); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 4 {
			t.Fatalf("the index holds %d documents before, want the two turns, the note and the stray one", n)
		}

		if err := m.RebuildIndex(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the rebuild waits at the gate
		h := m.Health()
		if !h.Rebuilding || h.Ready || h.Unavailable || h.IndexedSinceStart != 2 {
			t.Errorf("health while rebuilding = %+v, want rebuilding, not ready", h)
		}
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 2 || hits[0].Kind != memory.KindTurn || m.Health().Searches.Keyword != 1 {
			t.Errorf("search while rebuilding = %+v, %v (%+v), want the journal's two turns by keywords", hits, err, m.Health().Searches)
		}
		if err := m.RebuildIndex(t.Context()); err != nil {
			t.Errorf("RebuildIndex while one is under way: %v", err)
		}

		gate <- struct{}{}
		gate <- struct{}{}
		synctest.Wait()
		if h := m.Health(); h.Rebuilding || !h.Ready || h.IndexedSinceStart != 4 {
			t.Errorf("health after = %+v, want ready, 4 documents indexed since start", h)
		}
		hits, err = m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 3 {
			t.Errorf("search after = %+v, %v, want the two turns and the note, not the dropped document", hits, err)
		}
		if n := count(); n != 3 {
			t.Errorf("the index holds %d documents after, want the two turns and the note", n)
		}
	})
}
