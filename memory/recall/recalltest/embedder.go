package recalltest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/mnemo/mnemo/memory/recall"
)

// HashEmbedder is a deterministic stand-in for a real embedding model: a
// text's vector is the normalised sum of one pseudo-random unit vector per
// token (seeded by recall.TermID), so texts that share words are similar.
// It is safe for concurrent use.
type HashEmbedder struct {
	dim   int
	mu    sync.Mutex
	cache map[string][]float32
}

// NewHashEmbedder returns a HashEmbedder of dimension dim.
func NewHashEmbedder(dim int) *HashEmbedder {
	return &HashEmbedder{dim: dim, cache: map[string][]float32{}}
}

// Name implements recall.Embedder.
func (e *HashEmbedder) Name() string { return fmt.Sprintf("hash-%d", e.dim) }

// Dim implements recall.Embedder.
func (e *HashEmbedder) Dim() int { return e.dim }

// Embed implements recall.Embedder. A text without tokens gets a zero
// vector.
func (e *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.embed(t)
	}
	return out, nil
}

func (e *HashEmbedder) embed(text string) []float32 {
	v := make([]float32, e.dim)
	for _, tok := range recall.Tokens(text) {
		for i, x := range e.token(tok) {
			v[i] += x
		}
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss > 0 {
		n := float32(math.Sqrt(ss))
		for i := range v {
			v[i] /= n
		}
	}
	return v
}

// token returns the unit vector of one token.
func (e *HashEmbedder) token(tok string) []float32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.cache[tok]; ok {
		return v
	}
	id := uint64(recall.TermID(tok))
	r := rand.New(rand.NewPCG(id, id^0x9E3779B97F4A7C15))
	v := make([]float32, e.dim)
	var ss float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		ss += x * x
	}
	n := float32(math.Sqrt(ss))
	for i := range v {
		v[i] /= n
	}
	if len(e.cache) < 1<<20 {
		e.cache[tok] = v
	}
	return v
}

var _ recall.Embedder = (*HashEmbedder)(nil)
