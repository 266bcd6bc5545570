package wordvec_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/recall"
)

var _ recall.Reranker = (*wordvec.Embedder)(nil)

// rerankVocab is the vocabulary of rerankWords' model.
const rerankVocab = 400000

// rerankWords is a model whose similarities are known exactly: words on
// orthogonal axes are unrelated, "espresso" is close to "coffee" and
// "latte" less so, "down" points away from "up", "void" has the zero
// vector. Ranks set the SIF weights: "the" is common, "kitten" rare.
func rerankWords() []wordvec.Word {
	vec := func(xs ...float32) []float32 { return append(xs, make([]float32, tinyDim-len(xs))...) }
	return []wordvec.Word{
		{Text: "the", Rank: 0, Vector: vec(0, 0, 0, 0, 0, 0, 0, 1)},
		{Text: "void", Rank: 50, Vector: vec()},
		{Text: "up", Rank: 100, Vector: vec(0, 0, 0, 1)},
		{Text: "down", Rank: 101, Vector: vec(0, 0, 0, -1)},
		{Text: "tax", Rank: 600, Vector: vec(0, 0, 1)},
		{Text: "coffee", Rank: 5000, Vector: vec(1)},
		{Text: "espresso", Rank: 20000, Vector: vec(1, 0.25)},
		{Text: "latte", Rank: 25000, Vector: vec(1, 1)},
		{Text: "kitten", Rank: 30000, Vector: vec(0, 0, 0, 0, 1)},
	}
}

