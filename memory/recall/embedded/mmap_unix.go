//go:build unix

package embedded

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f's first n bytes read-only. release unmaps them; drop
// tells the kernel the pages are not needed now (they come back from the
// page cache when touched), so that a mapping read once to check it does
// not stay in the resident set.
func mapFile(f *os.File, n int64) (b []byte, drop, release func(), err error) {
	if n == 0 {
		return nil, func() {}, func() {}, nil
	}
	b, err = unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, nil, err
	}
	drop = func() { _ = unix.Madvise(b, unix.MADV_DONTNEED) }
	release = func() { _ = unix.Munmap(b) }
	return b, drop, release, nil
}
