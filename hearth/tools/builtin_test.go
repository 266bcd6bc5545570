package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

func TestKeywordSearch(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 12, 0, 0, 0, time.UTC) }
	recs := []Rec{
		{ID: "1", Role: "user", Text: "I adopted a cat named Miso", TS: day(1)},
		{ID: "2", Role: "agent", Text: "Miso the CAT likes tuna.", TS: day(2)},
		{ID: "3", Role: "user", Text: "The weather is nice", TS: day(3)},
		{ID: "4", Role: "user", Text: "my cat, my cat, my cat", TS: day(4)},
		{ID: "5", Role: "user", Text: "miso soup recipe", TS: day(4)},
		{ID: "6", Role: "user", Text: "category theory", TS: day(5)}, // "cat" is a term, not a substring
	}
	scan := func(ctx context.Context, fn func(Rec) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	search := KeywordSearch(scan)
	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, fmt.Sprintf("%s:%.2f", h.ID, h.Score))
		}
		return out
	}
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
			hits, err := search(t.Context(), tc.query, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(hits)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	boom := errors.New("disk gone")
	_, err := KeywordSearch(func(context.Context, func(Rec) error) error { return boom })(t.Context(), "cat", 3)
	if !errors.Is(err, boom) {
		t.Errorf("scan error: got %v, want it wrapped", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := search(ctx, "cat", 3); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestMemorySearch(t *testing.T) {
	var gotK int
	search := func(ctx context.Context, q string, k int) ([]Hit, error) {
		gotK = k
		if q == "fail" {
			return nil, errors.New("index offline")
		}
		if q == "none" {
			return nil, nil
		}
		return []Hit{
			{ID: "01A", Role: "user", Text: "line one\nline two", TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Score: 0.875},
			{ID: "01B", Role: "agent", Text: strings.Repeat("long ", 200), TS: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Score: 0.5},
		}, nil
	}
	b := MemorySearch(search)
	for _, tc := range []struct {
		name, args string
		wantK      int
		want       Result
		wantErr    bool
	}{
		{"default k", `{"query":"cats"}`, 10, Result{Text: "2 results for \"cats\":\n1. [2026-01-02T03:04:05Z] user (id 01A, score 0.88): line one line two\n2. [2026-01-01T00:00:00Z] agent (id 01B, score 0.50): " + strings.Repeat("long ", 79) + "lo…"}, false},
		{"k capped", `{"query":"none","k":500}`, 50, Result{Text: `no memories match "none"`}, false},
		{"k given", `{"query":"none","k":3}`, 3, Result{Text: `no memories match "none"`}, false},
		{"empty query", `{"query":"  "}`, 0, Result{Text: "query is required", IsError: true}, false},
		{"search fails", `{"query":"fail"}`, 10, Result{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotK = 0
			got, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if gotK != tc.wantK {
				t.Errorf("k = %d, want %d", gotK, tc.wantK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	var all []Rec
	for i := range 300 {
		text := fmt.Sprintf("turn %d", i)
		if i%100 == 7 {
			text += " about Paris\nand more"
		}
		all = append(all, Rec{ID: fmt.Sprint(i), Role: []string{"user", "agent"}[i%2], Text: text, TS: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)})
	}
	var asked int
	tail := func(n int) ([]Rec, error) {
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
	empty := History(func(int) ([]Rec, error) { return nil, nil })
	if got, _ := empty.Run(t.Context(), nil); got.Text != "no turns yet" {
		t.Errorf("empty history = %q", got.Text)
	}
	failing := History(func(int) ([]Rec, error) { return nil, errors.New("journal locked") })
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
