package daemon

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/indexer"
)

// filterSpy is a recall index that records the filters of the lexical
// searches it answers.
type filterSpy struct {
	recall.Index
	mu      sync.Mutex
	filters []recall.Filter
}

func (s *filterSpy) Lexical(ctx context.Context, q string, k int, f recall.Filter) ([]recall.Scored, error) {
	s.mu.Lock()
	s.filters = append(s.filters, f)
	s.mu.Unlock()
	return s.Index.Lexical(ctx, q, k, f)
}

// TestRecallSearchFilter checks that a search request's filters reach
// recall as its Filter, unchanged, and that the hits pass them and carry
// their documents' provenance.
func TestRecallSearchFilter(t *testing.T) {
	rs := newTestRecall(t, gardenDocs(3)...)
	spy := &filterSpy{Index: rs.index}
	rs.searcher = &recall.Searcher{Index: spy}
	ts := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC) // gardenDocs' time
	for _, tc := range []struct {
		name    string
		req     tools.SearchRequest
		want    recall.Filter
		wantAny bool // some hits expected
	}{
		{"none", tools.SearchRequest{}, recall.Filter{}, true},
		{"roles", tools.SearchRequest{Roles: []string{"user", "agent"}}, recall.Filter{Roles: []string{"user", "agent"}}, true},
		{"kinds", tools.SearchRequest{Kinds: []string{"tool"}}, recall.Filter{Kinds: []string{"tool"}}, true},
		{"since", tools.SearchRequest{Since: ts}, recall.Filter{Since: ts}, true},
		{"until excludes", tools.SearchRequest{Until: ts}, recall.Filter{Until: ts}, false},
		{"all", tools.SearchRequest{Roles: []string{"tool"}, Kinds: []string{"tool"}, Since: ts.Add(-time.Hour), Until: ts.Add(time.Hour)},
			recall.Filter{Roles: []string{"tool"}, Kinds: []string{"tool"}, Since: ts.Add(-time.Hour), Until: ts.Add(time.Hour)}, true},
		{"role and kind that never meet", tools.SearchRequest{Roles: []string{"user"}, Kinds: []string{"tool"}}, recall.Filter{Roles: []string{"user"}, Kinds: []string{"tool"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spy.mu.Lock()
			spy.filters = nil
			spy.mu.Unlock()
			req := tc.req
			req.Query, req.K = "tomatoes", 20
			hits, err := rs.search(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			spy.mu.Lock()
			got := spy.filters
			spy.mu.Unlock()
			if diff := cmp.Diff([]recall.Filter{tc.want}, got); diff != "" {
				t.Errorf("filters the index got (-want +got):\n%s", diff)
			}
			if (len(hits) > 0) != tc.wantAny {
				t.Errorf("%d hits, want some: %v", len(hits), tc.wantAny)
			}
			for _, h := range hits {
				if !req.Matches(h.Kind, h.Role, h.TS) {
					t.Errorf("hit %s (%s, %s, %s) does not pass the filters", h.ID, h.Kind, h.Role, h.TS)
				}
				if h.Session != conversationID || h.Kind == "" || (h.Kind == recall.KindTool && h.Channel != "weather") {
					t.Errorf("hit %s lacks provenance: %+v", h.ID, h)
				}
			}
		})
	}
}

// searchRecords are journal records of every role, kind and channel, each
// naming tomatoes, a day apart at noon.
func searchRecords() []journal.Record {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	return []journal.Record{
		{Role: ipc.RoleUser, Mode: ipc.ModeText, TS: day(1), Text: "u1: we planted tomatoes in the raised bed"},
		{Role: ipc.RoleAgent, Mode: ipc.ModeText, TS: day(2), Text: "a2: tomatoes like full sun"},
		{Role: ipc.RoleTool, Mode: ipc.ModeText, TS: day(3), Text: "t3: rain tomorrow, good for the tomatoes", Tool: &journal.ToolResult{CallID: "c1", Name: "weather"}},
		{Role: ipc.RoleUser, Mode: ipc.ModeVoice, TS: day(4), Text: "u4: the tomatoes are turning red"},
	}
}

// TestClientSearchFilters runs a client's filtered searches through
// hearth, over recall and over the keyword fallback on the same journal:
// both keep only what passes the filters, with the same provenance, and
// a search for roles ["user"] finds the user's turns alone.
func TestClientSearchFilters(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []recall.Doc
	for _, r := range searchRecords() {
		rec, err := j.Append(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, indexer.Docs(rec, conversationID)...)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }

	backends := map[string]func(t *testing.T, c *Config) tools.SearchFunc{
		"recall": func(t *testing.T, _ *Config) tools.SearchFunc {
			lr := &lateRecall{}
			lr.rs.Store(newTestRecall(t, docs...))
			return lr.search
		},
		"keywords": func(t *testing.T, c *Config) tools.SearchFunc {
			lr := &lateRecall{keyword: journalKeywordSearch(c.Journal.(*journal.Journal))}
			return lr.search
		},
	}
	for _, backend := range []string{"recall", "keywords"} {
		t.Run(backend, func(t *testing.T) {
			th := startHearth(t, dir, func(c *Config) { c.Search = backends[backend](t, c) })
			c := dial(t, th.addr)
			for _, tc := range []struct {
				name string
				req  ipc.Search
				want []string // hits' record names, sorted
			}{
				{"no filter", ipc.Search{}, []string{"a2", "t3", "u1", "u4"}},
				{"roles user: the user's turns only", ipc.Search{Roles: []string{ipc.RoleUser}}, []string{"u1", "u4"}},
				{"roles agent or tool", ipc.Search{Roles: []string{ipc.RoleAgent, ipc.RoleTool}}, []string{"a2", "t3"}},
				{"kinds turn", ipc.Search{Kinds: []string{ipc.KindTurn}}, []string{"a2", "u1", "u4"}},
				{"kinds tool", ipc.Search{Kinds: []string{ipc.KindTool}}, []string{"t3"}},
				{"since", ipc.Search{Since: day(3)}, []string{"t3", "u4"}},
				{"until", ipc.Search{Until: day(3)}, []string{"a2", "u1"}},
				{"range and role", ipc.Search{Roles: []string{ipc.RoleUser}, Since: day(2), Until: day(5)}, []string{"u4"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					m := tc.req
					m.Query, m.Ref = "tomatoes", "s"
					if err := c.Send(&m); err != nil {
						t.Fatal(err)
					}
					got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.SearchResults); return ok })
					var texts []string
					for _, h := range got[len(got)-1].(*ipc.SearchResults).Results {
						id := recordName(h.Turn.Content)
						texts = append(texts, id)
						if len(m.Roles) > 0 && !slices.Contains(m.Roles, h.Turn.Role) {
							t.Errorf("hit %q has role %q, want one of %v", h.Turn.Content, h.Turn.Role, m.Roles)
						}
						if want := wantProvenance(id); h.Kind != want.Kind || h.Session != want.Session || h.Channel != want.Channel {
							t.Errorf("hit %s provenance = kind %q, session %q, channel %q; want %+v", id, h.Kind, h.Session, h.Channel, want)
						}
						if wantMode := map[bool]string{true: ipc.ModeVoice, false: ipc.ModeText}[wantProvenance(id).Channel == "voice"]; h.Turn.Mode != wantMode {
							t.Errorf("hit %s mode = %q, want %q", id, h.Turn.Mode, wantMode)
						}
						if h.Turn.ID == "" || h.Turn.TS.IsZero() {
							t.Errorf("hit %s lacks its id or time: %+v", id, h.Turn)
						}
					}
					slices.Sort(texts)
					if diff := cmp.Diff(tc.want, texts); diff != "" {
						t.Errorf("hits (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// recordName is the name searchRecords gave the record whose text (a tool
// document's starts with the tool) is content.
func recordName(content string) string {
	for _, f := range strings.Fields(content) {
		if name, ok := strings.CutSuffix(f, ":"); ok {
			return name
		}
	}
	return content
}

// wantProvenance is the provenance of searchRecords' record named id.
func wantProvenance(id string) ipc.SearchHit {
	switch id {
	case "t3":
		return ipc.SearchHit{Kind: ipc.KindTool, Session: conversationID, Channel: "weather"}
	case "u4":
		return ipc.SearchHit{Kind: ipc.KindTurn, Session: conversationID, Channel: "voice"}
	}
	return ipc.SearchHit{Kind: ipc.KindTurn, Session: conversationID, Channel: "chat"}
}

// TestClientSearchRequest checks what hearth passes to Search for a
// client's search, what it sends back, and that bad filters are refused
// as bad requests without a search.
func TestClientSearchRequest(t *testing.T) {
	var mu sync.Mutex
	var got []tools.SearchRequest
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := startHearth(t, "", func(c *Config) {
		c.Search = func(_ context.Context, req tools.SearchRequest) ([]tools.Hit, error) {
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			return []tools.Hit{{ID: "01A#2", Kind: "tool", Role: "tool", Session: "main", Channel: strings.Repeat("c", 300), Text: "rain", TS: ts, Score: 0.5}}, nil
		}
	})
	c := dial(t, th.addr)
	since, until := ts.Add(-time.Hour), ts.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		msg     ipc.Search
		want    *tools.SearchRequest // nil: refused
		wantErr string
	}{
		{"plain", ipc.Search{Query: "rain"}, &tools.SearchRequest{Query: "rain", K: defaultSearchResults}, ""},
		{"filters pass through", ipc.Search{Query: "rain", K: 3, Roles: []string{"tool", "user"}, Kinds: []string{"tool"}, Since: since, Until: until},
			&tools.SearchRequest{Query: "rain", K: 3, Roles: []string{"tool", "user"}, Kinds: []string{"tool"}, Since: since, Until: until}, ""},
		{"k over the bound", ipc.Search{Query: "rain", K: 51}, &tools.SearchRequest{Query: "rain", K: defaultSearchResults}, ""},
		{"unknown role", ipc.Search{Query: "rain", Roles: []string{"assistant"}}, nil, `search: unknown role "assistant": use user, agent or tool`},
		{"unknown kind", ipc.Search{Query: "rain", Kinds: []string{"note"}}, nil, `search: unknown kind "note": use turn or tool`},
		{"since after until", ipc.Search{Query: "rain", Since: until, Until: since}, nil, "search: since (2026-01-02T04:04:05Z) must be before until (2026-01-02T02:04:05Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			m := tc.msg
			m.Ref = "r-" + tc.name
			if err := c.Send(&m); err != nil {
				t.Fatal(err)
			}
			msgs := recvUntil(t, c, func(m ipc.Msg) bool {
				switch m.(type) {
				case *ipc.SearchResults, *ipc.Error:
					return true
				}
				return false
			})
			last := msgs[len(msgs)-1]
			mu.Lock()
			defer mu.Unlock()
			if tc.want == nil {
				e, ok := last.(*ipc.Error)
				if !ok || e.Code != ipc.CodeBadRequest || e.Message != tc.wantErr || e.Ref != m.Ref {
					t.Errorf("answer = %+v, want bad_request %q", last, tc.wantErr)
				}
				if len(got) != 0 {
					t.Errorf("searched %+v despite the bad filters", got)
				}
				return
			}
			if diff := cmp.Diff([]tools.SearchRequest{*tc.want}, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			res, ok := last.(*ipc.SearchResults)
			if !ok {
				t.Fatalf("answer = %+v, want search_results", last)
			}
			want := &ipc.SearchResults{Ref: m.Ref, Results: []ipc.SearchHit{{
				Turn:  ipc.Turn{ID: "01A#2", Role: "tool", Content: "rain", TS: ts, Mode: ipc.ModeText},
				Score: 0.5, Kind: "tool", Session: "main", Channel: strings.Repeat("c", maxSearchField),
			}}}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}
