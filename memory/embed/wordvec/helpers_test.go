package wordvec_test

import (
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo/mnemo/memory/embed/embedtest"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
)

const tinyDim = 8

// tinyVocab is the vocabulary of the test model: ranks roughly as in the
// real data, so SIF weights behave alike. Related words share a direction.
func tinyWords() []wordvec.Word {
	axis := func(k int, scale float32) []float32 {
		v := make([]float32, tinyDim)
		v[k] = scale
		return v
	}
	mix := func(a, b []float32, wb float32) []float32 {
		v := make([]float32, tinyDim)
		for i := range v {
			v[i] = a[i] + wb*b[i]
		}
		return v
	}
	animal, money, drink := axis(0, 1), axis(1, 1), axis(2, 1)
	words := []wordvec.Word{
		{Text: "the", Rank: 0, Vector: mix(axis(7, 2), axis(6, 1), 1)},
		{Text: "dog", Rank: 2768, Vector: mix(animal, axis(3, 1), 0.3)},
		{Text: "puppy", Rank: 21151, Vector: mix(animal, axis(3, 1), 0.5)},
		{Text: "cat", Rank: 3500, Vector: mix(animal, axis(4, 1), 0.4)},
		{Text: "kitten", Rank: 30000, Vector: mix(animal, axis(4, 1), 0.6)},
		{Text: "tax", Rank: 655, Vector: mix(money, axis(5, 1), 0.3)},
		{Text: "money", Rank: 400, Vector: mix(money, axis(5, 1), 0.2)},
		{Text: "bank", Rank: 700, Vector: mix(money, axis(6, 1), 0.2)},
		{Text: "coffee", Rank: 5000, Vector: mix(drink, axis(3, 1), 0.1)},
		{Text: "tea", Rank: 6000, Vector: mix(drink, axis(4, 1), 0.1)},
		{Text: "café", Rank: 40000, Vector: mix(drink, axis(5, 1), 0.2)},
	}
	have := make(map[string]bool)
	for _, w := range words {
		have[w.Text] = true
	}
	// The conformance vocabulary, with hash-derived vectors and ranks.
	for i, w := range embedtest.Words() {
		if have[w] {
			continue
		}
		have[w] = true
		words = append(words, wordvec.Word{Text: w, Rank: 100000 + i, Vector: hashVector(w)})
	}
	return words
}

func hashVector(w string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(w))
	s := h.Sum64()
	v := make([]float32, tinyDim)
	for i := range v {
		s = s*6364136223846793005 + 1442695040888963407
		v[i] = float32(int64(s>>11)%2001-1000) / 1000
	}
	return v
}

// tinyFile writes the test model and returns its path.
func tinyFile(t testing.TB) string {
	t.Helper()
	data, err := wordvec.Encode(tinyDim, 400000, tinyWords())
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	path := filepath.Join(t.TempDir(), "tiny.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func tinyModel(t testing.TB) *wordvec.Model {
	t.Helper()
	m, err := wordvec.Load(tinyFile(t))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

func unit(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(ss))
	}
	return out
}
