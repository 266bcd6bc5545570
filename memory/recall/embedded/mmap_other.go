//go:build !unix

package embedded

import (
	"io"
	"os"
)

// mapFile reads f's first n bytes into memory where mmap is not available.
func mapFile(f *os.File, n int64) (b []byte, drop, release func(), err error) {
	b = make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, n), b); err != nil {
		return nil, nil, nil, err
	}
	return b, func() {}, func() {}, nil
}

// mapColumn reads the n bytes of f at off onto the heap where mmap is not
// available (appends then grow it as any slice).
func mapColumn(f *os.File, off int64, n, capBytes int, _ bool) (b []byte, release func(), err error) {
	b = heapColumn(n, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
