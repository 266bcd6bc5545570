//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package memory_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory"
)

func lockRoot(t *testing.T, dir string, h memory.Holder) *memory.RootLock {
	t.Helper()
	l, err := memory.LockRoot(dir, h)
	if err != nil {
		t.Fatalf("LockRoot: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// heldBy checks that locking dir fails with a *HeldError naming want, and
// that ReadHolder reports the same holder.
func heldBy(t *testing.T, dir string, want memory.Holder, wantMsg string) {
	t.Helper()
	l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeLocal})
	if err == nil {
		l.Close()
		t.Fatalf("LockRoot of a held root succeeded")
	}
	if !errors.Is(err, memory.ErrRootHeld) {
		t.Errorf("LockRoot: %v, want an error matching ErrRootHeld", err)
	}
	var held *memory.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("LockRoot: %v (%T), want a *HeldError", err, err)
	}
	if held.Dir != dir {
		t.Errorf("HeldError.Dir = %q, want %q", held.Dir, dir)
	}
	if diff := cmp.Diff(want, held.Holder); diff != "" {
		t.Errorf("HeldError.Holder (-want +got):\n%s", diff)
	}
	if err.Error() != wantMsg {
		t.Errorf("HeldError = %q, want %q", err, wantMsg)
	}

	got, ok, err := memory.ReadHolder(dir)
	if err != nil || !ok {
		t.Fatalf("ReadHolder = %+v, %v, %v, want the holder", got, ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadHolder (-want +got):\n%s", diff)
	}
}

func assertFree(t *testing.T, dir string) {
	t.Helper()
	if h, ok, err := memory.ReadHolder(dir); ok || err != nil {
		t.Errorf("ReadHolder of a free root = %+v, %v, %v, want not held", h, ok, err)
	}
}

func TestLockRoot(t *testing.T) {
	since := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		holder  memory.Holder
		want    memory.Holder // as recorded
		wantMsg string        // with %[1]s for the root, %[2]d for this pid
	}{
		{
			name:    "daemon",
			holder:  memory.Holder{Mode: memory.ModeDaemon, Addr: "127.0.0.1:7744", Since: since},
			want:    memory.Holder{PID: os.Getpid(), Mode: memory.ModeDaemon, Addr: "127.0.0.1:7744", Since: since},
			wantMsg: "memory root %[1]s is in use by hearth (pid %[2]d, listening on 127.0.0.1:7744)",
		},
		{
			name:    "local",
			holder:  memory.Holder{Mode: memory.ModeLocal, Since: since},
			want:    memory.Holder{PID: os.Getpid(), Mode: memory.ModeLocal, Since: since},
			wantMsg: "memory root %[1]s is in use by mnemo --local (pid %[2]d)",
		},
		{
			name:    "given pid",
			holder:  memory.Holder{PID: 4242, Mode: memory.ModeDaemon, Since: since},
			want:    memory.Holder{PID: 4242, Mode: memory.ModeDaemon, Since: since},
			wantMsg: "memory root %[1]s is in use by hearth (pid 4242)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			assertFree(t, dir)
			l := lockRoot(t, dir, tt.holder)

			// The lock belongs to the open file, so this process cannot
			// take it twice either; and ReadHolder, which opens and closes
			// the file, does not drop it (as closing would a POSIX lock).
			heldBy(t, dir, tt.want, fmt.Sprintf(tt.wantMsg, dir, os.Getpid()))
			heldBy(t, dir, tt.want, fmt.Sprintf(tt.wantMsg, dir, os.Getpid()))

			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close: %v, want nil", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "hearth.lock")); err != nil {
				t.Errorf("Close removed the lock file: %v", err)
			}
			assertFree(t, dir)
			lockRoot(t, dir, memory.Holder{Mode: memory.ModeLocal})
		})
	}
}

func TestLockRootDefaults(t *testing.T) {
	dir := t.TempDir()
	before := time.Now()
	lockRoot(t, dir, memory.Holder{Mode: memory.ModeDaemon})
	h, ok, err := memory.ReadHolder(dir)
	if err != nil || !ok {
		t.Fatalf("ReadHolder = %+v, %v, %v, want the holder", h, ok, err)
	}
	if h.PID != os.Getpid() {
		t.Errorf("PID = %d, want this process, %d", h.PID, os.Getpid())
	}
	if h.Since.Before(before.Round(0)) || h.Since.After(time.Now()) {
		t.Errorf("Since = %v, want the time of LockRoot (after %v)", h.Since, before)
	}
}

func TestSetAddr(t *testing.T) {
	dir := t.TempDir()
	since := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	l := lockRoot(t, dir, memory.Holder{Mode: memory.ModeDaemon, Since: since})
	want := memory.Holder{PID: os.Getpid(), Mode: memory.ModeDaemon, Since: since}
	heldBy(t, dir, want, fmt.Sprintf("memory root %s is in use by hearth (pid %d)", dir, os.Getpid()))

	for _, addr := range []string{"127.0.0.1:7744", "[::1]:40123"} {
		if err := l.SetAddr(addr); err != nil {
			t.Fatalf("SetAddr: %v", err)
		}
		want.Addr = addr
		heldBy(t, dir, want, fmt.Sprintf("memory root %s is in use by hearth (pid %d, listening on %s)", dir, os.Getpid(), addr))
	}

	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.SetAddr("127.0.0.1:1"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("SetAddr after Close: %v, want fs.ErrClosed", err)
	}
	assertFree(t, dir)
}

