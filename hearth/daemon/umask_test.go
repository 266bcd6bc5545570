//go:build unix

package daemon

import (
	"os"
	"syscall"
	"testing"
)

// TestMain runs the tests under umask 0, so that a mode hearth does not
// give explicitly shows (see TestFreshRootIsPrivate). The umask is the
// process's, hence here and not in a test.
func TestMain(m *testing.M) {
	syscall.Umask(0)
	os.Exit(m.Run())
}
