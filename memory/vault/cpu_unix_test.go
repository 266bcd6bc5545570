//go:build unix

package vault

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used: what a
// benchmark's work costs on a machine whose other load makes wall time
// noisy.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
