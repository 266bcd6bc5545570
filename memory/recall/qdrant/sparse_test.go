package qdrant

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/recall"
)

func TestDocSparse(t *testing.T) {
	id := recall.TermID
	sat := func(tf, n, avgdl float64) float32 {
		return float32(tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*n/avgdl)))
	}
	// A document's own words count recall.TextWeight (2) times, its
	// context's once.
	tests := []struct {
		name  string
		text  string
		ctx   string
		avgdl float64
		want  map[uint32]float32
		n     int
	}{
		{"empty", "", "", 5, map[uint32]float32{}, 0},
		{"stopwords only", "the of and", "", 5, map[uint32]float32{}, 0},
		{"one term", "Guitar", "", 2, map[uint32]float32{id("guitar"): sat(2, 2, 2)}, 2},
		{"repeated term saturates", "apple apple apple banana", "", 8, map[uint32]float32{id("appl"): sat(6, 8, 8), id("banana"): sat(2, 8, 8)}, 8},
		{"longer than average", "apple banana", "", 1, map[uint32]float32{id("appl"): sat(2, 4, 1), id("banana"): sat(2, 4, 1)}, 4},
		{"no average yet", "apple", "", 0, map[uint32]float32{id("appl"): sat(2, 2, 2)}, 2},
		{"shared tokenizer", "We went HIKING!", "", 4, map[uint32]float32{id("went"): sat(2, 4, 4), id("hike"): sat(2, 4, 4)}, 4},
		{"context counts once", "apple", "banana apple", 5, map[uint32]float32{id("appl"): sat(3, 4, 5), id("banana"): sat(1, 4, 5)}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts, n := termCounts(recall.Doc{Text: tt.text, Context: tt.ctx})
			if n != tt.n {
				t.Errorf("length = %d, want %d", n, tt.n)
			}
			v := docSparse(counts, n, tt.avgdl)
			got := map[uint32]float32{}
			for i, ind := range v.indices {
				got[ind] = v.values[i]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("docSparse(%q) (-want +got):\n%s", tt.text, diff)
			}
			if !slices.IsSorted(v.indices) {
				t.Errorf("indices %v not sorted", v.indices)
			}
		})
	}
}

func TestQuerySparse(t *testing.T) {
	id := recall.TermID
	tests := []struct {
		query string
		want  []uint32
	}{
		{"", nil},
		{"the", nil},
		{"\xff\xfe", nil},
		{"coffee coffee espresso", []uint32{id("coffe"), id("espresso")}},
	}
	for _, tt := range tests {
		v := querySparse(tt.query)
		want := slices.Sorted(slices.Values(tt.want))
		if diff := cmp.Diff(want, v.indices, cmpEmpty); diff != "" {
			t.Errorf("querySparse(%q) indices (-want +got):\n%s", tt.query, diff)
		}
		for _, x := range v.values {
			if x != 1 {
				t.Errorf("querySparse(%q) values = %v, want all 1", tt.query, v.values)
				break
			}
		}
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []uint32) bool { return len(a) == 0 && len(b) == 0 || slices.Equal(a, b) })

// FuzzSparse checks the invariants Qdrant needs of a sparse vector: as
// many values as indices, indices strictly ascending (hence unique),
// values finite and positive, and BM25's bound tf saturation < k1+1.
func FuzzSparse(f *testing.F) {
	for _, seed := range []string{"", "the", "Guitar", "apple apple apple banana", "We went HIKING!", "abc\xff\xfedef \xc3", "我喜欢喝咖啡", "🍕🍕 pizza", "a'b c's d’e"} {
		f.Add(seed, 4.0)
	}
	f.Add("word", 0.0)
	f.Add("word", -3.0)
	f.Add("word", math.Inf(1))
	f.Add("word", math.NaN())
	f.Add("word", 1e-300)
	f.Fuzz(func(t *testing.T, text string, avgdl float64) {
		counts, n := termCounts(recall.Doc{Text: text})
		if want := recall.TextWeight * len(recall.Tokens(text)); n != want {
			t.Fatalf("length %d, want %d tokens", n, want)
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		if total != n {
			t.Fatalf("counts add up to %d, want %d", total, n)
		}
		for _, v := range []sparseVec{docSparse(counts, n, avgdl), querySparse(text)} {
			if len(v.indices) != len(v.values) {
				t.Fatalf("%d indices, %d values", len(v.indices), len(v.values))
			}
			if len(v.indices) != len(counts) {
				t.Fatalf("%d indices for %d distinct terms", len(v.indices), len(counts))
			}
			for i := 1; i < len(v.indices); i++ {
				if v.indices[i] <= v.indices[i-1] {
					t.Fatalf("indices not strictly ascending: %v", v.indices)
				}
			}
			for _, x := range v.values {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || x <= 0 || x >= bm25K1+1+1e-6 {
					t.Fatalf("value %v out of (0, k1+1)", x)
				}
			}
		}
	})
}
