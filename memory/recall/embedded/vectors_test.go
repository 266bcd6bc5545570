package embedded

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	normalize(v, v)
	return v
}

func TestDotSWAR(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, dim := range []int{1, 7, 8, 9, 16, 100, 1024} {
		s := newSlab(dim)
		unit := randUnit(r, dim)
		// Extreme codes as well as random ones.
		rows := [][]byte{make([]byte, dim), slices.Repeat([]byte{255}, dim)}
		for range 20 {
			c := make([]byte, dim)
			for i := range c {
				c[i] = byte(r.IntN(256))
			}
			rows = append(rows, c)
		}
		for i, c := range rows {
			s.add(&quantized{codes: c}, uint32(i))
		}
		for _, u := range [][]float32{unit, make([]float32, dim)} {
			q := s.prepare(u)
			// The 7-bit query codes, as prepare derived them.
			v := make([]uint64, dim)
			for i, x := range u {
				if q.qs > 0 {
					v[i] = uint64(min(max(math.Round(float64((x-q.qmin)/q.qs)), 0), 127))
				}
			}
			for ri, c := range rows {
				var want uint64
				for i := range c {
					want += v[i] * uint64(c[i]>>1)
				}
				if got := dotSWAR(q.pairs, s.words[ri*s.wpr:(ri+1)*s.wpr]); got != want {
					t.Errorf("dim %d row %d: dotSWAR = %d, want %d", dim, ri, got, want)
				}
			}
		}
	}
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, dim := range []int{1, 3, 100, 1024} {
		u := randUnit(r, dim)
		q := quantized{codes: make([]byte, dim)}
		quantize(u, &q)
		s := newSlab(dim)
		s.add(&q, 0)
		got := s.vector(0)
		for i := range u {
			if d := math.Abs(float64(got[i] - u[i])); d > float64(q.step)/2+1e-6 {
				t.Errorf("dim %d: component %d off by %g, want at most half a step (%g)", dim, i, d, q.step/2)
				break
			}
		}
	}
	// Constant and zero vectors.
	for _, v := range [][]float32{{0, 0, 0}, {0.5, 0.5, 0.5}} {
		u := make([]float32, len(v))
		normalize(u, v)
		q := quantized{codes: make([]byte, len(v))}
		quantize(u, &q)
		s := newSlab(len(v))
		s.add(&q, 0)
		if got := s.vector(0); !slices.Equal(got, u) {
			t.Errorf("quantize(%v) round trip = %v, want %v", u, got, u)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in   []float32
		want []float32
		ok   bool
	}{
		{[]float32{3, 4}, []float32{0.6, 0.8}, true},
		{[]float32{0, 0}, []float32{0, 0}, true},
		{[]float32{3e37, 4e37}, []float32{0.6, 0.8}, true},
		{[]float32{1e-40, 0}, []float32{1, 0}, true},
		{[]float32{float32(math.NaN()), 1}, nil, false},
		{[]float32{float32(math.Inf(-1)), 1}, nil, false},
	}
	for _, tt := range tests {
		got := make([]float32, len(tt.in))
		ok := normalize(got, tt.in)
		if ok != tt.ok || (ok && !slices.EqualFunc(got, tt.want, func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 })) {
			t.Errorf("normalize(%v) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestVectorRanking checks the two-stage scan against exact float32
// cosine similarity: the top 10 must agree on at least 95% of results
// (measured: about 99%; the misses are near-ties).
func TestVectorRanking(t *testing.T) {
	const n, dim, queries, k = 40000, 100, 20, 10
	r := rand.New(rand.NewPCG(3, 3))
	st, log := newMemState(dim)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
		p := prepared{rec: record{typ: recUpsert, id: strconv.Itoa(i)}, q: quantized{codes: make([]byte, dim)}}
		quantize(vecs[i], &p.q)
		p.rec.vec = &p.q
		log.put(t, st, &p)
	}
	for _, par := range []int{1, 2} {
		found := 0
		for range queries {
			q := randUnit(r, dim)
			type sc struct {
				i int
				s float32
			}
			exact := make([]sc, n)
			for i, v := range vecs {
				var d float32
				for j := range v {
					d += v[j] * q[j]
				}
				exact[i] = sc{i, d}
			}
			slices.SortFunc(exact, func(a, b sc) int { return cmp.Compare(b.s, a.s) })
			got := st.vector(q, k, nil, par)
			if len(got) != k {
				t.Fatalf("vector returned %d hits, want %d", len(got), k)
			}
			for _, e := range exact[:k] {
				if slices.ContainsFunc(got, func(h hit) bool { return int(h.id) == e.i }) {
					found++
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i].score > got[i-1].score {
					t.Fatalf("hits out of order: %v", got)
				}
			}
			if d := math.Abs(float64(got[0].score - exact[0].s)); got[0].id == uint32(exact[0].i) && d > 0.01 {
				t.Errorf("top score %v, exact %v", got[0].score, exact[0].s)
			}
		}
		if recall := float64(found) / (queries * k); recall < 0.95 {
			t.Errorf("par %d: recall@%d against float32 = %.3f, want >= 0.95", par, k, recall)
		} else {
			t.Logf("par %d: recall@%d against float32 = %.3f", par, k, recall)
		}
	}
}

func TestTopK(t *testing.T) {
	tests := []struct {
		k    int
		in   []hit
		want []hit
	}{
		{0, []hit{{1, 1}}, []hit{}},
		{2, nil, []hit{}},
		{3, []hit{{0.5, 1}, {0.9, 2}, {0.1, 3}, {0.7, 4}}, []hit{{0.9, 2}, {0.7, 4}, {0.5, 1}}},
		{2, []hit{{1, 9}, {1, 3}, {1, 5}}, []hit{{1, 3}, {1, 5}}},
		{10, []hit{{-1, 1}, {2, 2}}, []hit{{2, 2}, {-1, 1}}},
	}
	for _, tt := range tests {
		h := newTopK(tt.k)
		for _, x := range tt.in {
			h.push(x.score, x.id)
		}
		if got := h.sorted(); !slices.Equal(got, tt.want) {
			t.Errorf("topK(%d, %v) = %v, want %v", tt.k, tt.in, got, tt.want)
		}
	}
}
