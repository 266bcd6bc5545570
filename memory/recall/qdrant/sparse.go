package qdrant

import (
	"math"
	"slices"

	"github.com/mnemo/mnemo/memory/recall"
)

// BM25 parameters of the client-side term-frequency saturation. A
// document's "bm25" sparse vector holds, for each term t of the document,
//
//	tf(t)·(k1+1) / (tf(t) + k1·(1 − b + b·|d|/avgdl))
//
// and a query's holds 1 for each distinct term. The collection's sparse
// vector has Qdrant's IDF modifier, so Qdrant multiplies each query weight
// by idf(t) = ln(1 + (N − n(t) + 0.5)/(n(t) + 0.5)) at search time and the
// dot product is the BM25 score. Terms are recall.Tokens, their indices
// recall.TermID, the same as in every other backend.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// sparseVec is a sparse vector: indices strictly ascending, one value each.
type sparseVec struct {
	indices []uint32
	values  []float32
}

// termCounts counts the term ids of d's recall.IndexTokens. n is the
// number of tokens (the document length); ids are counted with
// multiplicity, so two tokens hashing to one id add up.
func termCounts(d recall.Doc) (counts map[uint32]int, n int) {
	toks := recall.IndexTokens(nil, d)
	counts = make(map[uint32]int, len(toks))
	for _, tok := range toks {
		counts[recall.TermID(tok)]++
	}
	return counts, len(toks)
}

// docSparse turns term counts of a document of n tokens into its BM25
// sparse vector for an average document length avgdl. A non-positive
// avgdl counts as n (no length normalisation).
func docSparse(counts map[uint32]int, n int, avgdl float64) sparseVec {
	if len(counts) == 0 {
		return sparseVec{}
	}
	norm := 1.0
	if avgdl > 0 && n > 0 {
		norm = 1 - bm25B + bm25B*float64(n)/avgdl
	}
	v := sparseVec{indices: make([]uint32, 0, len(counts)), values: make([]float32, 0, len(counts))}
	for id := range counts {
		v.indices = append(v.indices, id)
	}
	slices.Sort(v.indices)
	for _, id := range v.indices {
		tf := float64(counts[id])
		w := float32(tf * (bm25K1 + 1) / (tf + bm25K1*norm))
		if !(w > 0) || math.IsInf(float64(w), 0) {
			// A degenerate avgdl: keep the term findable.
			w = math.SmallestNonzeroFloat32
		}
		v.values = append(v.values, w)
	}
	return v
}

// querySparse is the sparse vector of a query: weight 1 for each distinct
// term id.
func querySparse(text string) sparseVec {
	counts := make(map[uint32]bool)
	for _, tok := range recall.Tokens(text) {
		counts[recall.TermID(tok)] = true
	}
	v := sparseVec{indices: make([]uint32, 0, len(counts)), values: make([]float32, 0, len(counts))}
	for id := range counts {
		v.indices = append(v.indices, id)
	}
	slices.Sort(v.indices)
	for range v.indices {
		v.values = append(v.values, 1)
	}
	return v
}

// lexStats are the document-length statistics of one collection. They
// are kept in the meta collection so that avgdl survives restarts.
type lexStats struct {
	Docs   int64 // documents counted
	Tokens int64 // their total length in tokens
}

func (s lexStats) avgdl() float64 {
	if s.Docs <= 0 || s.Tokens <= 0 {
		return 0
	}
	return float64(s.Tokens) / float64(s.Docs)
}

func (s *lexStats) add(n int) {
	s.Docs++
	s.Tokens += int64(n)
}

func (s *lexStats) remove(n int) {
	s.Docs = max(s.Docs-1, 0)
	s.Tokens = max(s.Tokens-int64(n), 0)
}
