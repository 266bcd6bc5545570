package tools

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // current_time works on hosts without a zoneinfo database
	"unicode"
)

// Hit is one memory found by a search, with its provenance: which record
// (ID, "<record id>#<n>" for a chunk of a long one), what it is (Kind),
// who said it (Role), where it came from (Channel: "chat", "voice", a
// tool's name), which conversation (Session) and when (TS).
type Hit struct {
	ID, Kind, Role   string
	Session, Channel string
	Text             string
	TS               time.Time
	Score            float64
}

// Rec is one conversation turn or memory record. Kind, Channel and
// Session are provenance for searches; an empty Kind is KindTool for a
// record with role "tool" and KindTurn otherwise.
type Rec struct {
	ID, Role, Text         string
	Kind, Channel, Session string
	TS                     time.Time
}

// Roles and kinds a memory search filters on. A tool result and a memory
// kept with cache_store are records of role "tool" and kind "tool".
const (
	RoleUser  = "user"
	RoleAgent = "agent"
	RoleTool  = "tool"
	KindTurn  = "turn"
	KindTool  = "tool"
)

var (
	searchRoles = []string{RoleUser, RoleAgent, RoleTool}
	searchKinds = []string{KindTurn, KindTool}
)

// SearchRequest is one memory search: the K best hits for Query among the
// records that pass every filter. A zero filter does not filter; a record
// passes a list filter when it has any of the values listed.
type SearchRequest struct {
	Query string
	K     int
	Roles []string  // RoleUser, RoleAgent, RoleTool
	Kinds []string  // KindTurn, KindTool
	Since time.Time // TS >= Since
	Until time.Time // TS < Until
}

// SearchFunc runs a memory search.
type SearchFunc func(ctx context.Context, req SearchRequest) ([]Hit, error)

