//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package memory

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// openNoFollow is a no-op where the lock is not implemented.
const openNoFollow = 0

// tryLock fails: the memory root lock uses flock(2), which this system does
// not have. LockRoot and ReadHolder return an error wrapping
// errors.ErrUnsupported.
func tryLock(*os.File, bool) (bool, error) {
	return false, fmt.Errorf("no flock on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// unlock is never reached where tryLock always fails.
func unlock(*os.File) error { return nil }
