package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // current_time works on hosts without a zoneinfo database

	"github.com/mnemo/mnemo/memory"
)

// SearchFunc runs a memory search: the req.K best hits for req.Query
// among the records that pass req's filters.
type SearchFunc func(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error)

// searchFilters describes req's filters for a result's heading: "" when
// none, else " (role user, since 2026-01-01T00:00:00Z)".
func searchFilters(req memory.SearchRequest) string {
	var parts []string
	if len(req.Roles) > 0 {
		parts = append(parts, "role "+strings.Join(req.Roles, " or "))
	}
	if len(req.Kinds) > 0 {
		parts = append(parts, "kind "+strings.Join(req.Kinds, " or "))
	}
	if len(req.Statuses) > 0 {
		parts = append(parts, "status "+strings.Join(req.Statuses, " or "))
	}
	if req.MinConfidence > 0 {
		parts = append(parts, fmt.Sprintf("confidence at least %g", req.MinConfidence))
	}
	if !req.Since.IsZero() {
		parts = append(parts, "since "+req.Since.UTC().Format(time.RFC3339))
	}
	if !req.Until.IsZero() {
		parts = append(parts, "until "+req.Until.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
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
	`"kind":{"type":"string","enum":["turn","tool","knowledge"],"description":"only conversation turns (turn), only tool results and cache_store memories (tool), or only sections of the knowledge notes in the memory vault (knowledge); default: all"},` +
	`"status":{"anyOf":[{"type":"string","enum":["active","superseded","contradicted","deprecated","draft"]},{"type":"array","items":{"type":"string","enum":["active","superseded","contradicted","deprecated","draft"]},"minItems":1,"uniqueItems":true}],` +
	`"description":"knowledge notes of these statuses; default: active only (superseded, contradicted, deprecated and draft notes are found only when asked for)"},` +
	`"min_confidence":{"type":"number","minimum":0,"maximum":1,"description":"only knowledge notes whose confidence is at least this; default: any"},` +
	`"since":{"type":"string","description":"only memories from this time on: a date YYYY-MM-DD (from the start of that day, UTC) or an RFC 3339 time such as 2026-01-02T15:04:05Z"},` +
	`"until":{"type":"string","description":"only memories up to this time: a date YYYY-MM-DD (through the end of that day, UTC) or an RFC 3339 time (before that instant); must be after since"}` +
	`},"required":["query"]}`

// MemorySearch is the memory_search tool over search, which returns the
// req.K best hits for req.Query among the records that pass req's filters.
func MemorySearch(search SearchFunc) Builtin {
	spec := builtinSpec("memory_search",
		"Search long-term memory (past conversations, tool results, memories kept with cache_store, and the knowledge notes of the memory vault) for a query, optionally only what a role said, one kind of record, or a time range. "+
			"Returns the best matches, one line each: [time] kind, role, channel (chat, voice or the tool's name), session, id and score, then the text; a knowledge note's section also names its file (path), heading, status and confidence. "+
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
			return Result{Text: fmt.Sprintf("no memories match %q%s", req.Query, searchFilters(req))}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d results for %q%s:\n", len(hits), req.Query, searchFilters(req))
		for i, h := range hits {
			fmt.Fprintf(&b, "%d. [%s]", i+1, h.TS.UTC().Format(time.RFC3339))
			conf := ""
			if h.Kind == memory.KindKnowledge {
				conf = fmt.Sprintf("%.2f", h.Confidence)
			}
			for _, f := range [...]struct{ k, v string }{{"kind", h.Kind}, {"role", h.Role}, {"channel", h.Channel}, {"session", h.Session},
				{"path", h.Path}, {"heading", h.Heading}, {"status", h.Status}, {"confidence", conf}, {"id", h.ID}} {
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
func parseSearchArgs(args json.RawMessage) (memory.SearchRequest, error) {
	var in struct {
		Query string          `json:"query"`
		K     int             `json:"k"`
		Role  json.RawMessage `json:"role"`
		Kind  json.RawMessage `json:"kind"`
		Since string          `json:"since"`
		// Status and MinConfidence narrow knowledge notes.
		Status        json.RawMessage `json:"status"`
		MinConfidence float64         `json:"min_confidence"`
		Until         string          `json:"until"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return memory.SearchRequest{}, err
	}
	req := memory.SearchRequest{Query: strings.TrimSpace(in.Query), K: in.K}
	if req.Query == "" {
		return req, errors.New("query is required")
	}
	if req.K <= 0 {
		req.K = defaultSearchK
	}
	req.K = min(req.K, maxSearchK)
	var err error
	if req.Roles, err = stringList("role", in.Role, memory.Roles()); err != nil {
		return req, err
	}
	if req.Kinds, err = stringList("kind", in.Kind, memory.Kinds()); err != nil {
		return req, err
	}
	if req.Statuses, err = stringList("status", in.Status, searchStatuses()); err != nil {
		return req, err
	}
	req.MinConfidence = in.MinConfidence
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
// last n records, oldest first, as hits without scores.
func History(tail func(n int) ([]memory.Hit, error)) Builtin {
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
			recs = slices.DeleteFunc(slices.Clone(recs), func(r memory.Hit) bool {
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

// Forget is the forget tool: the agent forgets turns when the owner asks
// it to ("forget what I said about my pin"), naming them by the ids
// memory_search and conversation_history show. It is confirm-class: the
// owner approves each call, which is what makes it the owner's decision;
// purge (removing the text from the journal on disk, not undoable) only
// happens when the call asks for it and the owner approves that call.
// forget returns what was forgotten and the ids that named nothing.
func Forget(forget func(ctx context.Context, ids []string, purge bool) (forgotten, unknown []string, err error)) Builtin {
	spec := builtinSpec("forget",
		"Forget turns of the conversation for good when the owner asks you to: they leave memory, search and every client's view. Name them by the ids memory_search shows. The owner is asked to approve. Set purge only when the owner asks that the text be erased from disk too.",
		`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"},"description":"ids of the turns (or search hits) to forget"},"purge":{"type":"boolean","description":"also erase their text from the journal on disk (not undoable)"}},"required":["ids"]}`)
	spec.Effect, spec.Permission, spec.Idempotent = Irreversible, Confirm, false
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			IDs   []string `json:"ids"`
			Purge bool     `json:"purge"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		if len(in.IDs) == 0 {
			return Result{Text: "ids is empty: name the turns to forget by the ids memory_search shows", IsError: true}, nil
		}
		forgotten, unknown, err := forget(ctx, in.IDs, in.Purge)
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "forgot %d turn(s): %s", len(forgotten), strings.Join(forgotten, ", "))
		if len(unknown) > 0 {
			fmt.Fprintf(&b, "; no turn has these ids (or they were forgotten already): %s", strings.Join(unknown, ", "))
		}
		if in.Purge {
			b.WriteString("; their text was erased from disk")
		}
		return Result{Text: b.String()}, nil
	}}
}

// searchStatuses are the note statuses the agent's search may ask for:
// all but needs_rewrite, whose notes still hold what the owner forgot
// until the curator rewrites them.
func searchStatuses() []string {
	return slices.DeleteFunc(memory.Statuses(), func(s string) bool { return s == memory.StatusNeedsRewrite })
}