func rerankModel(t testing.TB) *wordvec.Model {
	t.Helper()
	data, err := wordvec.Encode(tinyDim, rerankVocab, rerankWords())
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	m, err := wordvec.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

// sif is the SIF weight a/(a+p) of a word of rank r, p its Zipf frequency
// in a vocabulary of rerankVocab words.
func sif(a float64, r int) float64 {
	h := 0.0
	for n := rerankVocab; n >= 1; n-- {
		h += 1 / float64(n)
	}
	return a / (a + 1/(float64(r+1)*h))
}

func TestRerankScores(t *testing.T) {
	m := rerankModel(t)
	rank := map[string]int{}
	for _, w := range rerankWords() {
		rank[w.Text] = w.Rank
	}
	// sim is the cosine of two words' stored vectors, negatives 0.
	sim := func(a, b string) float64 {
		va, _ := m.Vector(a)
		vb, _ := m.Vector(b)
		return max(cosine(va, vb), 0)
	}
	for _, a := range []float64{wordvec.DefaultA, 1e-2} {
		e := m.Embedder(wordvec.Options{A: a})
		// share is word's part of a query of words, by SIF weight.
		share := func(word string, query ...string) float64 {
			sum := 0.0
			for _, q := range query {
				sum += sif(a, rank[q])
			}
			return sif(a, rank[word]) / sum
		}
		tests := []struct {
			name  string
			query string
			texts []string
			want  []float64
		}{
			{"an exact match scores 1", "coffee",
				[]string{"coffee", "I like COFFEE!", "tax, coffee and the up"}, []float64{1, 1, 1}},
			{"near-synonyms count in part", "coffee",
				[]string{"espresso", "latte", "a latte, an espresso"},
				[]float64{sim("coffee", "espresso"), sim("coffee", "latte"), sim("coffee", "espresso")}},
			{"unrelated and opposite words score 0", "up",
				[]string{"tax", "down", "down the tax", "up down"}, []float64{0, 0, 0, 1}},
			{"empty and unknown texts score 0", "coffee",
				[]string{"", "   ", "zorblax 42 🙂", "東京 москва", "\xff\xfe", "void", "coffees"}, []float64{0, 0, 0, 0, 0, 0, 0}},
			{"no known query word: all 0", "zorblax 42",
				[]string{"coffee", "zorblax 42"}, []float64{0, 0}},
			{"empty query: all 0", "", []string{"coffee", ""}, []float64{0, 0}},
			{"a zero-vector query word is no word", "void", []string{"void", "coffee"}, []float64{0, 0}},
			{"rare words weigh more", "the kitten",
				[]string{"kitten", "the", "the kitten", "a kitten for the kids"},
				[]float64{share("kitten", "the", "kitten"), share("the", "the", "kitten"), 1, 1}},
			{"repeated query words count once", "coffee tax coffee COFFEE",
				[]string{"coffee", "tax"}, []float64{share("coffee", "coffee", "tax"), share("tax", "coffee", "tax")}},
			{"unknown query words are ignored", "zorblax coffee 42", []string{"coffee", "tax"}, []float64{1, 0}},
			{"each query word takes its best match", "coffee kitten",
				[]string{"espresso", "latte kitten espresso"},
				[]float64{share("coffee", "coffee", "kitten") * sim("coffee", "espresso"), share("coffee", "coffee", "kitten")*sim("coffee", "espresso") + share("kitten", "coffee", "kitten")}},
			{"a long text does not dilute a match", "coffee",
				[]string{strings.Repeat("tax the up ", 100) + "coffee"}, []float64{1}},
			{"no texts", "coffee", nil, []float64{}},
		}
		for _, tt := range tests {
			got, err := e.Rerank(t.Context(), tt.query, tt.texts)
			if err != nil {
				t.Fatalf("a=%v %s: Rerank: %v", a, tt.name, err)
			}
			if len(got) != len(tt.want) || got == nil {
				t.Errorf("a=%v %s: Rerank(%q, %d texts) = %v; want %d scores", a, tt.name, tt.query, len(tt.texts), got, len(tt.want))
				continue
			}
			for i, s := range got {
				if !(math.Abs(float64(s)-tt.want[i]) <= 1e-5) || !(s >= 0 && s <= 1) { // NaN fails
					t.Errorf("a=%v %s: Rerank(%q)[%d] (%.40q) = %v, want %v in [0, 1]", a, tt.name, tt.query, i, tt.texts[i], s, tt.want[i])
				}
			}
		}
	}
}

// TestRerankSelfMatch checks that every word of the tiny model matches
// itself with a score of 1, never above it despite float rounding, and
// that the whole model's vocabulary as one text holds each word's match.
func TestRerankSelfMatch(t *testing.T) {
	var vocab []string
	for _, w := range tinyWords() {
		vocab = append(vocab, w.Text)
	}
	e := tinyModel(t).Embedder(wordvec.Options{})
	all := strings.Join(vocab, " ")
	for _, w := range vocab {
		got, err := e.Rerank(t.Context(), w, []string{w, all})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range got {
			if !(s <= 1 && s >= 1-1e-6) {
				t.Errorf("Rerank(%q)[%d] = %v, want 1 (within 1e-6, not above)", w, i, s)
			}
		}
	}
}

// TestRerankOrder checks the orderings rerank exists for, on the tiny
// model of the other tests as well as on the exact one.
func TestRerankOrder(t *testing.T) {
	tests := []struct {
		model         func(testing.TB) *wordvec.Model
		query         string
		better, worse string
	}{
		{rerankModel, "coffee", "I had an espresso", "I paid my tax"},
		{rerankModel, "coffee", "I had a coffee", "I had an espresso"},
		{rerankModel, "coffee", "I had an espresso", "I had a latte"},
		{rerankModel, "the kitten", "a kitten", "the end"},
		{rerankModel, "tax and coffee", "espresso", "tax"}, // coffee is rarer
		{tinyModel, "dog", "a puppy barked", "the bank charged a tax"},
		{tinyModel, "dog", "the dog barked", "a puppy barked"},
		{tinyModel, "kitten", "my cat", "my money"},
		{tinyModel, "the kitten", "kitten", "the"},
		{tinyModel, "coffee", "tea", "money"},
	}
	for _, tt := range tests {
		e := tt.model(t).Embedder(wordvec.Options{})
		got, err := e.Rerank(t.Context(), tt.query, []string{tt.worse, tt.better})
		if err != nil {
			t.Fatalf("Rerank: %v", err)
		}
		if got[1] <= got[0] {
			t.Errorf("Rerank(%q): %q scores %v, not above %q at %v", tt.query, tt.better, got[1], tt.worse, got[0])
		}
	}
}

// rerankTexts returns n texts of a few words each drawn from the model's
// vocabulary and some unknown words.
func rerankTexts(n int) []string {
	words := []string{"the", "void", "up", "down", "tax", "coffee", "espresso", "latte", "kitten", "zorblax", "42", "Coffee!"}
	rng := rand.New(rand.NewPCG(3, 4))
	texts := make([]string, n)
	for i := range texts {
		ws := make([]string, rng.IntN(6))
		for j := range ws {
			ws[j] = words[rng.IntN(len(words))]
		}
		texts[i] = strings.Join(ws, " ")
	}
	return texts
}

// TestRerankOrderAndLength checks that each score is the text's own,
// whatever else is in the batch.
func TestRerankOrderAndLength(t *testing.T) {
	e := rerankModel(t).Embedder(wordvec.Options{})
	texts := rerankTexts(300)
	for _, query := range []string{"coffee", "the kitten", "up tax espresso", "zorblax"} {
		got, err := e.Rerank(t.Context(), query, texts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(texts) {
			t.Fatalf("Rerank(%q, %d texts): %d scores", query, len(texts), len(got))
		}
		for i, text := range texts {
			one, err := e.Rerank(t.Context(), query, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != one[0] {
				t.Errorf("Rerank(%q): score %d (%q) is %v in the batch, %v alone", query, i, text, got[i], one[0])
			}
		}
		rev := slices.Clone(texts)
		slices.Reverse(rev)
		back, err := e.Rerank(t.Context(), query, rev)
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(back)
		if !slices.Equal(got, back) {
			t.Errorf("Rerank(%q) of the texts reversed is not the scores reversed", query)
		}
	}
}

// TestRerankConcurrent runs Rerank from several goroutines on a fresh
// model (so the lazily built norms are built under contention) and checks
// every result against a serial run; run it with -race.
func TestRerankConcurrent(t *testing.T) {
	texts := rerankTexts(200)
	queries := []string{"coffee", "the kitten", "up tax espresso", "latte down"}
	serial := rerankModel(t).Embedder(wordvec.Options{})
	want := make([][]float32, len(queries))
	for i, q := range queries {
		var err error
		if want[i], err = serial.Rerank(t.Context(), q, texts); err != nil {
			t.Fatal(err)
		}
	}
	e := rerankModel(t).Embedder(wordvec.Options{})
	const workers = 8
	got := make([][]float32, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { got[w], errs[w] = e.Rerank(t.Context(), queries[w%len(queries)], texts) })
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		if !slices.Equal(got[w], want[w%len(queries)]) {
			t.Errorf("worker %d: scores differ from a serial run", w)
		}
	}
}

// cancelAfter is a context whose Err is nil for its first n calls, then
// context.Canceled: a cancellation arriving mid-call.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) >= 0 {
		return nil
	}
	return context.Canceled
}