// Validate checks the filters: known roles and kinds, and a time range
// that is not empty. Its errors are safe to show.
func (r SearchRequest) Validate() error {
	for _, v := range r.Roles {
		if !slices.Contains(searchRoles, v) {
			return fmt.Errorf("unknown role %q: use user, agent or tool", cut(v, maxHitField))
		}
	}
	for _, v := range r.Kinds {
		if !slices.Contains(searchKinds, v) {
			return fmt.Errorf("unknown kind %q: use turn or tool", cut(v, maxHitField))
		}
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Since.Before(r.Until) {
		return fmt.Errorf("since (%s) must be before until (%s)", r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// Matches reports whether a record of that kind and role, said at ts,
// passes the filters.
func (r SearchRequest) Matches(kind, role string, ts time.Time) bool {
	return (len(r.Kinds) == 0 || slices.Contains(r.Kinds, kind)) &&
		(len(r.Roles) == 0 || slices.Contains(r.Roles, role)) &&
		(r.Since.IsZero() || !ts.Before(r.Since)) &&
		(r.Until.IsZero() || ts.Before(r.Until))
}

// filters describes the filters for a result's heading: "" when none,
// else " (role user, since 2026-01-01T00:00:00Z)".
func (r SearchRequest) filters() string {
	var parts []string
	if len(r.Roles) > 0 {
		parts = append(parts, "role "+strings.Join(r.Roles, " or "))
	}
	if len(r.Kinds) > 0 {
		parts = append(parts, "kind "+strings.Join(r.Kinds, " or "))
	}
	if !r.Since.IsZero() {
		parts = append(parts, "since "+r.Since.UTC().Format(time.RFC3339))
	}
	if !r.Until.IsZero() {
		parts = append(parts, "until "+r.Until.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// recKind is a record's kind: its own, else derived from its role.
func recKind(r Rec) string {
	switch {
	case r.Kind != "":
		return r.Kind
	case r.Role == RoleTool:
		return KindTool
	}
	return KindTurn
}

const (
	defaultSearchK = 10
	maxSearchK     = 50
	defaultLast    = 20
	maxLast        = 200
	// historyWindow is how many recent turns "contains" searches.
	historyWindow = 1000
	// maxHitText and maxTurnText bound one hit or turn in a result.
	maxHitText  = 400
	maxTurnText = 1000
	// maxHitField bounds each provenance field of a hit in a result.
	maxHitField = 64
)

func builtinSpec(name, desc, params string) Spec {
	return Spec{
		Name:        name,
		Description: desc,
		Parameters:  json.RawMessage(params),
		Effect:      ReadOnly,
		Permission:  Safe,
		Idempotent:  true,
		Source:      "builtin",
	}
}

// decodeArgs decodes a tool's arguments; empty means none.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// CurrentTime is the current_time tool: the time now, in RFC 3339 with the
// weekday, in an IANA time zone or the host's.
func CurrentTime(now func() time.Time) Builtin {
	spec := builtinSpec("current_time",
		"Get the current date and time (RFC 3339) and the day of the week, in the host's time zone or a given IANA time zone.",
		`{"type":"object","properties":{"timezone":{"type":"string","description":"IANA time zone name such as Europe/Paris or America/New_York; default: the host's time zone"}}}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Timezone string `json:"timezone"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		t := now()
		if tz := strings.TrimSpace(in.Timezone); tz != "" {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return Result{Text: fmt.Sprintf("unknown time zone %q: use an IANA name such as Europe/Paris", tz), IsError: true}, nil
			}
			t = t.In(loc)
		}
		return Result{Text: fmt.Sprintf("%s (%s, %s)", t.Format(time.RFC3339), t.Weekday(), t.Location())}, nil
	}}
}

// memorySearchParams is memory_search's JSON Schema.
const memorySearchParams = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"what to look for: words or a short phrase"},` +
	`"k":{"type":"integer","minimum":1,"maximum":50,"description":"how many results, default 10"},` +
	`"role":{"anyOf":[{"type":"string","enum":["user","agent","tool"]},{"type":"array","items":{"type":"string","enum":["user","agent","tool"]},"minItems":1,"uniqueItems":true}],` +
	`"description":"only what these said: user (the owner), agent (you), tool (tool results and memories kept with cache_store); one role or a list; default: any"},` +
	`"kind":{"type":"string","enum":["turn","tool"],"description":"only conversation turns (turn) or only tool results and cache_store memories (tool); default: both"},` +
	`"since":{"type":"string","description":"only memories from this time on: a date YYYY-MM-DD (from the start of that day, UTC) or an RFC 3339 time such as 2026-01-02T15:04:05Z"},` +
	`"until":{"type":"string","description":"only memories up to this time: a date YYYY-MM-DD (through the end of that day, UTC) or an RFC 3339 time (before that instant); must be after since"}` +
	`},"required":["query"]}`

// MemorySearch is the memory_search tool over search, which returns the
// req.K best hits for req.Query among the records that pass req's filters.
func MemorySearch(search SearchFunc) Builtin {
	spec := builtinSpec("memory_search",
		"Search long-term memory (past conversations, tool results and memories kept with cache_store) for a query, optionally only what a role said, one kind of record, or a time range. "+
			"Returns the best matches, one line each: [time] kind, role, channel (chat, voice or the tool's name), session, id and score, then the text. "+
			"Times are UTC; ids are journal record ids (\"<id>#<n>\" for part of a long record).",
		memorySearchParams)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		req, err := parseSearchArgs(args)
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		hits, err := search(ctx, req)
		if err != nil {
			return Result{}, fmt.Errorf("memory search: %w", err)
		}
		if len(hits) > req.K {
			hits = hits[:req.K]
		}
		if len(hits) == 0 {
			return Result{Text: fmt.Sprintf("no memories match %q%s", req.Query, req.filters())}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d results for %q%s:\n", len(hits), req.Query, req.filters())
		for i, h := range hits {
			fmt.Fprintf(&b, "%d. [%s]", i+1, h.TS.UTC().Format(time.RFC3339))
			for _, f := range [...]struct{ k, v string }{{"kind", h.Kind}, {"role", h.Role}, {"channel", h.Channel}, {"session", h.Session}, {"id", h.ID}} {
				if v := oneLine(f.v, maxHitField); v != "" {
					fmt.Fprintf(&b, " %s=%s", f.k, v)
				}
			}
			fmt.Fprintf(&b, " score=%.2f: %s\n", h.Score, oneLine(h.Text, maxHitText))
		}
		return Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
	}}
}

// parseSearchArgs reads memory_search's arguments into a valid request.
// Its errors are for the model: they say what is wrong and what to send.
func parseSearchArgs(args json.RawMessage) (SearchRequest, error) {
	var in struct {
		Query string          `json:"query"`
		K     int             `json:"k"`
		Role  json.RawMessage `json:"role"`
		Kind  json.RawMessage `json:"kind"`
		Since string          `json:"since"`
		Until string          `json:"until"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return SearchRequest{}, err
	}
	req := SearchRequest{Query: strings.TrimSpace(in.Query), K: in.K}
	if req.Query == "" {
		return req, errors.New("query is required")
	}
	if req.K <= 0 {
		req.K = defaultSearchK
	}
	req.K = min(req.K, maxSearchK)
	var err error
	if req.Roles, err = stringList("role", in.Role, searchRoles); err != nil {
		return req, err
	}
	if req.Kinds, err = stringList("kind", in.Kind, searchKinds); err != nil {
		return req, err
	}
	if req.Since, err = parseWhen("since", in.Since, false); err != nil {
		return req, err
	}
	if req.Until, err = parseWhen("until", in.Until, true); err != nil {
		return req, err
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && !req.Since.Before(req.Until) {
		return req, fmt.Errorf("since %q is not before until %q: nothing can match; give since earlier than until", in.Since, in.Until)
	}
	return req, req.Validate()
}

// stringList reads a filter given as one string or a list of strings,
// each one of allowed (case-insensitive); blanks and repeats are dropped.
func stringList(field string, raw json.RawMessage, allowed []string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s must be one of %s, or a list of them", field, strings.Join(allowed, ", "))
	}
	var out []string
	for _, v := range list {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case v == "" || slices.Contains(out, v):
		case !slices.Contains(allowed, v):
			return nil, fmt.Errorf("%s %q is not one of %s", field, cut(v, maxHitField), strings.Join(allowed, ", "))
		default:
			out = append(out, v)
		}
	}
	return out, nil
}

