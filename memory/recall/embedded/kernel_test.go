package embedded

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkKernel compares ways to scan a flat slab of 250k 100-dim
// vectors on one goroutine (the numbers behind the choice documented in
// vectors.go): a float32 loop, an int8 loop with int32 accumulation, and
// the 7-bit SWAR scan (slab.scan, read-ahead included), and the same sums
// with AVX2 (swar7/avx2, what slab.scan uses where the CPU has it).
func BenchmarkKernel(b *testing.B) {
	const rows, dim = 250_000, 100
	r := rand.New(rand.NewPCG(9, 9))
	q := randUnit(r, dim)
	b.Run("float32", func(b *testing.B) {
		slab := make([]float32, rows*dim)
		for i := range slab {
			slab[i] = float32(r.NormFloat64())
		}
		var sink float32
		for b.Loop() {
			best := float32(-2)
			for row := 0; row < rows; row++ {
				v := slab[row*dim : row*dim+dim : row*dim+dim]
				var s0, s1, s2, s3 float32
				for i := 0; i+4 <= dim; i += 4 {
					s0 += q[i] * v[i]
					s1 += q[i+1] * v[i+1]
					s2 += q[i+2] * v[i+2]
					s3 += q[i+3] * v[i+3]
				}
				best = max(best, s0+s1+s2+s3)
			}
			sink += best
		}
		_ = sink
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	b.Run("int8", func(b *testing.B) {
		slab := make([]int8, rows*dim)
		for i := range slab {
			slab[i] = int8(r.IntN(255) - 127)
		}
		qi := make([]int32, dim)
		for i, x := range q {
			qi[i] = int32(x * 127)
		}
		var sink int32
		for b.Loop() {
			best := int32(-1 << 30)
			for row := 0; row < rows; row++ {
				v := slab[row*dim : row*dim+dim : row*dim+dim]
				var s0, s1, s2, s3 int32
				for i := 0; i+4 <= dim; i += 4 {
					s0 += qi[i] * int32(v[i])
					s1 += qi[i+1] * int32(v[i+1])
					s2 += qi[i+2] * int32(v[i+2])
					s3 += qi[i+3] * int32(v[i+3])
				}
				best = max(best, s0+s1+s2+s3)
			}
			sink += best
		}
		_ = sink
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	s := newSlab(dim)
	qz := quantized{codes: make([]byte, dim)}
	for i := range rows {
		quantize(randUnit(r, dim), &qz)
		s.add(&qz, uint32(i))
	}
	b.Run("swar7", func(b *testing.B) {
		vq := s.prepare(q)
		vq.chunks = nil
		for b.Loop() {
			s.scan(vq, 0, rows, nil, nil, newTopK(36))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	// The same sums through the AVX2 kernel (what slab.scan uses where
	// the CPU has it).
	b.Run("avx2", func(b *testing.B) {
		if !haveDotRows {
			b.Skip("no AVX2 here")
		}
		vq := s.prepare(q)
		for b.Loop() {
			s.scan(vq, 0, rows, nil, nil, newTopK(36))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
}