// A holder killed with SIGKILL runs no clean-up, yet its lock goes with it;
// the record it leaves behind is stale and names nobody.
func TestLockRootReleasedOnKill(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("no test binary to run: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // kept open: the helper waits for its end
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	var waitOnce sync.Once
	var waitErr error
	wait := func() error {
		waitOnce.Do(func() {
			io.Copy(io.Discard, stdout) // Wait must follow the last read
			waitErr = cmd.Wait()
		})
		return waitErr
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		wait()
	})

	lines := bufio.NewScanner(stdout)
	locked := false
	for !locked && lines.Scan() {
		locked = lines.Text() == "locked"
	}
	if !locked {
		stdin.Close()
		t.Fatalf("helper did not lock the root: %v\n%s", wait(), stderr.String())
	}

	pid := cmd.Process.Pid
	l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeDaemon})
	var held *memory.HeldError
	if !errors.As(err, &held) {
		l.Close()
		t.Fatalf("LockRoot of the helper's root: %v, want a *HeldError", err)
	}
	if held.Holder.PID != pid || held.Holder.Mode != memory.ModeLocal {
		t.Errorf("HeldError names %+v, want pid %d, mode local", held.Holder, pid)
	}
	if want := fmt.Sprintf("memory root %s is in use by mnemo --local (pid %d)", dir, pid); err.Error() != want {
		t.Errorf("HeldError = %q, want %q", err, want)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	err = wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want killed by SIGKILL", err)
	}

	record, err := os.ReadFile(filepath.Join(dir, "hearth.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(record), fmt.Sprintf(`"pid":%d`, pid)) {
		t.Errorf("lock file = %q, want the killed helper's stale record", record)
	}
	assertFree(t, dir)
	l = lockRoot(t, dir, memory.Holder{Mode: memory.ModeDaemon})
	if h, ok, err := memory.ReadHolder(dir); err != nil || !ok || h.PID != os.Getpid() {
		t.Errorf("ReadHolder after taking over = %+v, %v, %v, want this process", h, ok, err)
	}
}

// lockHelperEnv, set to a directory, makes TestLockHelperProcess a holder of
// that root for TestLockRootReleasedOnKill.
const lockHelperEnv = "MNEMO_TEST_LOCK_HELPER"

// TestLockHelperProcess is no test: run by TestLockRootReleasedOnKill in a
// child process, it locks a root, says "locked" on stdout and holds the lock
// until its stdin ends or it is killed.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		return
	}
	l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeLocal})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.Close()
	os.Exit(0)
}

// A holder whose record cannot be read is still reported, clearly.
func TestLockRootUnreadableRecord(t *testing.T) {
	tests := []struct {
		name   string
		record string
	}{
		{"empty", ""},
		{"garbage", "\x00\xffnot json"},
		{"cut short", `{"pid":12`},
		{"no pid", `{"mode":"daemon"}`},
		{"json null", "null"},
		{"too long", `{"pid":12,"mode":"` + strings.Repeat("x", 70<<10) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			lockRoot(t, dir, memory.Holder{Mode: memory.ModeDaemon})
			// Advisory: the lock does not keep anyone from writing.
			writeFile(t, filepath.Join(dir, "hearth.lock"), tt.record)
			want := fmt.Sprintf("memory root %s is in use by another process (no readable holder record in %s)",
				dir, filepath.Join(dir, "hearth.lock"))
			heldBy(t, dir, memory.Holder{}, want)
		})
	}
}

func TestHeldErrorMessage(t *testing.T) {
	tests := []struct {
		holder memory.Holder
		want   string
	}{
		{memory.Holder{PID: 123, Mode: "daemon", Addr: "127.0.0.1:7744"}, "memory root /x is in use by hearth (pid 123, listening on 127.0.0.1:7744)"},
		{memory.Holder{PID: 123, Mode: "daemon"}, "memory root /x is in use by hearth (pid 123)"},
		{memory.Holder{PID: 123, Mode: "local"}, "memory root /x is in use by mnemo --local (pid 123)"},
		{memory.Holder{PID: 123}, "memory root /x is in use by another process (pid 123)"},
		{memory.Holder{PID: 123, Mode: "cron"}, `memory root /x is in use by a "cron" process (pid 123)`},
		{memory.Holder{}, "memory root /x is in use by another process (no readable holder record in /x/hearth.lock)"},
	}
	for _, tt := range tests {
		err := &memory.HeldError{Dir: "/x", Holder: tt.holder}
		if err.Error() != tt.want {
			t.Errorf("%+v: Error() = %q, want %q", tt.holder, err, tt.want)
		}
		if !errors.Is(fmt.Errorf("start: %w", err), memory.ErrRootHeld) {
			t.Errorf("%+v: does not match ErrRootHeld", tt.holder)
		}
	}
}