// parseWhen reads a since or until argument: "" is none; a date
// YYYY-MM-DD is the start of that day in UTC, or for until (endOfDay) the
// start of the next; otherwise an RFC 3339 time.
func parseWhen(field, s string, endOfDay bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if endOfDay {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-01-02T15:04:05Z", field, cut(s, maxHitField))
	}
	return t, nil
}

// History is the conversation_history tool over tail, which returns the
// last n records, oldest first.
func History(tail func(n int) ([]Rec, error)) Builtin {
	spec := builtinSpec("conversation_history",
		"Read the most recent turns of the conversation, oldest first, one line per turn: [time] role: text. Optionally only the turns containing a substring (searched among the last 1000 turns).",
		`{"type":"object","properties":{"last":{"type":"integer","minimum":1,"maximum":200,"description":"how many turns, default 20"},"contains":{"type":"string","description":"only turns containing this text (case-insensitive)"}}}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Last     int    `json:"last"`
			Contains string `json:"contains"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		n := in.Last
		if n <= 0 {
			n = defaultLast
		}
		n = min(n, maxLast)
		want := n
		if in.Contains != "" {
			want = historyWindow
		}
		recs, err := tail(want)
		if err != nil {
			return Result{}, fmt.Errorf("conversation history: %w", err)
		}
		if in.Contains != "" {
			needle := strings.ToLower(in.Contains)
			recs = slices.DeleteFunc(slices.Clone(recs), func(r Rec) bool {
				return !strings.Contains(strings.ToLower(r.Text), needle)
			})
		}
		if len(recs) > n {
			recs = recs[len(recs)-n:]
		}
		if len(recs) == 0 {
			if in.Contains != "" {
				return Result{Text: fmt.Sprintf("no recent turns contain %q", in.Contains)}, nil
			}
			return Result{Text: "no turns yet"}, nil
		}
		var b strings.Builder
		for _, r := range recs {
			fmt.Fprintf(&b, "[%s] %s: %s\n", r.TS.UTC().Format(time.RFC3339), r.Role, oneLine(r.Text, maxTurnText))
		}
		return Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
	}}
}

