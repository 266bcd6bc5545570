package recalltest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/mnemo/mnemo/memory/recall"
)

// naive is the simplest index that meets the contract: it checks the suite
// itself, and documents the reference semantics (BM25 with k1 1.2, b 0.75
// and Lucene's idf; cosine similarity).
type naive struct {
	dim  int
	mu   sync.Mutex
	docs map[string]recall.Doc
	vecs map[string][]float32
	meta map[string]string
}

func (n *naive) Upsert(_ context.Context, docs []recall.Doc, vecs [][]float32) error {
	if vecs != nil && len(vecs) != len(docs) {
		return fmt.Errorf("naive: %d vectors for %d docs", len(vecs), len(docs))
	}
	for _, v := range vecs {
		if len(v) != n.dim {
			return recall.ErrDimension
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, d := range docs {
		n.docs[d.ID] = d
		delete(n.vecs, d.ID)
		if vecs != nil {
			n.vecs[d.ID] = vecs[i]
		}
	}
	return nil
}

func (n *naive) Delete(_ context.Context, ids []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		delete(n.docs, id)
		delete(n.vecs, id)
	}
	return nil
}

func match(d recall.Doc, f recall.Filter) bool {
	return (len(f.Kinds) == 0 || slices.Contains(f.Kinds, d.Kind)) &&
		(len(f.Roles) == 0 || slices.Contains(f.Roles, d.Role)) &&
		(f.Session == "" || f.Session == d.Session) &&
		(f.Since.IsZero() || !d.TS.Before(f.Since)) &&
		(f.Until.IsZero() || d.TS.Before(f.Until))
}

func top(res []recall.Scored, k int) []recall.Scored {
	slices.SortFunc(res, func(a, b recall.Scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
	})
	return res[:min(k, len(res))]
}

func (n *naive) Lexical(_ context.Context, query string, k int, f recall.Filter) ([]recall.Scored, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	terms := recall.Tokens(query)
	tfs := map[string]map[string]int{}
	lens := map[string]int{}
	df := map[string]int{}
	total := 0
	for id, d := range n.docs {
		toks := recall.Tokens(recall.IndexText(d))
		lens[id] = len(toks)
		total += len(toks)
		tfs[id] = map[string]int{}
		for _, t := range toks {
			if tfs[id][t] == 0 {
				df[t]++
			}
			tfs[id][t]++
		}
	}
	if len(n.docs) == 0 {
		return nil, nil
	}
	avg := float64(total) / float64(len(n.docs))
	var res []recall.Scored
	for id, d := range n.docs {
		if !match(d, f) {
			continue
		}
		score, hit := 0.0, false
		for _, q := range terms {
			tf := tfs[id][q]
			if tf == 0 {
				continue
			}
			hit = true
			idf := math.Log(1 + (float64(len(n.docs)-df[q])+0.5)/(float64(df[q])+0.5))
			score += idf * float64(tf) * 2.2 / (float64(tf) + 1.2*(0.25+0.75*float64(lens[id])/avg))
		}
		if hit {
			res = append(res, recall.Scored{ID: id, Score: float32(score)})
		}
	}
	return top(res, k), nil
}

func (n *naive) Vector(_ context.Context, v []float32, k int, f recall.Filter) ([]recall.Scored, error) {
	if len(v) != n.dim {
		return nil, recall.ErrDimension
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var res []recall.Scored
	for id, w := range n.vecs {
		if !match(n.docs[id], f) {
			continue
		}
		var dot, a, b float64
		for i := range v {
			dot += float64(v[i]) * float64(w[i])
			a += float64(v[i]) * float64(v[i])
			b += float64(w[i]) * float64(w[i])
		}
		res = append(res, recall.Scored{ID: id, Score: float32(dot / math.Sqrt(a*b))})
	}
	return top(res, k), nil
}

func (n *naive) Docs(_ context.Context, ids []string) ([]recall.Doc, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []recall.Doc
	for _, id := range ids {
		if d, ok := n.docs[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func (n *naive) Count(context.Context) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.docs), nil
}

func (n *naive) Meta(_ context.Context, key string) (string, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.meta[key]
	return v, ok, nil
}

func (n *naive) SetMeta(_ context.Context, key, value string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.meta[key] = value
	return nil
}

func (n *naive) Reset(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.docs, n.vecs, n.meta = map[string]recall.Doc{}, map[string][]float32{}, map[string]string{}
	return nil
}

func (n *naive) Close() error { return nil }

func TestNaiveConformance(t *testing.T) {
	RunIndexConformance(t, func(t *testing.T, dim int) recall.Index {
		return &naive{dim: dim, docs: map[string]recall.Doc{}, vecs: map[string][]float32{}, meta: map[string]string{}}
	})
}
