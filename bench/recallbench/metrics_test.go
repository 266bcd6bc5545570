package recallbench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScore(t *testing.T) {
	ranked := []string{"a", "x", "b", "y", "c"}
	gold := []string{"a", "b", "c", "d"}
	tests := []struct {
		name   string
		ranked []string
		gold   []string
		k      int
		want   Metrics
	}{
		// Hand-computed: DCG sums 1/log2(rank+1) over gold in the top k,
		// the ideal DCG puts min(|gold|, k) gold at the top.
		{"first only", ranked, gold, 1, Metrics{Recall: 0.25, Hit: 1, All: 0, NDCG: 1}},
		// DCG 1 + 1/2 = 1.5; ideal 1 + 1/log2(3) + 1/2 = 2.130930.
		{"two of four in top 3", ranked, gold, 3, Metrics{Recall: 0.5, Hit: 1, NDCG: 0.703918}},
		// DCG 1 + 1/2 + 1/log2(6); ideal 1 + 1/log2(3) + 1/2 + 1/log2(5).
		{"three of four in top 5", ranked, gold, 5, Metrics{Recall: 0.75, Hit: 1, NDCG: 0.736590}},
		{"k beyond the ranking", ranked, gold, 50, Metrics{Recall: 0.75, Hit: 1, NDCG: 0.736590}},
		{"single gold at rank 3", ranked, []string{"b"}, 5, Metrics{Recall: 1, Hit: 1, All: 1, NDCG: 0.5}},
		{"single gold below the cutoff", ranked, []string{"b"}, 2, Metrics{}},
		// DCG 1/log2(3); ideal 1 + 1/log2(3).
		{"both gold, second late", []string{"x", "a", "b"}, []string{"a", "b"}, 2, Metrics{Recall: 0.5, Hit: 1, NDCG: 0.386853}},
		{"all at the top", []string{"a", "b", "x"}, []string{"b", "a"}, 2, Metrics{Recall: 1, Hit: 1, All: 1, NDCG: 1}},
		{"repeated gold counts once", []string{"a"}, []string{"a", "a"}, 5, Metrics{Recall: 1, Hit: 1, All: 1, NDCG: 1}},
		{"nothing ranked", nil, gold, 10, Metrics{}},
		{"no gold", ranked, nil, 10, Metrics{}},
		{"k zero", ranked, gold, 0, Metrics{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.ranked, tt.gold, tt.k)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("Score(%q, %q, %d) mismatch (-want +got):\n%s", tt.ranked, tt.gold, tt.k, diff)
			}
		})
	}
}

func TestCollapse(t *testing.T) {
	session := func(id string) string { s, _, _ := strings.Cut(id, ":"); return s }
	tests := []struct {
		name   string
		ranked []string
		want   []string
	}{
		{"first seen order", []string{"D1:3", "D2:1", "D1:1", "D3:4", "D2:2"}, []string{"D1", "D2", "D3"}},
		{"one session", []string{"D5:1", "D5:2"}, []string{"D5"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Collapse(tt.ranked, session)); diff != "" {
				t.Errorf("Collapse(%q) mismatch (-want +got):\n%s", tt.ranked, diff)
			}
		})
	}
}

func TestSessionScore(t *testing.T) {
	// Gold turns in sessions 1 and 3; the ranking reaches session 3 third.
	session := func(id string) string { s, _, _ := strings.Cut(id, ":"); return s }
	ranked := Collapse([]string{"D1:3", "D2:1", "D1:1", "D3:4", "D2:2"}, session)
	gold := Collapse([]string{"D1:1", "D3:4"}, session)
	tests := []struct {
		k    int
		want Metrics
	}{
		{1, Metrics{Recall: 0.5, Hit: 1, NDCG: 1}},
		// DCG 1; ideal 1 + 1/log2(3).
		{2, Metrics{Recall: 0.5, Hit: 1, NDCG: 0.613147}},
		// DCG 1 + 1/2; ideal 1 + 1/log2(3).
		{3, Metrics{Recall: 1, Hit: 1, All: 1, NDCG: 0.919721}},
	}
	for _, tt := range tests {
		got := Score(ranked, gold, tt.k)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
			t.Errorf("session Score at k=%d mismatch (-want +got):\n%s", tt.k, diff)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"median of five", ms(5, 1, 3, 2, 4), 50, 3 * time.Millisecond},
		{"p95 of five", ms(5, 1, 3, 2, 4), 95, 5 * time.Millisecond},
		{"median of ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 50, 5 * time.Millisecond},
		{"p95 of twenty", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 95, 19 * time.Millisecond},
		{"one", ms(7), 95, 7 * time.Millisecond},
		{"none", nil, 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
			}
		})
	}
}