// A record left by a holder that crashed does not make the root held.
func TestLockRootStaleRecord(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hearth.lock"), `{"pid":1,"mode":"daemon","addr":"127.0.0.1:7744","since":"2026-11-22T06:00:00Z"}`+"\n")
	assertFree(t, dir)
	lockRoot(t, dir, memory.Holder{Mode: memory.ModeLocal})
	h, ok, err := memory.ReadHolder(dir)
	if err != nil || !ok || h.PID != os.Getpid() || h.Mode != memory.ModeLocal || h.Addr != "" {
		t.Errorf("ReadHolder = %+v, %v, %v, want this process's record only", h, ok, err)
	}
}

func TestLockRootPermissions(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data", "mnemo")
	if h, ok, err := memory.ReadHolder(dir); ok || err != nil {
		t.Errorf("ReadHolder of a missing root = %+v, %v, %v, want not held", h, ok, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadHolder created the root: %v", err)
	}
	lockRoot(t, dir, memory.Holder{Mode: memory.ModeDaemon})

	// A lock file made by hand, readable by all, is made private.
	loose := filepath.Join(parent, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(loose, "hearth.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lockRoot(t, loose, memory.Holder{Mode: memory.ModeDaemon})

	for name, want := range map[string]fs.FileMode{
		"data":                   fs.ModeDir | 0o700,
		"data/mnemo":             fs.ModeDir | 0o700,
		"data/mnemo/hearth.lock": 0o600,
		"loose/hearth.lock":      0o600,
		"loose":                  fs.ModeDir | 0o755, // an existing root is left as it is
	} {
		st, err := os.Stat(filepath.Join(parent, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("Stat: %v", err)
			continue
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
		}
	}
}

// A lock file that is a symbolic link is refused, not followed: LockRoot
// would otherwise truncate the file it names.
func TestLockRootSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "precious")
	writeFile(t, target, "keep me")
	if err := os.Symlink(target, filepath.Join(dir, "hearth.lock")); err != nil {
		t.Fatal(err)
	}
	if l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeDaemon}); err == nil {
		l.Close()
		t.Errorf("LockRoot through a symbolic link succeeded")
	} else if errors.Is(err, memory.ErrRootHeld) {
		t.Errorf("LockRoot through a symbolic link: %v, want an error that is not ErrRootHeld", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
		t.Errorf("link target = %q, %v, want it untouched", b, err)
	}
}

func TestLockRootNoDir(t *testing.T) {
	if l, err := memory.LockRoot("", memory.Holder{}); err == nil {
		l.Close()
		t.Error("LockRoot(\"\") succeeded")
	}
	if _, _, err := memory.ReadHolder(""); err == nil {
		t.Error("ReadHolder(\"\") succeeded")
	}
}

// Of many processes (here, open files) racing for a root, one wins and the
// others learn that it is held. ReadHolder is left out of the race: its
// probe may hold the lock for an instant, and LockRoot waits out such an
// instant only for a few tries.
func TestLockRootRace(t *testing.T) {
	dir := t.TempDir()
	const racers = 8
	locks := make(chan *memory.RootLock, racers)
	errs := make(chan error, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeDaemon})
			if err != nil {
				errs <- err
				return
			}
			locks <- l
		})
	}
	wg.Wait()
	close(locks)
	close(errs)
	var winner *memory.RootLock
	for l := range locks {
		if winner != nil {
			t.Errorf("more than one racer took the lock")
		}
		winner = l
		t.Cleanup(func() { l.Close() })
	}
	if winner == nil {
		t.Fatalf("no racer took the lock")
	}
	for err := range errs {
		if !errors.Is(err, memory.ErrRootHeld) {
			t.Errorf("racer: %v, want ErrRootHeld", err)
		}
	}

	// Readers see one whole record or none while the holder rewrites it.
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	wg.Go(func() {
		for i := range 50 {
			if err := winner.SetAddr(addrs[i%2]); err != nil {
				t.Errorf("SetAddr: %v", err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 50 {
				h, ok, err := memory.ReadHolder(dir)
				if err != nil || !ok {
					t.Errorf("ReadHolder = %+v, %v, %v, want held", h, ok, err)
					return
				}
				if h.PID != 0 && h.PID != os.Getpid() {
					t.Errorf("ReadHolder = %+v, want this process or unreadable", h)
				}
			}
		})
	}
	wg.Wait()

	// Close and SetAddr racing: SetAddr either lands before Close or
	// reports the lock closed.
	var setErr error
	wg.Go(func() { setErr = winner.SetAddr("127.0.0.1:7744") })
	if err := winner.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if setErr != nil && !errors.Is(setErr, fs.ErrClosed) {
		t.Errorf("SetAddr racing Close: %v, want nil or fs.ErrClosed", setErr)
	}
	assertFree(t, dir)
}