func TestRerankCancelled(t *testing.T) {
	e := rerankModel(t).Embedder(wordvec.Options{})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name  string
		ctx   func() context.Context
		query string
		n     int
	}{
		{"before, no texts", func() context.Context { return cancelled }, "coffee", 0},
		{"before, one text", func() context.Context { return cancelled }, "coffee", 1},
		{"before, no known query word", func() context.Context { return cancelled }, "zorblax", 10},
		{"before, many texts", func() context.Context { return cancelled }, "coffee", 1000},
		{"during", func() context.Context {
			c := &cancelAfter{Context: context.Background()}
			c.n.Store(1)
			return c
		}, "coffee", 1000},
	}
	for _, tt := range tests {
		got, err := e.Rerank(tt.ctx(), tt.query, rerankTexts(tt.n))
		if !errors.Is(err, context.Canceled) || got != nil {
			t.Errorf("%s: Rerank = %d scores, %v; want nil, context.Canceled", tt.name, len(got), err)
		}
	}
}

// BenchmarkRerank reranks 200 texts of about 30 words with a 6-word query
// over a synthetic 20,000-word model of the real dimension, as a search's
// rerank stage does.
func BenchmarkRerank(b *testing.B) {
	const n, dim, nTexts, textWords = 20000, 100, 200, 30
	rng := rand.New(rand.NewPCG(5, 6))
	m, err := wordvec.Parse(syntheticModel(b, rng, n, dim))
	if err != nil {
		b.Fatal(err)
	}
	e := m.Embedder(wordvec.Options{})
	// Zipf-distributed words, one in ten unknown.
	zipf := rand.NewZipf(rng, 1.1, 2, n-1)
	texts := make([]string, nTexts)
	for i := range texts {
		toks := make([]string, textWords-5+rng.IntN(11))
		for k := range toks {
			toks[k] = synthWord(int(zipf.Uint64()))
			if k%10 == 9 {
				toks[k] = "unknown" + strconv.Itoa(k)
			}
		}
		texts[i] = strings.Join(toks, " ") + "."
	}
	query := strings.Join([]string{synthWord(3), synthWord(150), synthWord(900), synthWord(2500), synthWord(7000), synthWord(15000)}, " ")
	if _, err := e.Rerank(b.Context(), query, texts); err != nil { // build the norms
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Rerank(b.Context(), query, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*nTexts)/b.Elapsed().Seconds(), "texts/s")
}
