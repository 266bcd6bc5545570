//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package memory

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow makes opening the lock file fail on a symbolic link, which
// would otherwise let LockRoot truncate whatever file the link names.
const openNoFollow = unix.O_NOFOLLOW

// tryLock tries to take flock(2) on f, exclusive or shared, without blocking.
// ok is false when another open file holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (ok bool, err error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	errno := flock(f, how)
	switch {
	case errno == nil:
		return true, nil
	case errors.Is(errno, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, errno
}

// unlock drops f's flock(2).
func unlock(f *os.File) error { return flock(f, unix.LOCK_UN) }

// flock runs flock(2) on f's descriptor, retrying when a signal interrupts
// it. It goes through SyscallConn rather than Fd, which would put f in
// blocking mode for good.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno error
	err = rc.Control(func(fd uintptr) {
		for {
			errno = unix.Flock(int(fd), how)
			if !errors.Is(errno, unix.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if errno != nil {
		return os.NewSyscallError("flock", errno)
	}
	return nil
}
