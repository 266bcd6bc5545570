package recallbench

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadLoCoMo(t *testing.T) {
	f, err := os.Open("testdata/locomo_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, st, err := ReadLoCoMo(f)
	if err != nil {
		t.Fatalf("ReadLoCoMo: %v", err)
	}
	may8 := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	june1 := time.Date(2023, 6, 1, 0, 5, 0, 0, time.UTC)
	march20 := time.Date(2022, 3, 20, 15, 30, 0, 0, time.UTC)
	want := &Dataset{
		Name:       "locomo10",
		Separate:   []string{"5"},
		Categories: map[string]string{"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"},
		References: []Reference{{
			Label:    "DRAGON (LoCoMo paper, Table 3)",
			All:      map[int]float64{5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827},
			Recall10: map[string]float64{"1": 0.466, "2": 0.773, "3": 0.408, "4": 0.777},
		}},
		Groups: []*Group{
			{
				ID: "conv-a",
				Docs: []Doc{
					{ID: "D1:1", Text: "(1:56 pm on 8 May, 2023) Ada: Hi Bo! I adopted a grey kitten yesterday.", TS: may8, Speaker: "Ada", Session: "1"},
					{ID: "D1:2", Text: "(1:56 pm on 8 May, 2023) Bo: Lovely! What is her name?", TS: may8.Add(time.Second), Speaker: "Bo", Session: "1"},
					{ID: "D1:3", Text: "(1:56 pm on 8 May, 2023) Ada: Pepper. Look at her! [image: a photo of a small grey cat on a sofa]", TS: may8.Add(2 * time.Second), Speaker: "Ada", Session: "1"},
					{ID: "D2:1", Text: "(12:05 am on 1 June, 2023) Bo: I ran my first marathon in Lisbon last weekend.", TS: june1, Speaker: "Bo", Session: "2"},
					{ID: "D2:2", Text: "(12:05 am on 1 June, 2023) Ada: Congratulations! How long did it take?", TS: june1.Add(time.Second), Speaker: "Ada", Session: "2"},
					{ID: "D2:3", Text: "(12:05 am on 1 June, 2023) Bo: Four hours and ten minutes.", TS: june1.Add(2 * time.Second), Speaker: "Bo", Session: "2"},
				},
				Queries: []Query{
					{ID: "q1", Text: "What is the name of Ada's kitten?", Relevant: []string{"D1:3"}, Category: "4"},
					{ID: "q2", Text: "Where did Bo run a marathon and how long did it take?", Relevant: []string{"D2:1", "D2:3"}, Category: "1"},
					{ID: "q3", Text: "When did Ada adopt the kitten?", Relevant: []string{"D1:1"}, Category: "2"},
					// q4 has only an unknown id: skipped.
					{ID: "q5", Text: "What is the name of Bo's kitten?", Relevant: []string{"D1:2", "D1:3"}, Category: "5"},
				},
			},
			{
				ID: "conv-b",
				Docs: []Doc{
					{ID: "D1:1", Text: "(3:30 pm on 20 March, 2022) Cy: I started learning the cello.", TS: march20, Speaker: "Cy", Session: "1"},
					{ID: "D1:2", Text: "(3:30 pm on 20 March, 2022) Di: Which piece are you practising?", TS: march20.Add(time.Second), Speaker: "Di", Session: "1"},
				},
				Queries: []Query{
					{ID: "q1", Text: "Which instrument is Cy learning?", Relevant: []string{"D1:1"}, Category: "4"},
				},
			},
		},
	}
	if diff := cmp.Diff(want, got, timeEqual); diff != "" {
		t.Errorf("ReadLoCoMo mismatch (-want +got):\n%s", diff)
	}
	// Dropped: D9:9, D7:1 and "D"; q4 is left without gold.
	wantStats := LoCoMoStats{Questions: 6, DroppedEvidence: 3, SkippedQuestions: 1}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		t.Errorf("ReadLoCoMo stats mismatch (-want +got):\n%s", diff)
	}
}

func TestReadLoCoMoErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"not json", `{`},
		{"not a list", `{"sample_id":"a"}`},
		{"empty list", `[]`},
		{"no sample id", `[{"conversation":{}}]`},
		{"duplicate sample id", `[{"sample_id":"a","conversation":{}},{"sample_id":"a","conversation":{}}]`},
		{"session without date", `[{"sample_id":"a","conversation":{"session_1":[]}}]`},
		{"bad date", `[{"sample_id":"a","conversation":{"session_1_date_time":"May 8","session_1":[]}}]`},
		{"bad dia id", `[{"sample_id":"a","conversation":{"session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[{"speaker":"A","dia_id":"X1","text":"x"}]}}]`},
		{"duplicate dia id", `[{"sample_id":"a","conversation":{"session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[{"speaker":"A","dia_id":"D1:1","text":"x"},{"speaker":"A","dia_id":"D1:01","text":"y"}]}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := ReadLoCoMo(strings.NewReader(tt.in)); err == nil {
				t.Errorf("ReadLoCoMo(%s): no error", tt.in)
			}
		})
	}
}

func TestNormEvidence(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"D1:3", "D1:3", true},
		{"D:11:26", "D11:26", true},
		{"D30:05", "D30:5", true},
		{"D010:007", "D10:7", true},
		{"D", "", false},
		{"D1", "", false},
		{"D1:", "", false},
		{"d1:3", "", false},
		{"D1:3:4", "", false},
		{"D-1:3", "", false},
		{"D1:3x", "", false},
	}
	for _, tt := range tests {
		got, ok := normEvidence(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("normEvidence(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestEvidenceSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"D8:6; D9:17", []string{"D8:6", "D9:17"}},
		{"D9:1 D4:4 D4:6", []string{"D9:1", "D4:4", "D4:6"}},
		{"D1:2,D1:3", []string{"D1:2", "D1:3"}},
		{" ; ", []string{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, strings.FieldsFunc(tt.in, evidenceSep)); diff != "" {
			t.Errorf("split %q mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzReadLoCoMo(f *testing.F) {
	seed, err := os.ReadFile("testdata/locomo_tiny.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add(`[{"sample_id":"a","conversation":{"session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[{"speaker":"A","dia_id":"D1:1","text":"x"}]},"qa":[{"question":"q","evidence":["D:1:01; D2"],"category":1}]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		ds, _, err := ReadLoCoMo(strings.NewReader(in))
		if err != nil {
			return
		}
		// Every gold id of a converted query is a doc of its group.
		for _, g := range ds.Groups {
			ids := map[string]bool{}
			for _, d := range g.Docs {
				ids[d.ID] = true
			}
			for _, q := range g.Queries {
				if len(q.Relevant) == 0 {
					t.Errorf("%s %s: no gold", g.ID, q.ID)
				}
				for _, id := range q.Relevant {
					if !ids[id] {
						t.Errorf("%s %s: gold %q is not a doc", g.ID, q.ID, id)
					}
				}
			}
		}
	})
}
