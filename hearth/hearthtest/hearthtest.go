// Package hearthtest runs the real hearth and mnemo binaries for end-to-end
// tests: it builds them once and starts hearth on a loopback port with a
// memory root, an environment and a log the test can read.
package hearthtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// Token is the auth token end-to-end tests give hearth.
const Token = "e2e-token-0123456789abcdef"

// Binaries are the built hearth and mnemo.
type Binaries struct {
	Dir, Hearth, Mnemo string
}

// Build builds cmd/hearth and cmd/mnemo into a new temp dir, with the race
// detector; call it from TestMain and remove Dir afterwards.
func Build() (Binaries, error) {
	dir, err := os.MkdirTemp("", "mnemo-e2e-bin")
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Dir: dir, Hearth: filepath.Join(dir, "hearth"), Mnemo: filepath.Join(dir, "mnemo")}
	for out, pkg := range map[string]string{b.Hearth: "github.com/mnemo/mnemo/cmd/hearth", b.Mnemo: "github.com/mnemo/mnemo/cmd/mnemo"} {
		cmd := exec.Command("go", "build", "-race", "-o", out, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			os.RemoveAll(dir)
			return Binaries{}, fmt.Errorf("build %s: %w", pkg, err)
		}
	}
	return b, nil
}

// Options say how to start hearth.
type Options struct {
	Root string   // memory root
	Addr string   // default 127.0.0.1:0
	Home string   // HOME (and XDG_CONFIG_HOME under it); default a new temp dir
	Env  []string // added to HOME, XDG_CONFIG_HOME, PATH and APP_AUTH_TOKEN
	Args []string // extra flags
	// Umask, when set (e.g. "000"), is hearth's umask: it starts through
	// sh, so that the test binary's own umask stays as it is.
	Umask string
}

// Daemon is one run of the real hearth binary.
type Daemon struct {
	Cmd  *exec.Cmd
	Addr string
	Root string

	done chan error
	mu   sync.Mutex
	log  bytes.Buffer
}

var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// Start runs hearth and waits until it listens; the test's cleanup kills
// it if it still runs, and prints its log if the test failed.
func Start(t testing.TB, bin string, o Options) *Daemon {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	args := append([]string{"-addr", o.Addr, "-root", o.Root}, o.Args...)
	cmd := exec.Command(bin, args...)
	if o.Umask != "" {
		cmd = exec.Command("/bin/sh", append([]string{"-c", `umask "$0" && exec "$@"`, o.Umask, bin}, args...)...)
	}
	cmd.Env = append([]string{
		"HOME=" + o.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(o.Home, "config"),
		"PATH=" + os.Getenv("PATH"),
		"APP_AUTH_TOKEN=" + Token,
		// The curator's model calls would take the stand-in's scripted
		// replies; a test that wants it sets MNEMO_CURATOR=true in Env.
		"MNEMO_CURATOR=false",
	}, o.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Cmd: cmd, Root: o.Root, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.log.WriteString(line + "\n")
			d.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("hearth log:\n%s", d.Log())
		}
	})
	select {
	case d.Addr = <-addr:
		return d
	case err := <-d.done:
		t.Fatalf("hearth exited before listening: %v\n%s", err, d.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("hearth did not listen in time\n%s", d.Log())
	}
	return nil
}

// Log is what hearth has logged so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("hearth exit: %v\n%s", err, d.Log())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hearth did not stop on SIGTERM")
	}
}

// Kill ends hearth with SIGKILL, as a crash would.
func (d *Daemon) Kill(t testing.TB) {
	t.Helper()
	d.Cmd.Process.Kill()
	<-d.done
}

// OpenAIEnv configures hearth for an OpenAI-compatible stand-in.
func OpenAIEnv(s *llmtest.Server) []string {
	return []string{"MNEMO_PROVIDER=openai", "OPENAI_BASE_URL=" + s.URL, "OPENAI_API_KEY=sk-test", "MNEMO_MODEL=stand-in"}
}

// ListenAddr returns the address in hearth's "listening" log line.
func ListenAddr(line string) (string, bool) {
	m := listening.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Exited waits up to wait for hearth to exit on its own and returns how it
// exited.
func (d *Daemon) Exited(t testing.TB, wait time.Duration) error {
	t.Helper()
	select {
	case err := <-d.done:
		return err
	case <-time.After(wait):
		t.Fatalf("hearth did not exit within %s", wait)
		return nil
	}
}
