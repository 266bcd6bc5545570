package indexer

import (
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/qdrant"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
)

// forgetBackends are the indexes forgetting must work on: the embedded
// one and Qdrant (its protocol-faithful stand-in).
func forgetBackends(t *testing.T) map[string]func(t *testing.T) recall.Index {
	return map[string]func(t *testing.T) recall.Index{
		"embedded": func(t *testing.T) recall.Index {
			ix, err := embedded.Open(t.TempDir(), embedded.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ix.Close() })
			return ix
		},
		"qdrant": func(t *testing.T) recall.Index {
			srv, err := qdranttest.Start(qdranttest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			ix, err := qdrant.Open(t.Context(), qdrant.Options{Addr: srv.Addr(), SkipCompatibilityCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ix.Close() })
			return ix
		},
	}
}

// found is what a lexical search for word finds: the ids and whether any
// document's text or context still holds the word.
func found(t *testing.T, ix recall.Index, word string) []string {
	t.Helper()
	res, err := ix.Lexical(t.Context(), word, 50, recall.Filter{})
	if err != nil {
		t.Fatalf("Lexical: %v", err)
	}
	var ids []string
	for _, r := range res {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// Forgetting a record drops every document it made (a long one's chunks
// too) and the retrieval context it gave the turns after it, on both
// backends; a tombstone the indexer meets in the journal does the same
// when Forget was never called (recall was down, hearth crashed).
func TestForget(t *testing.T) {
	for name, open := range forgetBackends(t) {
		for _, told := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/told", false: "/tombstone"}[told], func(t *testing.T) {
				ctx := t.Context()
				j, err := journal.Open(t.TempDir(), journal.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { j.Close() })
				long := strings.Repeat("the zanzibar code opens the shed. ", 300) // several chunks
				var recs []journal.Record
				for _, r := range []journal.Record{
					{Role: "user", Text: "we planted tomatoes"},
					{Role: "user", Text: long},
					{Role: "user", Text: "what opens the shed?"},
					{Role: "agent", Text: "the code does"},
					{Role: "user", Text: "zanzibar is also an island"},
				} {
					r.Mode = "text"
					stored, err := j.Append(ctx, r)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, stored)
				}
				ix := open(t)
				in := New(Options{Journal: j, Index: ix, Session: "main"})
				if err := in.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				if got := found(t, ix, "zanzibar"); len(got) < 4 {
					t.Fatalf("before forgetting, zanzibar finds %v: want the chunks and the turns after them", got)
				}

				forget := []string{recs[1].ID, recs[4].ID}
				if _, err := j.Append(ctx, journal.Tombstone(forget, "owner")); err != nil {
					t.Fatal(err)
				}
				if told {
					if err := in.Forget(ctx, forget); err != nil {
						t.Fatalf("Forget: %v", err)
					}
				} else {
					in = New(Options{Journal: j, Index: ix, Session: "main"})
				}
				if err := in.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				if got := found(t, ix, "zanzibar"); len(got) != 0 {
					t.Errorf("after forgetting, zanzibar still finds %v", got)
				}
				docs, err := ix.Docs(ctx, []string{recs[2].ID, recs[3].ID})
				if err != nil || len(docs) != 2 {
					t.Fatalf("the turns after the forgotten one: %v, %v", docs, err)
				}
				for _, d := range docs {
					if strings.Contains(d.Context, "zanzibar") {
						t.Errorf("%s keeps the forgotten turn in its context: %q", d.ID, d.Context)
					}
				}
				if got := found(t, ix, "tomatoes"); !slices.Equal(got, []string{recs[0].ID}) {
					t.Errorf("tomatoes finds %v, want the first turn alone", got)
				}
			})
		}
	}
}