// oneLine puts text on one line and cuts it to n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return cut(s, n)
}

// KeywordSearch is a simple search over the records scan visits: a record's
// score is the fraction of the query's distinct terms it contains
// (case-insensitive, terms are runs of letters and digits); ties go to the
// newer record, then the smaller ID. Records without any query term, or
// that do not pass the request's filters, are not hits. Only the best K
// are kept in memory.
func KeywordSearch(scan func(ctx context.Context, fn func(Rec) error) error) SearchFunc {
	return func(ctx context.Context, req SearchRequest) ([]Hit, error) {
		k := req.K
		qterms := terms(req.Query)
		if len(qterms) == 0 || k <= 0 {
			return nil, nil
		}
		want := make(map[string]bool, len(qterms))
		for _, t := range qterms {
			want[t] = true
		}
		top := &hitHeap{}
		seen := make(map[string]bool, len(want))
		err := scan(ctx, func(r Rec) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			kind := recKind(r)
			if !req.Matches(kind, r.Role, r.TS) {
				return nil
			}
			clear(seen)
			for _, f := range strings.FieldsFunc(r.Text, notTermRune) {
				if t := strings.ToLower(f); want[t] {
					seen[t] = true
				}
			}
			if len(seen) == 0 {
				return nil
			}
			h := Hit{ID: r.ID, Kind: kind, Role: r.Role, Session: r.Session, Channel: r.Channel, Text: r.Text, TS: r.TS, Score: float64(len(seen)) / float64(len(want))}
			switch {
			case top.Len() < k:
				heap.Push(top, h)
			case worse((*top)[0], h):
				(*top)[0] = h
				heap.Fix(top, 0)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
		hits := []Hit(*top)
		slices.SortFunc(hits, func(a, b Hit) int {
			switch {
			case worse(b, a):
				return -1
			case worse(a, b):
				return 1
			}
			return 0
		})
		return hits, nil
	}
}

// terms splits s into distinct lower-case runs of letters and digits, in
// order of first appearance.
func terms(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, notTermRune) {
		t := strings.ToLower(f)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func notTermRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// worse reports whether a ranks below b: lower score, then older, then
// larger ID.
func worse(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	if !a.TS.Equal(b.TS) {
		return a.TS.Before(b.TS)
	}
	return a.ID > b.ID
}

// hitHeap is a min-heap by rank: the root is the worst hit kept.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// CacheStore is the cache_store tool (seed 004's tool cache): the agent
// keeps a tool result, or anything else it wants to recall later, in
// long-term memory. store saves it durably and returns its id; memory_search
// finds it afterwards.
func CacheStore(store func(ctx context.Context, label, content string) (string, error)) Builtin {
	spec := builtinSpec("cache_store",
		"Keep a piece of information (for example a tool result worth remembering) in long-term memory so that memory_search can find it later. Store facts, not chatter.",
		`{"type":"object","properties":{"content":{"type":"string","description":"the text to remember, self-contained"},"label":{"type":"string","description":"a short title, e.g. the tool and query it came from"}},"required":["content"]}`)
	spec.Effect, spec.Idempotent = WritesLocal, false
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Content string `json:"content"`
			Label   string `json:"label"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		if strings.TrimSpace(in.Content) == "" {
			return Result{Text: "content is empty: give the text to remember", IsError: true}, nil
		}
		if len(in.Content) > maxCacheContent {
			return Result{Text: fmt.Sprintf("content is %d bytes; keep it under %d", len(in.Content), maxCacheContent), IsError: true}, nil
		}
		id, err := store(ctx, strings.TrimSpace(in.Label), in.Content)
		if err != nil {
			return Result{}, err
		}
		return Result{Text: "stored in memory as " + id}, nil
	}}
}

// maxCacheContent bounds one cache_store entry.
const maxCacheContent = 64 << 10
