package recallbench

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mnemo/mnemo/memory/recall"
)

// memIndex is a small recall.Index in memory: BM25 over recall.Tokens and
// exact cosine search. It stands in for the embedded index in
// tests, and writes one file to its directory so that sizes are measured.
type memIndex struct {
	mu     sync.Mutex
	dir    string
	docs   map[string]recall.Doc
	vecs   map[string][]float32
	meta   map[string]string
	closed bool
}

func openMemIndex(dir string) *memIndex {
	return &memIndex{dir: dir, docs: map[string]recall.Doc{}, vecs: map[string][]float32{}, meta: map[string]string{}}
}

var errClosed = errors.New("memindex: closed")

func (m *memIndex) Upsert(_ context.Context, docs []recall.Doc, vecs [][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	for i, d := range docs {
		m.docs[d.ID] = d
		if vecs != nil {
			m.vecs[d.ID] = vecs[i]
		}
	}
	return nil
}

func (m *memIndex) Delete(_ context.Context, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.docs, id)
		delete(m.vecs, id)
	}
	return nil
}

func (m *memIndex) Lexical(_ context.Context, query string, k int, _ recall.Filter) ([]recall.Scored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	df := map[string]int{}
	tf := map[string]map[string]int{}
	var total int
	for id, d := range m.docs {
		toks := recall.Tokens(d.Text)
		total += len(toks)
		tf[id] = map[string]int{}
		for _, t := range toks {
			if tf[id][t] == 0 {
				df[t]++
			}
			tf[id][t]++
		}
	}
	n := float64(len(m.docs))
	avg := float64(total) / max(n, 1)
	var out []recall.Scored
	for id, d := range m.docs {
		dl := float64(len(recall.Tokens(d.Text)))
		var s float64
		for _, t := range recall.Tokens(query) {
			f := float64(tf[id][t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s += idf * f * 2.2 / (f + 1.2*(0.25+0.75*dl/avg))
		}
		if s > 0 {
			out = append(out, recall.Scored{ID: id, Score: float32(s)})
		}
	}
	return top(out, k), nil
}

func (m *memIndex) Vector(_ context.Context, vec []float32, k int, _ recall.Filter) ([]recall.Scored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []recall.Scored
	for id, v := range m.vecs {
		if len(v) != len(vec) {
			return nil, recall.ErrDimension
		}
		out = append(out, recall.Scored{ID: id, Score: cosine(v, vec)})
	}
	return top(out, k), nil
}

func top(s []recall.Scored, k int) []recall.Scored {
	slices.SortFunc(s, func(a, b recall.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return s[:min(k, len(s))]
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}

func (m *memIndex) Docs(_ context.Context, ids []string) ([]recall.Doc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []recall.Doc
	for _, id := range ids {
		if d, ok := m.docs[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func (m *memIndex) Count(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.docs), nil
}

func (m *memIndex) Meta(_ context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.meta[key]
	return v, ok, nil
}

func (m *memIndex) SetMeta(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta[key] = value
	return nil
}

func (m *memIndex) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.docs)
	clear(m.vecs)
	clear(m.meta)
	return nil
}

// Close writes the texts to dir/docs.txt, so the index has a size on disk.
func (m *memIndex) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var b strings.Builder
	for _, d := range m.docs {
		b.WriteString(d.Text + "\n")
	}
	return writeFile(m.dir+"/docs.txt", b.String())
}

// hashEmbedder embeds texts as hashed bags of words.
type hashEmbedder struct{ dim int }

func (h hashEmbedder) Name() string { return "hash" }
func (h hashEmbedder) Dim() int     { return h.dim }

func (h hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, h.dim)
		for _, tok := range recall.Tokens(t) {
			f := fnv.New32a()
			f.Write([]byte(tok))
			v[f.Sum32()%uint32(h.dim)]++
		}
		out[i] = v
	}
	return out, nil
}

// memBackend is a Backend over memIndex: lexical is BM25, vector is
// cosine, hybrid is reciprocal rank fusion of both.
func memBackend(emb recall.Embedder) Backend {
	return Backend{
		Open: func(_ context.Context, dir string) (recall.Index, error) {
			return openMemIndex(dir), nil
		},
		Embedder: emb,
		Searcher: func(idx recall.Index, mode string) (SearchFunc, error) {
			return func(ctx context.Context, q SearchQuery) ([]string, error) {
				var lists [][]recall.Scored
				if mode != ModeVector {
					l, err := idx.Lexical(ctx, q.Text, q.K, recall.Filter{})
					if err != nil {
						return nil, err
					}
					lists = append(lists, l)
				}
				if mode != ModeLexical {
					vs, err := emb.Embed(ctx, []string{q.Text})
					if err != nil {
						return nil, err
					}
					l, err := idx.Vector(ctx, vs[0], q.K, recall.Filter{})
					if err != nil {
						return nil, err
					}
					lists = append(lists, l)
				}
				fused := map[string]float32{}
				for _, l := range lists {
					for r, s := range l {
						fused[s.ID] += 1 / float32(60+r+1)
					}
				}
				var all []recall.Scored
				for id, s := range fused {
					all = append(all, recall.Scored{ID: id, Score: s})
				}
				var ids []string
				for _, s := range top(all, q.K) {
					ids = append(ids, s.ID)
				}
				return ids, nil
			}, nil
		},
	}
}

// fixedBackend answers every query with a fixed ranking, by query text,
// from the query text.
func fixedBackend(rank map[string][]string) Backend {
	return Backend{
		Open: func(_ context.Context, dir string) (recall.Index, error) {
			return openMemIndex(dir), nil
		},
		Searcher: func(recall.Index, string) (SearchFunc, error) {
			return func(_ context.Context, q SearchQuery) ([]string, error) {
				return rank[q.Text], nil
			}, nil
		},
	}
}

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o644) }
