package recollect

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// Provenance is a journal record as a search hit without a score, with the
// provenance recall gives its documents (indexer.Docs): kind "tool" and
// the tool's name as channel for a tool record, else kind "turn" and
// channel "voice" for a spoken turn, "chat" for a typed one; session is
// the conversation's id (the record's own when it names one).
func Provenance(r journal.Record, session string) memory.Hit {
	if r.Conv != "" {
		session = r.Conv // a record of another conversation than the default one
	}
	h := memory.Hit{ID: r.ID, Kind: memory.KindTurn, Role: r.Role, Session: session, Channel: "chat", Mode: mode(r.Mode), Text: r.Text, TS: r.TS}
	switch {
	case r.Role == memory.RoleTool:
		h.Kind, h.Channel = memory.KindTool, ""
		if r.Tool != nil {
			h.Channel = r.Tool.Name
		}
	case r.Mode == memory.ModeVoice:
		h.Channel = "voice"
	}
	return h
}

// mode is a record's mode as hits give it: voice, or text (which older
// records leave empty).
func mode(m string) string {
	if m == memory.ModeVoice {
		return memory.ModeVoice
	}
	return memory.ModeText
}

// keywordSearch is a simple search over the records scan visits: a
// record's score is the fraction of the query's distinct terms it
// contains (case-insensitive, terms are runs of letters and digits); ties
// go to the newer record, then the smaller ID. Records without any query
// term, or that do not pass the request's filters, are not hits. Only the
// best K are kept in memory.
func keywordSearch(ctx context.Context, scan func(ctx context.Context, fn func(memory.Hit) error) error, req memory.SearchRequest) ([]memory.Hit, error) {
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
	err := scan(ctx, func(h memory.Hit) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !req.Matches(h.Kind, h.Role, h.TS) {
			return nil
		}
		clear(seen)
		for _, f := range strings.FieldsFunc(h.Text, notTermRune) {
			if t := strings.ToLower(f); want[t] {
				seen[t] = true
			}
		}
		if len(seen) == 0 {
			return nil
		}
		h.Score = float64(len(seen)) / float64(len(want))
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
	hits := []memory.Hit(*top)
	slices.SortFunc(hits, func(a, b memory.Hit) int {
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
func worse(a, b memory.Hit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	if !a.TS.Equal(b.TS) {
		return a.TS.Before(b.TS)
	}
	return a.ID > b.ID
}

// hitHeap is a min-heap by rank: the root is the worst hit kept.
type hitHeap []memory.Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(memory.Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
