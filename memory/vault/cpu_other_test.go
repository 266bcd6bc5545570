//go:build !unix

package vault

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
