//go:build unix

package memory_test

import (
	"os"
	"syscall"
	"testing"
)

// TestMain runs the tests under umask 0, so that a mode the code does not
// give explicitly shows: what hearth creates must be private whatever the
// umask. The umask is the process's, hence here and not in a test.
func TestMain(m *testing.M) {
	syscall.Umask(0)
	os.Exit(m.Run())
}
