package hearth_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/journal"
)

// historyCore is a core over a journal of n records "t1".."tn", one an
// hour from day0, without running it (History reads the journal only).
func historyCore(t *testing.T, n int) *hearth.Hearth {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for i := 1; i <= n; i++ {
		if _, err := j.Append(context.Background(), journal.Record{Role: "user", Text: fmt.Sprintf("t%d", i), Mode: "text", TS: day0.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := hearth.New(hearth.Config{Journal: j, HistoryTurns: 5})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func texts(recs []journal.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

func seq(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("t%d", i))
	}
	return out
}

func TestHistoryQuery(t *testing.T) {
	h := historyCore(t, 30)
	ctx := context.Background()
	all, err := h.History(ctx, hearth.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	id := func(n int) string { return all.Records[n-1].ID }
	for _, tc := range []struct {
		name string
		q    hearth.HistoryQuery
		want []string
	}{
		{"all", hearth.HistoryQuery{}, seq(1, 30)},
		{"the newest 3", hearth.HistoryQuery{Limit: 3}, seq(28, 30)},
		{"more than there are", hearth.HistoryQuery{Limit: 100}, seq(1, 30)},
		{"since", hearth.HistoryQuery{Since: day0.Add(25 * time.Hour)}, seq(25, 30)},
		{"since, the newest 2", hearth.HistoryQuery{Since: day0.Add(25 * time.Hour), Limit: 2}, seq(29, 30)},
		{"since, more than match", hearth.HistoryQuery{Since: day0.Add(25 * time.Hour), Limit: 10}, seq(25, 30)},
		{"after", hearth.HistoryQuery{After: id(26)}, seq(27, 30)},
		{"after, the newest 2", hearth.HistoryQuery{After: id(10), Limit: 2}, seq(29, 30)},
		{"since the future", hearth.HistoryQuery{Since: day0.AddDate(1, 0, 0)}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := h.History(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, texts(p.Records)); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if p.More {
				t.Errorf("more on a selection that fits a page")
			}
		})
	}
	// A forgotten record is not history; its tombstone is not a turn.
	if _, err := h.Forget(ctx, hearth.ForgetRequest{IDs: []string{id(29)}, By: hearth.ByOwner}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []hearth.HistoryQuery{{}, {Limit: 3}, {Limit: 50}, {After: id(27)}, {Since: day0.Add(28 * time.Hour)}} {
		p, err := h.History(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got := texts(p.Records)
		if slices.Contains(got, "t29") || len(got) == 0 || got[len(got)-1] != "t30" {
			t.Errorf("after forgetting t29, %+v read %q", q, got)
		}
	}

	var p *hearth.Problem
	if _, err := h.History(ctx, hearth.HistoryQuery{Limit: -1}); !errors.As(err, &p) || p.Code != hearth.CodeBadRequest {
		t.Errorf("negative limit: %v, want bad_request", err)
	}
}

// A selection larger than a page comes in pages, continued by After.
func TestHistoryQueryPages(t *testing.T) {
	n := hearth.MaxHistoryPage + 20
	h := historyCore(t, n)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		limit int
		first string // the first record of the selection
	}{
		{"all", 0, "t1"},
		{"the newest page and a bit", hearth.MaxHistoryPage + 5, "t16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := hearth.HistoryQuery{Limit: tc.limit}
			var got []string
			for pages := 1; ; pages++ {
				p, err := h.History(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Records) > hearth.MaxHistoryPage {
					t.Fatalf("page of %d records", len(p.Records))
				}
				got = append(got, texts(p.Records)...)
				if !p.More {
					if pages != 2 {
						t.Errorf("%d pages, want 2", pages)
					}
					break
				}
				q.After = p.Records[len(p.Records)-1].ID
				if q.Limit > 0 {
					q.Limit -= len(p.Records)
				}
			}
			want := seq(n-max(tc.limit, n)+1, n)
			if tc.limit > 0 {
				want = seq(n-tc.limit+1, n)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records over the pages (-want +got):\n%s", diff)
			}
			if got[0] != tc.first {
				t.Errorf("first record %s, want %s", got[0], tc.first)
			}
		})
	}
}
