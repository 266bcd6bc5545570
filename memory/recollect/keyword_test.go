package recollect

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// scanOf visits hits in order.
func scanOf(hits []memory.Hit) func(context.Context, func(memory.Hit) error) error {
	return func(ctx context.Context, fn func(memory.Hit) error) error {
		for _, h := range hits {
			if err := fn(h); err != nil {
				return err
			}
		}
		return nil
	}
}

// hitScores is "id:score" per hit.
func hitScores(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s:%.2f", h.ID, h.Score))
	}
	return out
}

func TestKeywordSearch(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 12, 0, 0, 0, time.UTC) }
	turn := func(id, role, text string, ts time.Time) memory.Hit {
		return memory.Hit{ID: id, Kind: memory.KindTurn, Role: role, Text: text, TS: ts}
	}
	scan := scanOf([]memory.Hit{
		turn("1", "user", "I adopted a cat named Miso", day(1)),
		turn("2", "agent", "Miso the CAT likes tuna.", day(2)),
		turn("3", "user", "The weather is nice", day(3)),
		turn("4", "user", "my cat, my cat, my cat", day(4)),
		turn("5", "user", "miso soup recipe", day(4)),
		turn("6", "user", "category theory", day(5)), // "cat" is a term, not a substring
	})
	for _, tc := range []struct {
		name  string
		query string
		k     int
		want  []string
	}{
		// Both terms beat one; among equals the newer wins; repeats do
		// not count twice.
		{"overlap then recency", "Miso cat", 10, []string{"2:1.00", "1:1.00", "4:0.50", "5:0.50"}},
		{"top k kept", "Miso cat", 2, []string{"2:1.00", "1:1.00"}},
		{"same time: smaller id", "miso cat", 3, []string{"2:1.00", "1:1.00", "4:0.50"}},
		{"case and punctuation", "TUNA!", 5, []string{"2:1.00"}},
		{"no match", "dog", 5, nil},
		{"no terms", "  ,, ", 5, nil},
		{"k zero", "cat", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := keywordSearch(t.Context(), scan, memory.SearchRequest{Query: tc.query, K: tc.k})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, hitScores(hits)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	boom := errors.New("disk gone")
	_, err := keywordSearch(t.Context(), func(context.Context, func(memory.Hit) error) error { return boom }, memory.SearchRequest{Query: "cat", K: 3})
	if !errors.Is(err, boom) {
		t.Errorf("scan error: got %v, want it wrapped", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := keywordSearch(ctx, scan, memory.SearchRequest{Query: "cat", K: 3}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

// TestKeywordSearchFilters checks that the keyword fallback honours the
// same filters as recall: roles, kinds and the time range, Since
// included and Until excluded.
func TestKeywordSearchFilters(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 12, 0, 0, 0, time.UTC) }
	scan := scanOf([]memory.Hit{
		{ID: "u1", Role: "user", Text: "tomatoes in the garden", TS: day(1), Kind: memory.KindTurn, Channel: "chat", Session: "main", Mode: memory.ModeText},
		{ID: "a2", Role: "agent", Text: "tomatoes need sun", TS: day(2), Kind: memory.KindTurn, Channel: "chat", Session: "main", Mode: memory.ModeText},
		{ID: "t3", Role: "tool", Text: "weather: rain for the tomatoes", TS: day(3), Kind: memory.KindTool, Channel: "weather", Session: "main", Mode: memory.ModeText},
		{ID: "u4", Role: "user", Text: "said aloud: tomatoes again", TS: day(4), Kind: memory.KindTurn, Channel: "voice", Session: "main", Mode: memory.ModeVoice},
		{ID: "t5", Role: "tool", Text: "cached: tomatoes cost 3 euros", TS: day(5), Kind: memory.KindTool, Channel: "cache_store", Session: "main", Mode: memory.ModeText},
	})
	for _, tc := range []struct {
		name string
		req  memory.SearchRequest
		want []string // ids, best first (all score 1: newest first)
	}{
		{"no filter", memory.SearchRequest{}, []string{"t5", "u4", "t3", "a2", "u1"}},
		{"role user", memory.SearchRequest{Roles: []string{"user"}}, []string{"u4", "u1"}},
		{"roles user or agent", memory.SearchRequest{Roles: []string{"agent", "user"}}, []string{"u4", "a2", "u1"}},
		{"role tool", memory.SearchRequest{Roles: []string{"tool"}}, []string{"t5", "t3"}},
		{"kind turn", memory.SearchRequest{Kinds: []string{memory.KindTurn}}, []string{"u4", "a2", "u1"}},
		{"kind tool", memory.SearchRequest{Kinds: []string{memory.KindTool}}, []string{"t5", "t3"}},
		{"since includes its instant", memory.SearchRequest{Since: day(3)}, []string{"t5", "u4", "t3"}},
		{"until excludes its instant", memory.SearchRequest{Until: day(3)}, []string{"a2", "u1"}},
		{"range", memory.SearchRequest{Since: day(2), Until: day(4)}, []string{"t3", "a2"}},
		{"all filters", memory.SearchRequest{Roles: []string{"user"}, Kinds: []string{memory.KindTurn}, Since: day(2), Until: day(5)}, []string{"u4"}},
		{"nothing passes", memory.SearchRequest{Roles: []string{"agent"}, Kinds: []string{memory.KindTool}}, nil},
		{"filters before k", memory.SearchRequest{Roles: []string{"user"}, K: 1}, []string{"u4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Query = "tomatoes"
			if req.K == 0 {
				req.K = 10
			}
			hits, err := keywordSearch(t.Context(), scan, req)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.ID)
				if !req.Matches(h.Kind, h.Role, h.TS) {
					t.Errorf("hit %+v does not pass the filters", h)
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Hits carry the records' provenance.
	hits, err := keywordSearch(t.Context(), scan, memory.SearchRequest{Query: "rain", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []memory.Hit{{ID: "t3", Kind: memory.KindTool, Role: "tool", Session: "main", Channel: "weather", Mode: memory.ModeText, Text: "weather: rain for the tomatoes", TS: day(3), Score: 1}}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("provenance (-want +got):\n%s", diff)
	}
}

func TestProvenance(t *testing.T) {
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rec  journal.Record
		want memory.Hit
	}{
		{"typed turn",
			journal.Record{ID: "1", Role: memory.RoleUser, Mode: memory.ModeText, Text: "hi", TS: ts},
			memory.Hit{ID: "1", Kind: memory.KindTurn, Role: memory.RoleUser, Session: "s", Channel: "chat", Mode: memory.ModeText, Text: "hi", TS: ts}},
		{"spoken turn",
			journal.Record{ID: "2", Role: memory.RoleAgent, Mode: memory.ModeVoice, Text: "hello", TS: ts},
			memory.Hit{ID: "2", Kind: memory.KindTurn, Role: memory.RoleAgent, Session: "s", Channel: "voice", Mode: memory.ModeVoice, Text: "hello", TS: ts}},
		{"an older record without a mode is typed",
			journal.Record{ID: "3", Role: memory.RoleUser, Text: "old", TS: ts},
			memory.Hit{ID: "3", Kind: memory.KindTurn, Role: memory.RoleUser, Session: "s", Channel: "chat", Mode: memory.ModeText, Text: "old", TS: ts}},
		{"tool result: the tool is the channel",
			journal.Record{ID: "4", Role: memory.RoleTool, Mode: memory.ModeText, Text: "rain", TS: ts, Tool: &journal.ToolResult{CallID: "c", Name: "weather"}},
			memory.Hit{ID: "4", Kind: memory.KindTool, Role: memory.RoleTool, Session: "s", Channel: "weather", Mode: memory.ModeText, Text: "rain", TS: ts}},
		{"tool record without its outcome",
			journal.Record{ID: "5", Role: memory.RoleTool, Mode: memory.ModeVoice, Text: "?", TS: ts},
			memory.Hit{ID: "5", Kind: memory.KindTool, Role: memory.RoleTool, Session: "s", Channel: "", Mode: memory.ModeVoice, Text: "?", TS: ts}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Provenance(tc.rec, "s")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
