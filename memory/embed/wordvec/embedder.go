package wordvec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Defaults for Options' zero fields.
const (
	// DefaultA is SIF's smoothing parameter a. Arora et al. found
	// 1e-4..1e-3 best; with Zipf-estimated frequencies 1e-3 weighs "the"
	// about 0.013, a rank-100 word 0.57 and a rank-1000 word 0.93.
	DefaultA = 1e-3

	// pcSample is how many of the most frequent words estimate the common
	// component, and pcWords the words per pseudo-sentence it assumes.
	pcSample = 10000
	pcWords  = 10
)

// Options configure an Embedder. The zero value is the default.
type Options struct {
	// A is SIF's a in the weight a/(a+p(w)); 0, or anything but a
	// positive finite number, means DefaultA.
	A float64
	// RemovePC removes the first principal component (the "common
	// discourse" direction that every sentence shares) from each vector
	// before normalising; see Model.Embedder for how it is estimated. It
	// is off by default: on LoCoMo it lowered vector-only recall@10 from
	// 0.418 to 0.378 (see README.md).
	RemovePC bool
}

// Embedder turns texts into SIF sentence vectors. It implements
// recall.Embedder and is safe for concurrent use.
type Embedder struct {
	m      *Model
	name   string
	weight []float32 // per word: SIF weight × quantisation scale
	pc     []float32 // unit vector, or nil
}

// Embedder returns an embedder over m.
//
// A text's vector is Σ a/(a+p(w))·v(w) over its tokens (Tokens) that are in
// the model, repeats counted, L2-normalised. The data has no word counts,
// so p(w) is a Zipf estimate from the word's frequency rank r in the
// source vocabulary of V words: p = 1/((r+1)·H(V)), H the harmonic number.
// A text with no known word (empty, numbers only, another script) gets the
// zero vector: it has no semantic signal, cosine similarity with it is 0,
// and callers rely on lexical search for it.
//
// With RemovePC, the vector's projection onto u is subtracted before
// normalising. SIF takes u from a corpus of sentence vectors; here there is
// no corpus, so u is the first eigenvector of the second-moment matrix of
// pseudo-sentences of n=10 words drawn by Zipf frequency from the 10,000
// most frequent words: E[s sᵀ] = n·Σ p·x xᵀ + n(n-1)·μ μᵀ, with x(w) the
// weighted word vectors and μ = Σ p·x. It is computed once per model and
// a, by power iteration from μ (deterministic, about 30 ms for the
// 100k-word model).
//
// Name is "wordvec:wink-sg100d:<words>", with ":a=<a>" and ":pc" appended
// when the options differ from the defaults, so vectors made with other
// options are never mixed with these.
func (m *Model) Embedder(opts Options) *Embedder {
	a := opts.A
	if !(a > 0) || math.IsInf(a, 0) {
		a = DefaultA
	}
	e := &Embedder{m: m, weight: sifWeights(m, a)}
	e.name = "wordvec:wink-sg100d:" + strconv.Itoa(m.Len())
	if a != DefaultA {
		e.name += ":a=" + strconv.FormatFloat(a, 'g', -1, 64)
	}
	if opts.RemovePC {
		e.pc = m.commonComponent(a, e.weight)
		e.name += ":pc"
	}
	return e
}

// Name identifies the model, its size and the options.
func (e *Embedder) Name() string { return e.name }

// Dim is the model's dimension.
func (e *Embedder) Dim() int { return e.m.dim }

// Embed returns one unit vector (or the zero vector) per text, in order.
// It checks ctx between texts.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("wordvec: %w", err)
	}
	dim := e.m.dim
	slab := make([]float32, len(texts)*dim)
	out := make([][]float32, len(texts))
	buf := make([]byte, 0, 64)
	for i, t := range texts {
		if i%128 == 127 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("wordvec: %w", err)
			}
		}
		v := slab[i*dim : (i+1)*dim : (i+1)*dim]
		buf = e.embed(t, v, buf)
		out[i] = v
	}
	return out, nil
}

