package embedded

// hit is a scored slot (or vector row).
type hit struct {
	score float32
	id    uint32
}

// worse orders hits: a lower score is worse, and on equal scores the
// higher id (the later insertion) is worse, so results are deterministic.
func worse(a, b hit) bool {
	return a.score < b.score || (a.score == b.score && a.id > b.id)
}

// topK keeps the best k hits in a min-heap (the worst kept hit at h[0]).
type topK struct {
	k    int
	h    []hit
	sink uint64 // see slab.scan
}

func newTopK(k int) *topK {
	return &topK{k: k, h: make([]hit, 0, min(k, 1<<12))}
}

func (t *topK) push(score float32, id uint32) {
	x := hit{score, id}
	if len(t.h) < t.k {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if t.k == 0 || !worse(t.h[0], x) {
		return
	}
	t.h[0] = x
	t.down(0)
}

// takes reports whether push would keep a hit with this score and id.
func (t *topK) takes(score float32, id uint32) bool {
	return len(t.h) < t.k || t.k > 0 && worse(t.h[0], hit{score, id})
}

func (t *topK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// merge pushes every hit of o into t.
func (t *topK) merge(o *topK) {
	for _, x := range o.h {
		t.push(x.score, x.id)
	}
}

// sorted returns the kept hits, best first, emptying t.
func (t *topK) sorted() []hit {
	out := make([]hit, len(t.h))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = t.h[0]
		last := len(t.h) - 1
		t.h[0] = t.h[last]
		t.h = t.h[:last]
		t.down(0)
	}
	return out
}
