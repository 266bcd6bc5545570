// Package reliability holds the crash-and-fault harness and the soak test
// of the real hearth binary (DESIGN.md, Reliability). `make test` runs the
// short versions; `make reliability` and `make soak` the long ones, set by
// the flags below.
package reliability

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

var (
	cycles   = flag.Int("cycles", 20, "crash loop: kill -9 cycles (make reliability runs 1,000)")
	writers  = flag.Int("writers", 3, "crash loop: concurrent NDJSON writers of chat messages")
	seed     = flag.Int64("seed", 0, "crash loop: random seed (0: from the clock, logged)")
	race     = flag.Bool("race", true, "build hearth with the race detector")
	soakFor  = flag.Duration("soak", 0, "soak: how long (0: 10s, the short version)")
	soakStep = flag.Duration("soak.every", 0, "soak: how often to report (0: a tenth of -soak, at most 1m)")
)

// hearthBin is the real hearth, built once for the package.
var hearthBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "mnemo-reliability-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hearthBin = filepath.Join(dir, "hearth")
	args := []string{"build", "-o", hearthBin}
	if *race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/mnemo/mnemo/cmd/hearth")...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build hearth:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every client, stand-in server and daemon watcher the tests
		// started must be gone (goleak.Find retries for a while, so a
		// goroutine on its way out is not a leak).
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
