package memory

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lockHelperEnv makes the test binary a lock holder: it locks the root the
// variable names, says "locked" and waits to be killed.
const lockHelperEnv = "MNEMO_TEST_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		if _, err := LockRoot(dir, Holder{Mode: HolderDaemon, Addr: "127.0.0.1:7744"}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		select {} // until killed
	}
	os.Exit(m.Run())
}

func TestLockRootOneOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	l, err := LockRoot(dir, Holder{Mode: HolderDaemon})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, LockFile): 0o600} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	if err := l.SetAddr("127.0.0.1:7744"); err != nil {
		t.Fatal(err)
	}

	// A second opener, even in this process, is refused and told who.
	_, err = LockRoot(dir, Holder{Mode: HolderLocal})
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrRootHeld) {
		t.Fatalf("second LockRoot = %v, want a *HeldError matching ErrRootHeld", err)
	}
	if held.Holder.PID != os.Getpid() || held.Holder.Mode != HolderDaemon || held.Holder.Addr != "127.0.0.1:7744" {
		t.Errorf("holder = %+v, want this pid, daemon, its address", held.Holder)
	}
	if msg := err.Error(); !strings.Contains(msg, "in use by hearth") || !strings.Contains(msg, "127.0.0.1:7744") {
		t.Errorf("error %q should name hearth and its address", msg)
	}
	if h, ok, err := ReadHolder(dir); err != nil || !ok || h.Addr != "127.0.0.1:7744" {
		t.Errorf("ReadHolder = %+v, %v, %v; want the holder", h, ok, err)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ReadHolder(dir); ok || err != nil {
		t.Errorf("ReadHolder after Close = %v, %v; want free", ok, err)
	}
	l2, err := LockRoot(dir, Holder{Mode: HolderLocal})
	if err != nil {
		t.Fatalf("LockRoot after Close: %v", err)
	}
	defer l2.Close()
	if _, err := LockRoot(dir, Holder{}); err == nil || !strings.Contains(err.Error(), "mnemo --local") {
		t.Errorf("a root held by --local: %v, want it named", err)
	}
}

func TestHeldErrorMessages(t *testing.T) {
	tests := []struct {
		h    Holder
		want string
	}{
		{Holder{}, "in use by another process"},
		{Holder{PID: 7, Mode: HolderLocal}, "in use by mnemo --local (pid 7)"},
		{Holder{PID: 7, Mode: HolderDaemon, Addr: "[::1]:9"}, "in use by hearth (pid 7, listening on [::1]:9)"},
		{Holder{PID: 7, Mode: HolderDaemon}, "in use by hearth (pid 7)"},
	}
	for _, tt := range tests {
		if got := (&HeldError{Dir: "/r", Holder: tt.h}).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want it to say %q", tt.h, got, tt.want)
		}
	}
}

func TestLockRootGarbageRecord(t *testing.T) {
	dir := t.TempDir()
	l, err := LockRoot(dir, Holder{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LockRoot(dir, Holder{})
	if !errors.Is(err, ErrRootHeld) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("with an unreadable record: %v, want a clear refusal", err)
	}
}

// A crashed owner (kill -9) leaves the file but not the lock.
func TestLockRootReleasedByKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("holder said %q, %v", line, err)
	}
	_, err = LockRoot(dir, Holder{})
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.PID != cmd.Process.Pid {
		t.Errorf("while the child holds it: %v, want its pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := LockRoot(dir, Holder{})
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err != nil {
		t.Errorf("the lock file should stay: %v", err)
	}
}

func TestGitignoreUpgradedForTheLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("my-notes.tmp\n/index\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), dir, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "my-notes.tmp\n/index\n"+LockFile+"\n"; got != want {
		t.Errorf(".gitignore = %q, want %q: the owner's lines kept, the lock added once", got, want)
	}
}
