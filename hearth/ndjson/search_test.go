package ndjson

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
)

// maxSearchField is the wire's bound on a hit's session or channel.
const maxSearchField = 256

// TestClientSearchRequest checks what hearth passes to memory for a
// client's search, what it sends back, and that bad filters are refused
// as bad requests without a search. (That memory honours the filters, on
// recall and on the keyword fallback alike, is memory/recollect's
// TestSearchPathsAgree.)
func TestClientSearchRequest(t *testing.T) {
	var mu sync.Mutex
	var got []memory.SearchRequest
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := startHearth(t, "", func(c *testConfig) {
		c.Search = func(_ context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			return []memory.Hit{{ID: "01A#2", Kind: "tool", Role: "tool", Session: "main", Channel: strings.Repeat("c", 300), Text: "rain", TS: ts, Score: 0.5}}, nil
		}
	})
	c := dial(t, th.addr)
	since, until := ts.Add(-time.Hour), ts.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		msg     ipc.Search
		want    *memory.SearchRequest // nil: refused
		wantErr string
	}{
		{"plain", ipc.Search{Query: "rain"}, &memory.SearchRequest{Query: "rain", K: hearth.DefaultSearchResults}, ""},
		{"filters pass through", ipc.Search{Query: "rain", K: 3, Roles: []string{"tool", "user"}, Kinds: []string{"tool"}, Since: since, Until: until},
			&memory.SearchRequest{Query: "rain", K: 3, Roles: []string{"tool", "user"}, Kinds: []string{"tool"}, Since: since, Until: until}, ""},
		{"knowledge filters pass through", ipc.Search{Query: "lisbon", Kinds: []string{"knowledge"}, Statuses: []string{"active", "superseded"}, MinConfidence: 0.5},
			&memory.SearchRequest{Query: "lisbon", K: hearth.DefaultSearchResults, Kinds: []string{"knowledge"}, Statuses: []string{"active", "superseded"}, MinConfidence: 0.5}, ""},
		{"unknown status", ipc.Search{Query: "rain", Statuses: []string{"archived"}}, nil, `search: unknown status "archived": use active, superseded, contradicted, deprecated or draft`},
		{"k over the bound", ipc.Search{Query: "rain", K: 51}, &memory.SearchRequest{Query: "rain", K: hearth.DefaultSearchResults}, ""},
		{"unknown role", ipc.Search{Query: "rain", Roles: []string{"assistant"}}, nil, `search: unknown role "assistant": use user, agent or tool`},
		{"unknown kind", ipc.Search{Query: "rain", Kinds: []string{"note"}}, nil, `search: unknown kind "note": use turn, tool or knowledge`},
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
			if diff := cmp.Diff([]memory.SearchRequest{*tc.want}, got); diff != "" {
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
