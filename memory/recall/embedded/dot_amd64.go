//go:build amd64 && !purego

package embedded

import "golang.org/x/sys/cpu"

// haveDotRows reports whether dotRows7 runs here (it needs AVX2).
var haveDotRows = cpu.X86.HasAVX2

// dotRows7 writes to out[i], for each of n rows of rowBytes bytes starting
// at rows, Σ q[j]·(row[j]>>1) over the row's bytes, with the query laid
// out by prepareChunks: rowBytes ≥ 32, n ≥ 1, q holds nchunks 32-byte
// chunks. Implemented in dot_amd64.s with AVX2 (32 products a step).
//
//go:noescape
func dotRows7(q *byte, rows *uint64, n, rowBytes, nchunks int, out *uint32)
