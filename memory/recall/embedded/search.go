package embedded

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/mnemo/mnemo/memory/recall"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Work below these sizes runs on one goroutine; above, it is split across
// GOMAXPROCS.
const (
	parallelPostings = 1 << 16
	parallelRows     = 1 << 15
)

// scratch is per-query working memory, pooled by Index.
type scratch struct {
	acc     []float32  // BM25 accumulator by slot, all zero between uses
	lists   [][]uint32 // the query terms' snapshot postings, read
	listTfs [][]uint8
	touched [][]uint32
	toks    []string
	tfs     []uint32
}

// qterm is a query term with its weight: idf·qtf·(k1+1), and its
// snapshot postings as read.
type qterm struct {
	p     *postings
	w     float32
	slots []uint32
	tfs   []uint8
}

// workers returns how many goroutines to split n units of work over, at
// most procs (0: GOMAXPROCS).
func workers(n, threshold, procs int) int {
	if procs <= 0 {
		procs = runtime.GOMAXPROCS(0)
	}
	if n < threshold {
		return 1
	}
	return max(1, min(procs, n/(threshold/2)))
}

// lexical ranks live documents by BM25 over the terms of query. Its
// error is a snapshot's postings found corrupt (a *snapshotDamage).
func (st *state) lexical(query string, k int, f *filter, sc *scratch, procs int) ([]hit, error) {
	if k <= 0 || st.live == 0 {
		return nil, nil
	}
	sc.toks = recall.AppendTokens(sc.toks[:0], query)
	terms, qtfs := termFreqs(sc.toks, sc.tfs)
	sc.tfs = qtfs
	n := float64(st.live)
	var qs []qterm
	work := 0
	for i, t := range terms {
		ti, ok := st.terms[t]
		if !ok || st.posts[ti].live == 0 {
			continue
		}
		j := len(qs)
		if j == len(sc.lists) {
			sc.lists, sc.listTfs = append(sc.lists, nil), append(sc.listTfs, nil)
		}
		slots, tfs, err := st.list(ti, sc.lists[j], sc.listTfs[j])
		if err != nil {
			return nil, err
		}
		sc.lists[j], sc.listTfs[j] = slots, tfs
		p := &st.posts[ti]
		df := float64(p.live)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		qs = append(qs, qterm{p: p, w: float32(idf * float64(qtfs[i]) * (bm25K1 + 1)), slots: slots, tfs: tfs})
		work += p.len()
	}
	if len(qs) == 0 {
		return nil, nil
	}
	avgdl := float64(st.totalDL) / n
	if avgdl == 0 {
		avgdl = 1
	}
	c0 := float32(bm25K1 * (1 - bm25B))
	c1 := float32(bm25K1 * bm25B / avgdl)

	if cap(sc.acc) < len(st.slots) {
		sc.acc = make([]float32, len(st.slots)+len(st.slots)/4)
	}
	acc := sc.acc[:len(st.slots)]
	p := workers(work, parallelPostings, procs)
	for len(sc.touched) < p {
		sc.touched = append(sc.touched, nil)
	}
	tops := make([]*topK, p)
	score := func(w, lo, hi int) {
		touched := sc.touched[w][:0]
		attrs, lens := st.attrs, st.lens
		for _, q := range qs {
			for _, part := range [2]struct {
				slots []uint32
				tfs   []uint8
			}{{q.slots, q.tfs}, {q.p.more, q.p.moreTfs}} {
				slotsList, tfs := part.slots, part.tfs
				i := 0
				if lo > 0 {
					i, _ = slices.BinarySearch(slotsList, uint32(lo))
				}
				for ; i < len(slotsList); i++ {
					s := slotsList[i]
					if int(s) >= hi {
						break
					}
					dl := lens[s]
					if dl == deadLen {
						continue
					}
					tf := float32(tfs[i])
					v := q.w * tf / (tf + c0 + c1*float32(dl))
					if acc[s] == 0 {
						touched = append(touched, s)
					}
					acc[s] += v
				}
			}
		}
		// The filter is asked only of a document that would enter the
		// best k, so that its attrs are read for a few documents rather
		// than for every posting.
		t := newTopK(k)
		for _, s := range touched {
			if f == nil || t.takes(acc[s], s) && f.match(&attrs[s]) {
				t.push(acc[s], s)
			}
			acc[s] = 0
		}
		sc.touched[w] = touched
		tops[w] = t
	}
	parallel(p, len(st.slots), score)
	for _, t := range tops[1:] {
		tops[0].merge(t)
	}
	return tops[0].sorted(), nil
}

// parallel runs fn over p contiguous ranges of [0, n), the first on the
// calling goroutine, and waits for all.
func parallel(p, n int, fn func(w, lo, hi int)) {
	if p <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + p - 1) / p
	for w := 1; w < p; w++ {
		lo, hi := min(w*per, n), min((w+1)*per, n)
		wg.Go(func() { fn(w, lo, hi) })
	}
	fn(0, 0, min(per, n))
	wg.Wait()
}

// vector ranks live documents with vectors by cosine similarity to unit.
func (st *state) vector(unit []float32, k int, f *filter, procs int) []hit {
	rows := len(st.vecs.rows)
	if k <= 0 || rows == 0 {
		return nil
	}
	q := st.vecs.prepare(unit)
	cands := 2*k + 16
	p := workers(rows, parallelRows, procs)
	tops := make([]*topK, p)
	parallel(p, rows, func(w, lo, hi int) {
		t := newTopK(cands)
		st.vecs.scan(q, lo, hi, f, st.attrs, t)
		tops[w] = t
	})
	for _, t := range tops[1:] {
		tops[0].merge(t)
	}
	best := newTopK(k)
	for _, c := range tops[0].h {
		r := int(c.id)
		best.push(st.vecs.exact(q, r), st.vecs.rows[r].slot)
	}
	return best.sorted()
}
