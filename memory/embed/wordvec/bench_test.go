package wordvec_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory/embed/wordvec"
)

// benchSentences are conversation-like turns, 5 to 25 words.
var benchSentences = []string{
	"I walked my dog in the park this morning and it started to rain.",
	"Did you finish the report for Tuesday's meeting?",
	"We're thinking about a trip to the mountains in August, maybe Colorado.",
	"My sister just adopted a kitten from the shelter downtown.",
	"Remind me to call the dentist about the appointment next week.",
	"The new guitar sounds amazing, I've been practising every evening after work.",
	"What was the name of that Italian restaurant we went to last summer?",
	"Taxes are due in April; I still need the forms from the bank.",
	"She said the concert was cancelled because of the storm.",
	"I'm reading a book about the history of the Roman empire, it's fascinating.",
	"Can you recommend a good recipe for vegetable soup?",
	"Caroline went to the LGBTQ support group yesterday and felt really welcomed.",
	"ok",
	"Let's meet at 10:30 at the coffee shop near the station.",
	"My daughter's school play is on Friday night, she plays the lead role.",
	"The flight to Tokyo was delayed by three hours but the hotel was great.",
}

// benchModel returns the real model if MNEMO_WORDVEC is set, else a
// synthetic one of the real shape (100,000 words × 100 dimensions), and
// sentences for it.
func benchModel(b *testing.B) (*wordvec.Model, string, []string) {
	if path := os.Getenv("MNEMO_WORDVEC"); path != "" {
		m, err := wordvec.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		return m, path, benchSentences
	}
	const n, dim = 100000, 100
	rng := rand.New(rand.NewPCG(1, 2))
	data := syntheticModel(b, rng, n, dim)
	path := filepath.Join(b.TempDir(), "synthetic.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	m, err := wordvec.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	// Sentences of the same lengths, Zipf-distributed words, a few unknown.
	zipf := rand.NewZipf(rng, 1.1, 2, n-1)
	sentences := make([]string, len(benchSentences))
	for i, s := range benchSentences {
		toks := wordvec.Tokens(s)
		for k := range toks {
			toks[k] = synthWord(int(zipf.Uint64()))
			if k%7 == 6 {
				toks[k] = strconv.Itoa(k)
			}
		}
		sentences[i] = strings.Join(toks, " ") + "."
	}
	return m, path, sentences
}

// BenchmarkEmbed embeds batches of 256 turns on one goroutine and reports
// sentences per second.
func BenchmarkEmbed(b *testing.B) {
	m, _, sentences := benchModel(b)
	batch := make([]string, 256)
	for i := range batch {
		batch[i] = sentences[i%len(sentences)]
	}
	for _, opts := range []wordvec.Options{{}, {RemovePC: true}} {
		e := m.Embedder(opts)
		b.Run(strings.TrimPrefix(e.Name(), "wordvec:"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Embed(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "sentences/s")
		})
	}
}

// BenchmarkEmbedQuery embeds one short query per call, as search does.
func BenchmarkEmbedQuery(b *testing.B) {
	m, _, sentences := benchModel(b)
	e := m.Embedder(wordvec.Options{})
	q := []string{sentences[1]}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(b.Context(), q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures Load: one read, checksum, table and map.
func BenchmarkLoad(b *testing.B) {
	_, path, _ := benchModel(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wordvec.Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

// synthWord is the i-th word of a syntheticModel.
func synthWord(i int) string { return "w" + strconv.FormatInt(int64(i), 36) + "x" }

// syntheticModel encodes n words (synthWord(0) the most frequent) with
// random normal vectors of dim dimensions drawn from rng.
func syntheticModel(tb testing.TB, rng *rand.Rand, n, dim int) []byte {
	tb.Helper()
	words := make([]wordvec.Word, n)
	for i := range words {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		words[i] = wordvec.Word{Text: synthWord(i), Rank: i, Vector: v}
	}
	data, err := wordvec.Encode(dim, 341479, words)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
