package recallbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/recall"
)

func TestRunScores(t *testing.T) {
	ds := &Dataset{
		Name:       "fixed",
		Separate:   []string{"5"},
		Categories: map[string]string{"1": "multi-hop", "5": "adversarial"},
		Groups: []*Group{{
			ID: "g",
			Docs: []Doc{
				{ID: "d1", Text: "one", Session: "s1"},
				{ID: "d2", Text: "two", Session: "s1"},
				{ID: "d3", Text: "three", Session: "s2"},
				{ID: "d4", Text: "four"}, // its own session
			},
			Queries: []Query{
				{ID: "qa", Text: "a", Relevant: []string{"d1", "d3"}, Category: "1"},
				{ID: "qb", Text: "b", Relevant: []string{"d4"}, Category: "1"},
				{ID: "qc", Text: "c", Relevant: []string{"d2"}, Category: "5"},
			},
		}},
	}
	rank := map[string][]string{
		"a": {"d3", "d2", "d1"},
		"b": {"d1"},
		"c": {"d2", "d2", "d4"}, // a repeat is dropped
	}
	tmp := t.TempDir()
	got, err := Run(context.Background(), ds, fixedBackend(rank), Options{Ks: []int{2, 1}, TempDir: tmp, PerQuery: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Per query, hand-computed (nDCG at k=2 with two gold: 1/(1+1/log2(3))):
	//   qa turn  k1 R.5 H1 A0 N1;  k2 R.5 H1 A0 N.613147
	//   qa sess  [s2 s1] vs {s1 s2}: k1 R.5 H1 A0 N1; k2 all 1
	//   qb       nothing
	//   qc       all 1
	m := func(r, h, a, n float64) Metrics { return Metrics{Recall: r, Hit: h, All: a, NDCG: n} }
	want := []Row{
		{Key: "1", Label: "1 multi-hop", N: 2,
			Turn:    []Metrics{m(.25, .5, 0, .5), m(.25, .5, 0, .306574)},
			Session: []Metrics{m(.25, .5, 0, .5), m(.5, .5, .5, .5)}},
		{Key: KeyOverall, Label: "overall (1)", N: 2,
			Turn:    []Metrics{m(.25, .5, 0, .5), m(.25, .5, 0, .306574)},
			Session: []Metrics{m(.25, .5, 0, .5), m(.5, .5, .5, .5)}},
		{Key: "5", Label: "5 adversarial", N: 1,
			Turn:    []Metrics{m(1, 1, 1, 1), m(1, 1, 1, 1)},
			Session: []Metrics{m(1, 1, 1, 1), m(1, 1, 1, 1)}},
		{Key: KeyAll, Label: "all (1, 5)", N: 3,
			Turn:    []Metrics{m(.5, 2./3, 1./3, 2./3), m(.5, 2./3, 1./3, .537716)},
			Session: []Metrics{m(.5, 2./3, 1./3, 2./3), m(2./3, 2./3, 2./3, 2./3)}},
	}
	if len(got.Modes) != 1 || got.Modes[0].Mode != ModeLexical {
		t.Fatalf("Run without an embedder: got modes %v, want [lexical]", got.Modes)
	}
	if diff := cmp.Diff(want, got.Modes[0].Rows, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("rows mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2}, got.Ks); diff != "" {
		t.Errorf("Ks mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"d2", "d4"}, got.Modes[0].Queries[2].Ranked); diff != "" {
		t.Errorf("qc ranking mismatch (-want +got):\n%s", diff)
	}
	if got.Docs != 4 || got.Queries != 3 || got.Groups != 1 {
		t.Errorf("counts: got %d groups, %d docs, %d queries; want 1, 4, 3", got.Groups, got.Docs, got.Queries)
	}
	// memIndex writes "one\ntwo\nthree\nfour\n" when closed.
	if got.Index.Bytes != 19 {
		t.Errorf("index bytes: got %d, want 19", got.Index.Bytes)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("temp dir after Run: %v, %v; want empty", left, err)
	}
}

func TestRunModes(t *testing.T) {
	f, err := os.Open("testdata/locomo_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ds, _, err := ReadLoCoMo(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), ds, memBackend(hashEmbedder{dim: 64}), Options{TempDir: t.TempDir(), Batch: 2, PerQuery: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var modes []string
	for _, m := range res.Modes {
		modes = append(modes, m.Mode)
		var labels []string
		var ns []int
		for _, r := range m.Rows {
			labels = append(labels, r.Label)
			ns = append(ns, r.N)
		}
		wantLabels := []string{"1 multi-hop", "2 temporal", "4 single-hop", "overall (1, 2, 4)", "5 adversarial", "all (1, 2, 4, 5)"}
		if diff := cmp.Diff(wantLabels, labels); diff != "" {
			t.Errorf("%s row labels mismatch (-want +got):\n%s", m.Mode, diff)
		}
		if diff := cmp.Diff([]int{1, 1, 2, 4, 1, 5}, ns); diff != "" {
			t.Errorf("%s row sizes mismatch (-want +got):\n%s", m.Mode, diff)
		}
		if m.P95 < m.P50 || m.P50 <= 0 {
			t.Errorf("%s latency: p50 %v, p95 %v", m.Mode, m.P50, m.P95)
		}
	}
	if diff := cmp.Diff(AllModes(), modes); diff != "" {
		t.Errorf("modes mismatch (-want +got):\n%s", diff)
	}
	if res.Embedder != "hash (64 dims)" {
		t.Errorf("embedder: got %q, want %q", res.Embedder, "hash (64 dims)")
	}
	// "Which instrument is Cy learning?" shares "cy" and "learn" with
	// conv-b's D1:1 only.
	for _, m := range res.Modes {
		q := m.Queries[len(m.Queries)-1]
		if q.Group != "conv-b" || len(q.Ranked) == 0 || q.Ranked[0] != "D1:1" {
			t.Errorf("%s: conv-b q1 ranked %v, want D1:1 first", m.Mode, q.Ranked)
		}
	}
}

func TestRunErrors(t *testing.T) {
	ds := &Dataset{Groups: []*Group{{ID: "g", Docs: []Doc{{ID: "d", Text: "x"}}, Queries: []Query{{ID: "q", Text: "x", Relevant: []string{"d"}}}}}}
	failing := fixedBackend(nil)
	errSearch := errors.New("search down")
	failing.Searcher = func(recall.Index, string) (SearchFunc, error) {
		return func(context.Context, SearchQuery) ([]string, error) { return nil, errSearch }, nil
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		b       Backend
		o       Options
		wantErr error
	}{
		{"unknown mode", context.Background(), fixedBackend(nil), Options{Modes: []string{"semantic"}}, nil},
		{"vector without embedder", context.Background(), fixedBackend(nil), Options{Modes: []string{ModeVector}}, nil},
		{"cutoff zero", context.Background(), fixedBackend(nil), Options{Ks: []int{0, 10}}, nil},
		{"no Open", context.Background(), Backend{}, Options{}, nil},
		{"search fails", context.Background(), failing, Options{}, errSearch},
		{"canceled", canceled, fixedBackend(nil), Options{}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.TempDir = t.TempDir()
			_, err := Run(tt.ctx, ds, tt.b, tt.o)
			if err == nil {
				t.Fatalf("Run: no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Run: got %v, want errors.Is %v", err, tt.wantErr)
			}
		})
	}
}

func TestSpan(t *testing.T) {
	tests := []struct {
		cats []string
		want string
	}{
		{[]string{"1", "2", "3", "4"}, " (1–4)"},
		{[]string{"1", "2"}, " (1, 2)"},
		{[]string{"1", "3"}, " (1, 3)"},
		{[]string{"5"}, " (5)"},
		{[]string{"a", "b"}, " (a, b)"},
		{[]string{""}, " ((none))"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, ""},
		{[]string{"1", "2", "3", "4", "5", "6", "7"}, " (1–7)"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := span(tt.cats); got != tt.want {
			t.Errorf("span(%q) = %q, want %q", tt.cats, got, tt.want)
		}
	}
}

func TestRecallDocsContext(t *testing.T) {
	g := &Group{ID: "g", Docs: []Doc{
		{ID: "a", Text: "A", Session: "1"},
		{ID: "b", Text: "B", Session: "1"},
		{ID: "c", Text: "C", Session: "1"},
		{ID: "d", Text: "D", Session: "1"},
		{ID: "e", Text: "E", Session: "2"}, // a new session starts empty
		{ID: "f", Text: "F"},               // no session: no context, not remembered
		{ID: "g", Text: "G", Session: "2"}, // not consecutive with e: starts empty
	}}
	tests := []struct {
		turns int
		want  []string
	}{
		{0, []string{"", "", "", "", "", "", ""}},
		{-1, []string{"", "", "", "", "", "", ""}},
		{1, []string{"", "A", "B", "C", "", "", ""}},
		{2, []string{"", "A", "A\nB", "B\nC", "", "", ""}},
		{3, []string{"", "A", "A\nB", "A\nB\nC", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.turns), func(t *testing.T) {
			docs := RecallDocs(g, tt.turns)
			var got []string
			for i, d := range docs {
				if d.Text != g.Docs[i].Text || d.ID != g.Docs[i].ID {
					t.Errorf("doc %d = %q %q, want %q %q", i, d.ID, d.Text, g.Docs[i].ID, g.Docs[i].Text)
				}
				got = append(got, d.Context)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("contexts (-want +got):\n%s", diff)
			}
		})
	}
}
