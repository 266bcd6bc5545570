package tools

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // current_time works on hosts without a zoneinfo database
	"unicode"
)

// Hit is one memory found by a search.
type Hit struct {
	ID, Role, Text string
	TS             time.Time
	Score          float64
}

// Rec is one conversation turn or memory record.
type Rec struct {
	ID, Role, Text string
	TS             time.Time
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

// MemorySearch is the memory_search tool over search, which returns the k
// best hits for a query.
func MemorySearch(search func(ctx context.Context, query string, k int) ([]Hit, error)) Builtin {
	spec := builtinSpec("memory_search",
		"Search long-term memory (past conversations and notes) for a query. Returns the best matches, newest first among equals, each with its time, role, id and score.",
		`{"type":"object","properties":{"query":{"type":"string","description":"what to look for: words or a short phrase"},"k":{"type":"integer","minimum":1,"maximum":50,"description":"how many results, default 10"}},"required":["query"]}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Query string `json:"query"`
			K     int    `json:"k"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		q := strings.TrimSpace(in.Query)
		if q == "" {
			return Result{Text: "query is required", IsError: true}, nil
		}
		k := in.K
		if k <= 0 {
			k = defaultSearchK
		}
		k = min(k, maxSearchK)
		hits, err := search(ctx, q, k)
		if err != nil {
			return Result{}, fmt.Errorf("memory search: %w", err)
		}
		if len(hits) > k {
			hits = hits[:k]
		}
		if len(hits) == 0 {
			return Result{Text: fmt.Sprintf("no memories match %q", q)}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d results for %q:\n", len(hits), q)
		for i, h := range hits {
			fmt.Fprintf(&b, "%d. [%s] %s (id %s, score %.2f): %s\n", i+1, h.TS.UTC().Format(time.RFC3339), h.Role, h.ID, h.Score, oneLine(h.Text, maxHitText))
		}
		return Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
	}}
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
// newer record, then the smaller ID. Records without any query term are
// not hits. Only the best k are kept in memory.
func KeywordSearch(scan func(ctx context.Context, fn func(Rec) error) error) func(ctx context.Context, query string, k int) ([]Hit, error) {
	return func(ctx context.Context, query string, k int) ([]Hit, error) {
		qterms := terms(query)
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
			clear(seen)
			for _, f := range strings.FieldsFunc(r.Text, notTermRune) {
				if t := strings.ToLower(f); want[t] {
					seen[t] = true
				}
			}
			if len(seen) == 0 {
				return nil
			}
			h := Hit{ID: r.ID, Role: r.Role, Text: r.Text, TS: r.TS, Score: float64(len(seen)) / float64(len(want))}
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
