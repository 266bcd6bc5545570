package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// pagingHearth answers one connection with a snapshot of the last
// snapshot turns of turns and, when features lists history_query, answers
// each history_query with at most pageSize turns of its selection. It
// records the queries.
type pagingHearth struct {
	turns    []ipc.Turn
	snapshot int
	pageSize int
	features []string

	mu      sync.Mutex
	queries []ipc.HistoryQuery
}

func (p *pagingHearth) serve(t *testing.T) string {
	t.Helper()
	return serveOne(t, func(r *ipc.Reader, w *ipc.Writer) {
		w.Write(&ipc.History{Turns: p.turns[len(p.turns)-p.snapshot:], Server: "hearth/test", Protocol: ipc.ProtocolVersion, Features: p.features})
		for {
			m, err := r.Read()
			if err != nil {
				return
			}
			q, ok := m.(*ipc.HistoryQuery)
			if !ok {
				continue
			}
			p.mu.Lock()
			p.queries = append(p.queries, *q)
			p.mu.Unlock()
			w.Write(&ipc.Token{Content: "noise from a reply"}) // events interleave
			w.Write(p.page(q))
		}
	})
}

func (p *pagingHearth) page(q *ipc.HistoryQuery) *ipc.HistoryPage {
	var sel []ipc.Turn
	for _, t := range p.turns {
		if t.ID > q.After && !t.TS.Before(q.Since) {
			sel = append(sel, t)
		}
	}
	if q.Limit > 0 && len(sel) > q.Limit {
		sel = sel[len(sel)-q.Limit:]
	}
	page := &ipc.HistoryPage{Ref: q.Ref, Turns: sel}
	if len(sel) > p.pageSize {
		page.Turns, page.More = sel[:p.pageSize], true
	}
	return page
}

func manyTurns(n int) []ipc.Turn {
	var out []ipc.Turn
	for i := 1; i <= n; i++ {
		out = append(out, userTurn(i, fmt.Sprintf("turn %d", i)))
	}
	return out
}

func contents(t *testing.T, out string, asJSON bool) []string {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		if asJSON {
			var turn ipc.Turn
			if err := json.Unmarshal([]byte(l), &turn); err != nil {
				t.Fatalf("not a JSON turn: %q: %v", l, err)
			}
			got = append(got, turn.Content)
			continue
		}
		_, c, _ := strings.Cut(l, "user: ")
		got = append(got, c)
	}
	return got
}

func turnRange(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("turn %d", i))
	}
	return out
}

// History reads back page by page, continuing each from the last turn it
// got, and prints every turn once, in order.
func TestHistoryPages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       HistoryOptions
		want    []string
		queries int
	}{
		{"the snapshot by default", HistoryOptions{}, turnRange(8, 10), 0},
		{"-n within a page", HistoryOptions{Limit: 2}, turnRange(9, 10), 1},
		{"-n over pages", HistoryOptions{Limit: 7}, turnRange(4, 10), 2},
		{"all", HistoryOptions{All: true}, turnRange(1, 10), 3},
		{"since, as JSON", HistoryOptions{Since: epoch.Add(6 * time.Minute), JSON: true}, turnRange(6, 10), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &pagingHearth{turns: manyTurns(10), snapshot: 3, pageSize: 4, features: []string{"history_query"}}
			addr := h.serve(t)
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := History(ctx, Options{Addr: addr, Token: "t"}, tc.q, &out); err != nil {
				t.Fatal(err)
			}
			if got := contents(t, out.String(), tc.q.JSON); !slices.Equal(got, tc.want) {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.queries) != tc.queries {
				t.Errorf("%d queries, want %d: %+v", len(h.queries), tc.queries, h.queries)
			}
		})
	}
}

// A hearth without history_query gets no query: its snapshot is what
// there is, and the reader is told.
func TestHistoryOnAnOlderHearth(t *testing.T) {
	h := &pagingHearth{turns: manyTurns(10), snapshot: 5}
	addr := h.serve(t)
	var out, notes bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := History(ctx, Options{Addr: addr, Token: "t"}, HistoryOptions{Limit: 8, Notes: &notes}, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, out.String(), false), turnRange(6, 10); !slices.Equal(got, want) {
		t.Errorf("printed %q, want %q", got, want)
	}
	if !strings.Contains(notes.String(), "hearth/test sends only its last 5 turns") {
		t.Errorf("notes %q, want the snapshot's limit said", notes.String())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queries) != 0 {
		t.Errorf("sent %d queries to a hearth that does not offer them", len(h.queries))
	}
}
