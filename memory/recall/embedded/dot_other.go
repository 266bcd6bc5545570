//go:build !amd64 || purego

package embedded

const haveDotRows = false

func dotRows7(q *byte, rows *uint64, n, rowBytes, nchunks int, out *uint32) {
	panic("embedded: dotRows7 without AVX2")
}
