package wordvec

import (
	"context"
	"fmt"
	"math"
)

// Rerank scores each text against query by soft term matching, higher
// better, in [0, 1]: every distinct query word in the model is matched to
// the most similar word of the text (the cosine of their vectors, 1 for
// the word itself, negatives counting as 0), and the matches are averaged
// with the query words' SIF weights, so rare words count more than
// common ones. A word the text lacks but whose meaning it has
// ("passionate" and "passion", "attend" and "went") counts in part, which
// exact lexical terms cannot do, and unlike a sentence vector one strong
// match is not diluted by the rest of a long text. A query with no known
// word scores every text 0. It implements recall.Reranker.
//
// The work is the texts' distinct known words × the query's known words ×
// Dim multiply-adds, plus a map lookup per word of the texts.
func (e *Embedder) Rerank(ctx context.Context, query string, texts []string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("wordvec: %w", err)
	}
	qs, wsum := e.queryWords(query)
	out := make([]float32, len(texts))
	if len(qs) == 0 || wsum == 0 {
		return out, nil
	}
	m := e.m
	nq := len(qs)
	best := make([]float32, nq)
	// Texts share most of their words: each distinct word's similarities
	// to the query words are computed once per call.
	simAt := make(map[int32]int, 1024)
	var sims []float32
	var buf []byte
	for ti, t := range texts {
		if ti%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("wordvec: %w", err)
			}
		}
		clear(best)
		for i := 0; ; {
			buf, i = nextToken(t, i, buf)
			if len(buf) == 0 {
				break
			}
			w, ok := m.index[string(buf)]
			if !ok {
				continue
			}
			at, ok := simAt[w]
			if !ok {
				at = len(sims)
				simAt[w] = at
				row := m.row(int(w))
				inv := m.invNorm(int(w))
				for _, q := range qs {
					sims = append(sims, dot8(q.v, row)*inv)
				}
			}
			for qi, s := range sims[at : at+nq] {
				best[qi] = max(best[qi], s)
			}
		}
		var score float32
		for qi, q := range qs {
			score += q.w * min(best[qi], 1)
		}
		out[ti] = score / wsum
	}
	return out, nil
}

// qword is a query word for Rerank: its unit vector and SIF weight.
type qword struct {
	v []float32
	w float32
}

// queryWords returns the distinct known words of query and the sum of
// their weights.
func (e *Embedder) queryWords(query string) ([]qword, float32) {
	m := e.m
	var (
		qs   []qword
		wsum float32
		buf  []byte
	)
	seen := map[int32]bool{}
	for i := 0; ; {
		buf, i = nextToken(query, i, buf)
		if len(buf) == 0 {
			break
		}
		w, ok := m.index[string(buf)]
		if !ok || seen[w] {
			continue
		}
		seen[w] = true
		inv := m.invNorm(int(w))
		if inv == 0 {
			continue
		}
		v := make([]float32, m.dim)
		for j, q := range m.row(int(w)) {
			v[j] = float32(q) * inv
		}
		// e.weight holds the SIF weight times the quantisation scale.
		sw := e.weight[w] / m.scales[w]
		qs = append(qs, qword{v: v, w: sw})
		wsum += sw
	}
	return qs, wsum
}

// dot8 is the dot product of a float vector and a quantised row of the
// same length.
func dot8(v []float32, row []int8) float32 {
	v = v[:len(row)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(row); i += 4 {
		s0 += v[i] * float32(row[i])
		s1 += v[i+1] * float32(row[i+1])
		s2 += v[i+2] * float32(row[i+2])
		s3 += v[i+3] * float32(row[i+3])
	}
	for ; i < len(row); i++ {
		s0 += v[i] * float32(row[i])
	}
	return s0 + s1 + s2 + s3
}

// invNorm is 1/‖row i‖ of the quantised vectors, 0 for a zero row. The
// table is made on first use (about 10 ms for 100k words).
func (m *Model) invNorm(i int) float32 {
	m.normOnce.Do(func() {
		m.invNorms = make([]float32, len(m.words))
		for w := range m.invNorms {
			var ss float64
			for _, q := range m.row(w) {
				ss += float64(q) * float64(q)
			}
			if ss > 0 {
				m.invNorms[w] = float32(1 / math.Sqrt(ss))
			}
		}
	})
	return m.invNorms[i]
}
