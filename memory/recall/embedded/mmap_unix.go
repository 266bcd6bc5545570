//go:build unix

package embedded

import (
	"os"
	"unsafe"

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

// mapColumn maps the n bytes of f at off (a multiple of the page size)
// privately and writable at the start of a reservation of capBytes, so
// that a column loaded from a snapshot is used in place and can still
// change and grow there: a page the index writes or adds becomes the
// process's own (copy on write), the file never changes, and the pages
// never touched stay in the page cache. A hot column (read whole by
// every query) is read into the reservation instead: scanning anonymous
// memory measured two to three times faster than scanning the same bytes
// in a file mapping on this machine. release unmaps the reservation.
func mapColumn(f *os.File, off int64, n, capBytes int, hot bool) (b []byte, release func(), err error) {
	page := os.Getpagesize()
	size := (max(capBytes, n, 1) + page - 1) / page * page
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, err
	}
	release = func() { _ = unix.MunmapPtr(base, uintptr(size)) }
	if hot {
		b = unsafe.Slice((*byte)(base), size)[:n]
		// Huge pages where the kernel has them: a few hundred faults
		// instead of one per 4 KiB page for the read below.
		_ = unix.Madvise(unsafe.Slice((*byte)(base), size), unix.MADV_HUGEPAGE)
		if _, err := f.ReadAt(b, off); err != nil {
			release()
			return nil, nil, err
		}
		return b, release, nil
	}
	if n > 0 {
		if _, err := unix.MmapPtr(int(f.Fd()), off, base, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			release()
			return nil, nil, err
		}
	}
	return unsafe.Slice((*byte)(base), size)[:n], release, nil
}
