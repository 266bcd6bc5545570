//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// guardChild is set in the environment of the test binary run as a child
// by TestGuardTerminal: the child guards its (pretend) terminal and then
// does what the value says.
const guardChild = "MNEMO_TEST_GUARD_CHILD"

// TestGuardTerminal: while the UI runs, what a library prints on its own
// (Go's fmt.Println to standard output, a C library's write(2) on fd 2,
// a crash's stack trace) lands in the stray file, never on the terminal;
// the UI still draws on the terminal; afterwards 1 and 2 are the terminal
// again, and restore counts what strayed. Each case runs in a child
// process, since it moves the process's own file descriptors.
func TestGuardTerminal(t *testing.T) {
	if mode := os.Getenv(guardChild); mode != "" {
		runGuardChild(mode)
		return
	}
	for _, tt := range []struct {
		mode       string
		wantOut    []string // on the child's standard output (the terminal)
		wantStray  []string
		notOnTerm  []string
		wantFailed bool
	}{
		{
			mode:      "print",
			wantOut:   []string{"the UI draws here", "after the UI", "strayed 59 bytes (<nil>)"},
			wantStray: []string{"fmt.Println from a library", "write(2) on fd 2", "stderr from Go"},
			notOnTerm: []string{"fmt.Println from a library", "write(2) on fd 2", "stderr from Go"},
		},
		{
			mode:       "crash",
			wantOut:    []string{"the UI draws here"},
			wantStray:  []string{"panic: the UI crashed", "goroutine"},
			notOnTerm:  []string{"panic: the UI crashed"},
			wantFailed: true,
		},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			stray := filepath.Join(t.TempDir(), "stray.log")
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestGuardTerminal$")
			cmd.Env = append(os.Environ(), guardChild+"="+tt.mode, "MNEMO_TEST_STRAY="+stray)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if failed := err != nil; failed != tt.wantFailed {
				t.Fatalf("child failed %v (%v), want %v; stdout:\n%s\nstderr:\n%s", failed, err, tt.wantFailed, &stdout, &stderr)
			}
			term := stdout.String() + stderr.String()
			for _, s := range tt.wantOut {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("the terminal lacks %q:\n%s", s, &stdout)
				}
			}
			for _, s := range tt.notOnTerm {
				if strings.Contains(term, s) {
					t.Errorf("%q reached the terminal:\n%s", s, term)
				}
			}
			got, err := os.ReadFile(stray)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.wantStray {
				if !bytes.Contains(got, []byte(s)) {
					t.Errorf("the stray file lacks %q:\n%s", s, got)
				}
			}
			if st, err := os.Stat(stray); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("stray file mode %v (%v), want 0600", st.Mode().Perm(), err)
			}
		})
	}
}

func runGuardChild(mode string) {
	term, restore, err := guardTerminal(os.Getenv("MNEMO_TEST_STRAY"), func(int) bool { return true })
	if err != nil {
		fmt.Println("guard:", err)
		os.Exit(3)
	}
	fmt.Fprintln(term, "the UI draws here")
	switch mode {
	case "print":
		fmt.Println("fmt.Println from a library")   // 27 bytes
		unix.Write(2, []byte("write(2) on fd 2\n")) // 17: as a C library writes
		fmt.Fprintln(os.Stderr, "stderr from Go")   // 15
		n, err := restore()
		fmt.Println("after the UI")
		fmt.Printf("strayed %d bytes (%v)\n", n, err)
		os.Exit(0)
	case "crash":
		panic("the UI crashed")
	}
}

// TestGuardNotATerminal: with standard output not a terminal (a pipe, a
// test), nothing moves: the UI writes to standard output itself.
func TestGuardNotATerminal(t *testing.T) {
	stray := filepath.Join(t.TempDir(), "stray.log")
	term, restore, err := guardTerminal(stray, func(int) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if term != os.Stdout {
		t.Errorf("term is %v, want os.Stdout", term.Name())
	}
	if n, err := restore(); n != 0 || err != nil {
		t.Errorf("restore = %d, %v", n, err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("stray file made without a terminal (%v)", err)
	}
}