// embed writes text's vector into v, which must be zero, and returns the
// token buffer for reuse.
func (e *Embedder) embed(text string, v []float32, buf []byte) []byte {
	m := e.m
	known := false
	for i := 0; ; {
		buf, i = nextToken(text, i, buf)
		if len(buf) == 0 {
			break
		}
		w, ok := m.index[string(buf)]
		if !ok {
			continue
		}
		known = true
		f := e.weight[w]
		row := m.row(int(w))
		v := v[:len(row)]
		for j, q := range row {
			v[j] += f * float32(q)
		}
	}
	if !known {
		return buf
	}
	if e.pc != nil {
		var dot float32
		for j, x := range v {
			dot += x * e.pc[j]
		}
		for j := range v {
			v[j] -= dot * e.pc[j]
		}
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss < 1e-20 {
		clear(v)
		return buf
	}
	inv := float32(1 / math.Sqrt(ss))
	for j := range v {
		v[j] *= inv
	}
	return buf
}

// zipf returns the Zipf frequency estimate of each rank in a vocabulary of
// vocab words: p(r) = 1/((r+1)·H(vocab)).
func zipf(vocab int) func(rank uint32) float64 {
	h := harmonic(vocab)
	return func(rank uint32) float64 { return 1 / ((float64(rank) + 1) * h) }
}

// harmonic returns H(n) = 1 + 1/2 + … + 1/n: summed for small n, else by
// its asymptotic expansion (relative error below 1e-15 for n ≥ 1000), so
// a file claiming a huge vocabulary costs nothing.
func harmonic(n int) float64 {
	if n < 1000 {
		h := 0.0
		for r := n; r >= 1; r-- { // small terms first, for accuracy
			h += 1 / float64(r)
		}
		return h
	}
	const eulerGamma = 0.57721566490153286061
	x := float64(n)
	return math.Log(x) + eulerGamma + 1/(2*x) - 1/(12*x*x) + 1/(120*x*x*x*x)
}

// sifWeights returns a/(a+p(w)) × scale(w) for every word of m.
func sifWeights(m *Model, a float64) []float32 {
	p := zipf(m.vocab)
	w := make([]float32, m.Len())
	for i, r := range m.ranks {
		w[i] = float32(a/(a+p(r))) * m.scales[i]
	}
	return w
}

// commonComponent returns the unit first principal component described in
// Model.Embedder, cached per a, or nil if the model has no signal.
func (m *Model) commonComponent(a float64, weight []float32) []float32 {
	m.pcMu.Lock()
	defer m.pcMu.Unlock()
	if pc, ok := m.pcs[a]; ok {
		return pc
	}
	pc := principal(m, weight)
	if m.pcs == nil {
		m.pcs = make(map[float64][]float32)
	}
	m.pcs[a] = pc
	return pc
}

func principal(m *Model, weight []float32) []float32 {
	d := m.dim
	n := min(m.Len(), pcSample)
	p := zipf(m.vocab)
	mu := make([]float64, d)
	mom := make([]float64, d*d) // Σ p·x xᵀ, upper triangle
	x := make([]float64, d)
	for i := range n {
		pw := p(m.ranks[i])
		for j, q := range m.row(i) {
			x[j] = float64(weight[i]) * float64(q)
		}
		for j := range d {
			mu[j] += pw * x[j]
			pj := pw * x[j]
			row := mom[j*d : (j+1)*d]
			for k := j; k < d; k++ {
				row[k] += pj * x[k]
			}
		}
	}
	c := make([]float64, d*d)
	for j := range d {
		for k := j; k < d; k++ {
			v := pcWords*mom[j*d+k] + pcWords*(pcWords-1)*mu[j]*mu[k]
			c[j*d+k], c[k*d+j] = v, v
		}
	}
	u := slices.Clone(mu)
	if normalize(u) == 0 {
		return nil
	}
	next := make([]float64, d)
	for range 200 {
		for j := range d {
			var s float64
			for k, ck := range c[j*d : (j+1)*d] {
				s += ck * u[k]
			}
			next[j] = s
		}
		if normalize(next) == 0 {
			return nil
		}
		delta := 0.0
		for j := range d {
			delta = max(delta, math.Abs(next[j]-u[j]))
		}
		u, next = next, u
		if delta < 1e-12 {
			break
		}
	}
	// Fix the sign: point along the mean.
	dot := 0.0
	for j := range d {
		dot += u[j] * mu[j]
	}
	out := make([]float32, d)
	for j := range d {
		if dot < 0 {
			u[j] = -u[j]
		}
		out[j] = float32(u[j])
	}
	return out
}

// normalize scales v to unit length and returns its former norm.
func normalize(v []float64) float64 {
	ss := 0.0
	for _, x := range v {
		ss += x * x
	}
	n := math.Sqrt(ss)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0
	}
	for i := range v {
		v[i] /= n
	}
	return n
}
