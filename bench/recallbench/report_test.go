package recallbench

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// goldenResult is a Result with fixed numbers.
func goldenResult() *Result {
	ms := func(base float64) []Metrics {
		var out []Metrics
		for i := range 4 {
			x := base + 0.05*float64(i)
			out = append(out, Metrics{Recall: x, Hit: x + 0.1, All: x - 0.1, NDCG: x - 0.05})
		}
		return out
	}
	rows := func(shift float64) []Row {
		return []Row{
			{Key: "1", Label: "1 multi-hop", N: 282, Turn: ms(0.3 + shift), Session: ms(0.5 + shift)},
			{Key: "2", Label: "2 temporal", N: 321, Turn: ms(0.6 + shift), Session: ms(0.7 + shift)},
			{Key: KeyOverall, Label: "overall (1–2)", N: 603, Turn: ms(0.45 + shift), Session: ms(0.6 + shift)},
			{Key: "5", Label: "5 adversarial", N: 446, Turn: ms(0.4 + shift), Session: ms(0.55 + shift)},
			{Key: KeyAll, Label: "all (1, 2, 5)", N: 1049, Turn: ms(0.43 + shift), Session: ms(0.58 + shift)},
		}
	}
	return &Result{
		Dataset:  "golden",
		Groups:   10,
		Docs:     5882,
		Queries:  1049,
		Ks:       DefaultKs(),
		Embedder: "wordvec:test (100 dims)",
		Index:    IndexStats{Time: 1500 * time.Millisecond, Embed: 250 * time.Millisecond, Bytes: 3 << 20},
		Modes: []ModeResult{
			{Mode: ModeLexical, P50: 420 * time.Microsecond, P95: 1234 * time.Microsecond, Rows: rows(0)},
			{Mode: ModeHybrid, P50: 2 * time.Millisecond, P95: 3500 * time.Microsecond, Rows: rows(0.02)},
		},
		References: []Reference{{
			Label:    "DRAGON",
			All:      map[int]float64{5: 0.567, 10: 0.662},
			Recall10: map[string]float64{"1": 0.466},
		}},
		Notes: []string{"a note about the run"},
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, goldenResult()); err != nil {
		t.Fatalf("WriteMarkdown: %v", err)
	}
	golden(t, "report.golden.md", buf.Bytes())
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, goldenResult()); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var got Result
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if diff := cmp.Diff(goldenResult(), &got); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestThousands(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {5882, "5,882"}, {1234567, "1,234,567"}, {-1234, "-1,234"},
	}
	for _, tt := range tests {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
