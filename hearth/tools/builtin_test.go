package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mnemo/mnemo/memory"
)

func TestCurrentTime(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 3, 8, 23, 30, 0, 0, time.UTC) }
	b := CurrentTime(now)
	for _, tc := range []struct {
		name, args string
		want       Result
	}{
		{"host zone", `{}`, Result{Text: "2026-03-08T23:30:00Z (Sunday, UTC)"}},
		{"no args", ``, Result{Text: "2026-03-08T23:30:00Z (Sunday, UTC)"}},
		{"iana zone", `{"timezone":"Asia/Tokyo"}`, Result{Text: "2026-03-09T08:30:00+09:00 (Monday, Asia/Tokyo)"}},
		{"dst", `{"timezone":"America/New_York"}`, Result{Text: "2026-03-08T19:30:00-04:00 (Sunday, America/New_York)"}},
		{"unknown zone", `{"timezone":"Mars/Olympus"}`, Result{Text: `unknown time zone "Mars/Olympus": use an IANA name such as Europe/Paris`, IsError: true}},
		{"bad args", `{"timezone":3}`, Result{IsError: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "bad args" {
				got.Text = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if s := b.Spec; s.Name != "current_time" || s.Effect != ReadOnly || s.Permission != Safe || !s.Idempotent || !json.Valid(s.Parameters) {
		t.Errorf("spec = %+v", s)
	}
}

func TestMemorySearch(t *testing.T) {
	var got memory.SearchRequest
	search := func(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
		got = req
		if req.Query == "fail" {
			return nil, errors.New("index offline")
		}
		if req.Query == "none" {
			return nil, nil
		}
		if req.Query == "lisbon" {
			return []memory.Hit{{ID: "note:01N#1", Kind: "knowledge", Path: "knowledge/people/ana.md", Heading: "Home", Status: "active", Confidence: 0.9,
				Text: "## Home\nAna moved to Lisbon.", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Score: 1}}, nil
		}
		return []memory.Hit{
			{ID: "01A", Kind: "turn", Role: "user", Channel: "chat", Session: "main", Text: "line one\nline two", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Score: 0.875},
			{ID: "01B#2", Kind: "tool", Role: "tool", Channel: "weather", Session: "main", Text: strings.Repeat("long ", 200), TS: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600)), Score: 0.5},
			{ID: "01C", Role: "agent", Session: strings.Repeat("s", 100), Text: "no kind or channel", TS: time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), Score: 0.25},
		}, nil
	}
	b := MemorySearch(search)
	for _, tc := range []struct {
		name, args string
		wantK      int
		want       Result
		wantErr    bool
	}{
		{"lines with provenance", `{"query":"cats"}`, 10, Result{Text: "3 results for \"cats\":\n" +
			"1. [2026-01-02T03:04:05Z] kind=turn role=user channel=chat session=main id=01A score=0.88: line one line two\n" +
			"2. [2025-12-31T23:00:00Z] kind=tool role=tool channel=weather session=main id=01B#2 score=0.50: " + strings.Repeat("long ", 79) + "lo…\n" +
			"3. [2025-12-31T00:00:00Z] role=agent session=" + strings.Repeat("s", maxHitField-len("…")) + "… id=01C score=0.25: no kind or channel"}, false},
		{"a note's section names its file", `{"query":"lisbon"}`, 10, Result{Text: "1 results for \"lisbon\":\n" +
			"1. [2026-01-02T03:04:05Z] kind=knowledge path=knowledge/people/ana.md heading=Home status=active confidence=0.90 id=note:01N#1 score=1.00: ## Home Ana moved to Lisbon."}, false},
		{"more hits than k are cut", `{"query":"cats","k":1}`, 1, Result{Text: "1 results for \"cats\":\n" +
			"1. [2026-01-02T03:04:05Z] kind=turn role=user channel=chat session=main id=01A score=0.88: line one line two"}, false},
		{"filters in the heading", `{"query":"none","role":"user","since":"2026-01-01"}`, 10, Result{Text: `no memories match "none" (role user, since 2026-01-01T00:00:00Z)`}, false},
		{"k capped", `{"query":"none","k":500}`, 50, Result{Text: `no memories match "none"`}, false},
		{"k given", `{"query":"none","k":3}`, 3, Result{Text: `no memories match "none"`}, false},
		{"empty query", `{"query":"  "}`, 0, Result{Text: "query is required", IsError: true}, false},
		{"bad filter: no search", `{"query":"cats","role":"bot"}`, 0, Result{Text: `role "bot" is not one of user, agent, tool`, IsError: true}, false},
		{"search fails", `{"query":"fail"}`, 10, Result{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = memory.SearchRequest{}
			res, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got.K != tc.wantK {
				t.Errorf("k = %d, want %d", got.K, tc.wantK)
			}
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemorySearchArgs checks how memory_search reads its arguments into
// the request the search gets, and that bad values are IsError results
// that say what to send, never Go errors and never a search.
func TestMemorySearchArgs(t *testing.T) {
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name, args string
		want       memory.SearchRequest // when wantErr is ""
		wantErr    string
	}{
		{"query only", `{"query":" garden "}`, memory.SearchRequest{Query: "garden", K: 10}, ""},
		{"k absent, zero or negative: default", `{"query":"q","k":0}`, memory.SearchRequest{Query: "q", K: 10}, ""},
		{"k negative", `{"query":"q","k":-3}`, memory.SearchRequest{Query: "q", K: 10}, ""},
		{"k 1", `{"query":"q","k":1}`, memory.SearchRequest{Query: "q", K: 1}, ""},
		{"k 50", `{"query":"q","k":50}`, memory.SearchRequest{Query: "q", K: 50}, ""},
		{"k 51 capped", `{"query":"q","k":51}`, memory.SearchRequest{Query: "q", K: 50}, ""},
		{"k not an integer", `{"query":"q","k":2.5}`, memory.SearchRequest{}, "invalid arguments"},
		{"k a string", `{"query":"q","k":"3"}`, memory.SearchRequest{}, "invalid arguments"},

		{"role string", `{"query":"q","role":"user"}`, memory.SearchRequest{Query: "q", K: 10, Roles: []string{"user"}}, ""},
		{"role list", `{"query":"q","role":["agent","tool"]}`, memory.SearchRequest{Query: "q", K: 10, Roles: []string{"agent", "tool"}}, ""},
		{"role case, spaces, blanks and repeats", `{"query":"q","role":[" User","user","","AGENT"]}`, memory.SearchRequest{Query: "q", K: 10, Roles: []string{"user", "agent"}}, ""},
		{"role empty list or null: any", `{"query":"q","role":[],"kind":null}`, memory.SearchRequest{Query: "q", K: 10}, ""},
		{"role unknown", `{"query":"q","role":"assistant"}`, memory.SearchRequest{}, `role "assistant" is not one of user, agent, tool`},
		{"role unknown in a list", `{"query":"q","role":["user","me"]}`, memory.SearchRequest{}, `role "me" is not one of user, agent, tool`},
		{"role wrong type", `{"query":"q","role":3}`, memory.SearchRequest{}, "role must be one of user, agent, tool, or a list of them"},
		{"role list of numbers", `{"query":"q","role":[1]}`, memory.SearchRequest{}, "role must be one of user, agent, tool, or a list of them"},

		{"kind turn", `{"query":"q","kind":"turn"}`, memory.SearchRequest{Query: "q", K: 10, Kinds: []string{"turn"}}, ""},
		{"kind tool", `{"query":"q","kind":"tool"}`, memory.SearchRequest{Query: "q", K: 10, Kinds: []string{"tool"}}, ""},
		{"kind list", `{"query":"q","kind":["tool","turn"]}`, memory.SearchRequest{Query: "q", K: 10, Kinds: []string{"tool", "turn"}}, ""},
		{"kind unknown", `{"query":"q","kind":"note"}`, memory.SearchRequest{}, `kind "note" is not one of turn, tool, knowledge`},
		{"kind wrong type", `{"query":"q","kind":{}}`, memory.SearchRequest{}, "kind must be one of turn, tool, knowledge, or a list of them"},
		{"knowledge with status and confidence", `{"query":"q","kind":"knowledge","status":["active","Superseded"],"min_confidence":0.6}`,
			memory.SearchRequest{Query: "q", K: 10, Kinds: []string{"knowledge"}, Statuses: []string{"active", "superseded"}, MinConfidence: 0.6}, ""},
		{"status unknown", `{"query":"q","status":"archived"}`, memory.SearchRequest{}, `status "archived" is not one of active, superseded, contradicted, deprecated, draft`},
		{"confidence out of range", `{"query":"q","min_confidence":1.5}`, memory.SearchRequest{}, `min confidence 1.5 is outside [0, 1]`},

		{"since date: start of the day", `{"query":"q","since":"2026-01-02"}`, memory.SearchRequest{Query: "q", K: 10, Since: utc(2026, 1, 2, 0, 0)}, ""},
		{"until date: through the end of the day", `{"query":"q","until":"2026-01-02"}`, memory.SearchRequest{Query: "q", K: 10, Until: utc(2026, 1, 3, 0, 0)}, ""},
		{"until date at a month's end", `{"query":"q","until":"2026-02-28"}`, memory.SearchRequest{Query: "q", K: 10, Until: utc(2026, 3, 1, 0, 0)}, ""},
		{"same day both ways", `{"query":"q","since":"2026-01-02","until":"2026-01-02"}`, memory.SearchRequest{Query: "q", K: 10, Since: utc(2026, 1, 2, 0, 0), Until: utc(2026, 1, 3, 0, 0)}, ""},
		{"rfc 3339 times", `{"query":"q","since":"2026-01-02T08:30:00Z","until":"2026-01-02T10:00:00+01:00"}`, memory.SearchRequest{Query: "q", K: 10, Since: utc(2026, 1, 2, 8, 30), Until: time.Date(2026, 1, 2, 10, 0, 0, 0, time.FixedZone("", 3600))}, ""},
		{"fractional seconds", `{"query":"q","since":"2026-01-02T08:30:00.5Z"}`, memory.SearchRequest{Query: "q", K: 10, Since: utc(2026, 1, 2, 8, 30).Add(500 * time.Millisecond)}, ""},
		{"blank dates: none", `{"query":"q","since":" ","until":""}`, memory.SearchRequest{Query: "q", K: 10}, ""},
		{"since not a date", `{"query":"q","since":"last week"}`, memory.SearchRequest{}, `since "last week" is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-01-02T15:04:05Z`},
		{"until not a date", `{"query":"q","until":"2026-13-01"}`, memory.SearchRequest{}, `until "2026-13-01" is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-01-02T15:04:05Z`},
		{"time without a zone", `{"query":"q","since":"2026-01-02T08:30:00"}`, memory.SearchRequest{}, `since "2026-01-02T08:30:00" is not a date`},
		{"date wrong type", `{"query":"q","since":20260102}`, memory.SearchRequest{}, "invalid arguments"},
		{"since after until", `{"query":"q","since":"2026-02-01","until":"2026-01-01"}`, memory.SearchRequest{}, `since "2026-02-01" is not before until "2026-01-01": nothing can match; give since earlier than until`},
		{"since equals until", `{"query":"q","since":"2026-01-02T08:30:00Z","until":"2026-01-02T09:30:00+01:00"}`, memory.SearchRequest{}, `since "2026-01-02T08:30:00Z" is not before until "2026-01-02T09:30:00+01:00"`},
		{"all filters", `{"query":"tomatoes","k":5,"role":["user"],"kind":"turn","since":"2026-01-01","until":"2026-01-31"}`,
			memory.SearchRequest{Query: "tomatoes", K: 5, Roles: []string{"user"}, Kinds: []string{"turn"}, Since: utc(2026, 1, 1, 0, 0), Until: utc(2026, 2, 1, 0, 0)}, ""},
		{"not an object", `["q"]`, memory.SearchRequest{}, "invalid arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *memory.SearchRequest
			b := MemorySearch(func(_ context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
				got = &req
				return nil, nil
			})
			res, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Run: Go error %v, want a result", err)
			}
			if tc.wantErr != "" {
				if !res.IsError || !strings.HasPrefix(res.Text, tc.wantErr) {
					t.Errorf("result = %+v, want an error starting %q", res, tc.wantErr)
				}
				if got != nil {
					t.Errorf("searched %+v despite the bad arguments", *got)
				}
				return
			}
			if res.IsError || got == nil {
				t.Fatalf("result = %+v, searched %v; want a search", res, got)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSearchFilters checks the heading's description of a request's
// filters: every filter, in a fixed order, times in UTC.
func TestSearchFilters(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		name string
		req  memory.SearchRequest
		want string
	}{
		{"none", memory.SearchRequest{Query: "q", K: 3}, ""},
		{"roles", memory.SearchRequest{Roles: []string{memory.RoleUser, memory.RoleAgent}}, " (role user or agent)"},
		{"kind", memory.SearchRequest{Kinds: []string{memory.KindTool}}, " (kind tool)"},
		{"knowledge", memory.SearchRequest{Kinds: []string{memory.KindKnowledge}, Statuses: []string{memory.StatusSuperseded}, MinConfidence: 0.5}, " (kind knowledge, status superseded, confidence at least 0.5)"},
		{"until in utc", memory.SearchRequest{Until: time.Date(2026, 1, 2, 1, 0, 0, 0, paris)}, " (until 2026-01-02T00:00:00Z)"},
		{"all", memory.SearchRequest{Roles: []string{memory.RoleTool}, Kinds: []string{memory.KindTurn, memory.KindTool}, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
			" (role tool, kind turn or tool, since 2026-01-01T00:00:00Z, until 2026-02-01T00:00:00Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := searchFilters(tc.req); got != tc.want {
				t.Errorf("searchFilters() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMemorySearchSchemaVocabulary checks that the roles and kinds
// memory_search's schema offers are memory's vocabulary, no more, no less.
func TestMemorySearchSchemaVocabulary(t *testing.T) {
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(memorySearchParams), &schema); err != nil {
		t.Fatal(err)
	}
	enum := func(s *jsonschema.Schema) []string {
		var out []string
		for _, v := range s.Enum {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	role := schema.Properties["role"]
	if role == nil || len(role.AnyOf) != 2 || role.AnyOf[1].Items == nil {
		t.Fatalf("role schema = %+v", role)
	}
	for name, got := range map[string][]string{
		"role":      enum(role.AnyOf[0]),
		"role list": enum(role.AnyOf[1].Items),
		"kind":      enum(schema.Properties["kind"]),
		"status":    enum(schema.Properties["status"].AnyOf[0]),
	} {
		want := memory.Roles()
		switch name {
		case "kind":
			want = memory.Kinds()
		case "status":
			// needs_rewrite notes still hold what was forgotten: not
			// the agent's to ask for.
			want = slices.DeleteFunc(memory.Statuses(), func(s string) bool { return s == memory.StatusNeedsRewrite })
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s enum (-memory +schema):\n%s", name, diff)
		}
	}
}

// TestMemorySearchSchema checks that memory_search's parameters, with the
// registry's reason added, are a JSON Schema that accepts what the tool
// accepts and describes every field.
func TestMemorySearchSchema(t *testing.T) {
	spec := MemorySearch(func(context.Context, memory.SearchRequest) ([]memory.Hit, error) { return nil, nil }).Spec
	if spec.Effect != ReadOnly || spec.Permission != Safe || !spec.Idempotent {
		t.Errorf("spec = %+v", spec)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(withReason(spec.Parameters), &schema); err != nil {
		t.Fatalf("schema: %v\n%s", err, spec.Parameters)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	for _, name := range []string{"query", "k", "role", "kind", "since", "until", ReasonParam} {
		if p := schema.Properties[name]; p == nil || p.Description == "" {
			t.Errorf("property %q missing or undescribed", name)
		}
	}
	for _, tc := range []struct {
		args  string
		valid bool
	}{
		{`{"reason":"r","query":"q"}`, true},
		{`{"reason":"r","query":"q","k":5,"role":"user","kind":"turn","since":"2026-01-01","until":"2026-01-02T00:00:00Z"}`, true},
		{`{"reason":"r","query":"q","role":["user","agent"]}`, true},
		{`{"reason":"r","query":"q","role":"bot"}`, false},
		{`{"reason":"r","query":"q","role":["user","user"]}`, false},
		{`{"reason":"r","query":"q","role":[]}`, false},
		{`{"reason":"r","query":"q","kind":"note"}`, false},
		{`{"reason":"r","query":"q","kind":"knowledge","status":["active","superseded"],"min_confidence":0.5}`, true},
		{`{"reason":"r","query":"q","status":"archived"}`, false},
		{`{"reason":"r","query":"q","min_confidence":2}`, false},
		{`{"reason":"r","query":"q","k":0}`, false},
		{`{"reason":"r","query":"q","k":51}`, false},
		{`{"reason":"r"}`, false},
		{`{"query":"q"}`, false},
	} {
		var inst map[string]any
		if err := json.Unmarshal([]byte(tc.args), &inst); err != nil {
			t.Fatal(err)
		}
		if err := resolved.Validate(inst); (err == nil) != tc.valid {
			t.Errorf("Validate(%s) = %v, want valid %v", tc.args, err, tc.valid)
		}
	}
}

func TestHistory(t *testing.T) {
	var all []memory.Hit
	for i := range 300 {
		text := fmt.Sprintf("turn %d", i)
		if i%100 == 7 {
			text += " about Paris\nand more"
		}
		all = append(all, memory.Hit{ID: fmt.Sprint(i), Role: []string{"user", "agent"}[i%2], Text: text, TS: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)})
	}
	var asked int
	tail := func(n int) ([]memory.Hit, error) {
		asked = n
		if n > len(all) {
			n = len(all)
		}
		return all[len(all)-n:], nil
	}
	b := History(tail)
	for _, tc := range []struct {
		name, args string
		wantAsked  int
		want       string
	}{
		{"last 2", `{"last":2}`, 2, "[2026-01-01T00:04:58Z] user: turn 298\n[2026-01-01T00:04:59Z] agent: turn 299"},
		{"contains searches further back", `{"last":2,"contains":"paris"}`, 1000, "[2026-01-01T00:01:47Z] agent: turn 107 about Paris and more\n[2026-01-01T00:03:27Z] agent: turn 207 about Paris and more"},
		{"nothing contains", `{"contains":"tokyo"}`, 1000, `no recent turns contain "tokyo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if asked != tc.wantAsked {
				t.Errorf("tail(%d), want tail(%d)", asked, tc.wantAsked)
			}
			if diff := cmp.Diff(Result{Text: tc.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		args      string
		wantAsked int
		wantLines int
	}{{`{}`, 20, 20}, {`{"last":0}`, 20, 20}, {`{"last":1000}`, 200, 200}} {
		got, err := b.Run(t.Context(), json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if asked != tc.wantAsked || strings.Count(got.Text, "\n")+1 != tc.wantLines {
			t.Errorf("%s: tail(%d) and %d lines, want tail(%d) and %d lines", tc.args, asked, strings.Count(got.Text, "\n")+1, tc.wantAsked, tc.wantLines)
		}
	}
	empty := History(func(int) ([]memory.Hit, error) { return nil, nil })
	if got, _ := empty.Run(t.Context(), nil); got.Text != "no turns yet" {
		t.Errorf("empty history = %q", got.Text)
	}
	failing := History(func(int) ([]memory.Hit, error) { return nil, errors.New("journal locked") })
	if _, err := failing.Run(t.Context(), nil); err == nil {
		t.Errorf("a failing tail gave no error")
	}
}

func TestCacheStore(t *testing.T) {
	var got []string
	b := CacheStore(func(_ context.Context, label, content string) (string, error) {
		got = append(got, label+"|"+content)
		return "01ABC", nil
	})
	if b.Spec.Effect != WritesLocal || b.Spec.Idempotent || b.Spec.Permission != Safe {
		t.Errorf("spec = %+v", b.Spec)
	}
	tests := []struct {
		args    string
		want    string
		isError bool
	}{
		{`{"content":"the boiler code is 4471","label":"manual"}`, "stored in memory as 01ABC", false},
		{`{"content":"  "}`, "content is empty: give the text to remember", true},
		{`{"content":"` + strings.Repeat("x", maxCacheContent+1) + `"}`, fmt.Sprintf("content is %d bytes; keep it under %d", maxCacheContent+1, maxCacheContent), true},
	}
	for _, tt := range tests {
		res, err := b.Run(context.Background(), json.RawMessage(tt.args))
		if err != nil || res.Text != tt.want || res.IsError != tt.isError {
			t.Errorf("Run(%.40s) = %+v, %v; want %q (error %v)", tt.args, res, err, tt.want, tt.isError)
		}
	}
	if len(got) != 1 || got[0] != "manual|the boiler code is 4471" {
		t.Errorf("stored %q", got)
	}
}
