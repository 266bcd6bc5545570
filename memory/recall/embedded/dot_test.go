package embedded

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotRows checks the AVX2 kernel against dotSWAR, the portable sum it
// replaces, over dimensions around its 32-byte chunks and extreme codes.
func TestDotRows(t *testing.T) {
	if !haveDotRows {
		t.Skip("no AVX2 here")
	}
	r := rand.New(rand.NewPCG(3, 3))
	for _, dim := range []int{25, 31, 32, 33, 63, 64, 65, 96, 100, 128, 300, 1024} {
		s := newSlab(dim)
		rows := [][]byte{make([]byte, dim), slices.Repeat([]byte{255}, dim)}
		for range 40 {
			c := make([]byte, dim)
			for i := range c {
				c[i] = byte(r.IntN(256))
			}
			rows = append(rows, c)
		}
		for i, c := range rows {
			s.add(&quantized{codes: c}, uint32(i))
		}
		// The largest query codes (127 everywhere) as well as random ones.
		top := make([]float32, dim)
		for i := range top {
			top[i] = 1
		}
		top[0] = 0
		for _, u := range [][]float32{randUnit(r, dim), top, make([]float32, dim)} {
			q := s.prepare(u)
			if q.chunks == nil {
				t.Fatalf("dim %d: no chunks", dim)
			}
			out := make([]uint32, len(rows))
			// Every start and length, so that blocks may begin anywhere.
			for lo := range len(rows) {
				n := len(rows) - lo
				dotRows7(&q.chunks[0], &s.words[lo*s.wpr], n, s.wpr*8, len(q.chunks)/32, &out[0])
				for i := range n {
					want := dotSWAR(q.pairs, s.words[(lo+i)*s.wpr:(lo+i+1)*s.wpr])
					if uint64(out[i]) != want {
						t.Fatalf("dim %d rows from %d: row %d: dotRows7 = %d, dotSWAR = %d", dim, lo, lo+i, out[i], want)
					}
				}
			}
		}
	}
}

// TestScanChunks checks that a scan through dotRows7 keeps the same rows
// with the same scores as the portable scan, dead rows and filters too.
func TestScanChunks(t *testing.T) {
	if !haveDotRows {
		t.Skip("no AVX2 here")
	}
	r := rand.New(rand.NewPCG(4, 4))
	const dim, n = 100, 3000
	s := newSlab(dim)
	attrs := make([]attr, n)
	for i := range n {
		q := quantized{codes: make([]byte, dim)}
		quantize(randUnit(r, dim), &q)
		s.add(&q, uint32(i))
		attrs[i] = attr{ts: int64(i), dead: i%7 == 0}
		if i%11 == 0 {
			s.rows[i].slot = deadRow
		}
	}
	for _, f := range []*filter{nil, {since: 1000, hasSince: true}} {
		for range 10 {
			q := s.prepare(randUnit(r, dim))
			for _, lo := range []int{0, 1, 255, 256, 257} {
				got, want := newTopK(50), newTopK(50)
				s.scan(q, lo, n, f, attrs, got)
				chunks := q.chunks
				q.chunks = nil
				s.scan(q, lo, n, f, attrs, want)
				q.chunks = chunks
				if g, w := got.sorted(), want.sorted(); !slices.Equal(g, w) {
					t.Fatalf("filter %v from %d: chunked scan kept %v, portable %v", f, lo, g, w)
				}
			}
		}
	}
}
