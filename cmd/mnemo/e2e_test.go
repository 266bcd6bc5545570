package main_test

// End-to-end tests of the terminal UI in a real terminal: tmux runs the
// real mnemo against the real hearth, whose model is the llmtest
// stand-in. The tests type with send-keys and read with capture-pane.
// They skip when tmux is not installed (CI installs it).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

const token = hearthtest.Token

// bins holds the real binaries, built with the race detector by the
// first test that needs them (see built).
var (
	bins     hearthtest.Binaries
	binsOnce sync.Once
	binsErr  error
)

// built builds the binaries once; tests that start them call it first.
func built(t testing.TB) {
	t.Helper()
	binsOnce.Do(func() { bins, binsErr = hearthtest.Build() })
	if binsErr != nil {
		t.Fatal(binsErr)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.Dir != "" {
		os.RemoveAll(bins.Dir)
	}
	os.Exit(code)
}

// startDaemon runs hearth on addr (127.0.0.1:0 for any port) with root,
// keeping its home beside the root so that a restart finds the same one.
func startDaemon(t *testing.T, root, addr string, env []string) *hearthtest.Daemon {
	t.Helper()
	built(t)
	return hearthtest.Start(t, bins.Hearth, hearthtest.Options{Root: root, Addr: addr, Home: filepath.Join(root, "..", "hearth-home"), Env: env})
}

func openaiEnv(s *llmtest.Server) []string { return hearthtest.OpenAIEnv(s) }

// tmux is a tmux server of the test's own.
type tmux struct {
	t    *testing.T
	sock string
	conf string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the terminal end-to-end tests need it (apt-get install tmux; CI installs it)")
	}
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	// Keep a pane whose program died, so that its last words can be read.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g history-limit 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := &tmux{t: t, sock: fmt.Sprintf("mnemo-e2e-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())), conf: conf}
	t.Cleanup(func() { tm.run("kill-server") })
	return tm
}

func (tm *tmux) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", tm.sock, "-f", tm.conf}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TMUX=") })
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (tm *tmux) must(args ...string) string {
	tm.t.Helper()
	out, err := tm.run(args...)
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(out)
}

// mnemoCmd is the shell command that runs mnemo on addr with a home of
// its own.
func mnemoCmd(t *testing.T, addr string) string {
	built(t)
	home := t.TempDir()
	return fmt.Sprintf("env HOME=%s XDG_STATE_HOME=%s XDG_CONFIG_HOME=%s APP_AUTH_TOKEN=%s %s --addr %s",
		home, filepath.Join(home, "state"), filepath.Join(home, "config"), token, bins.Mnemo, addr)
}

// start opens a session of w×h running command and returns its pane.
func (tm *tmux) start(w, h int, command string) string {
	return tm.must("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "main", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), command)
}

// split runs command in a new pane beside target and returns the pane.
func (tm *tmux) split(target, command string) string {
	return tm.must("split-window", "-h", "-P", "-F", "#{pane_id}", "-t", target, command)
}

func (tm *tmux) keys(pane string, keys ...string) {
	tm.t.Helper()
	tm.must(append([]string{"send-keys", "-t", pane}, keys...)...)
}

// text types s literally.
func (tm *tmux) text(pane, s string) {
	tm.t.Helper()
	tm.must("send-keys", "-t", pane, "-l", s)
}

func (tm *tmux) screen(pane string) string {
	out, _ := tm.run("capture-pane", "-p", "-t", pane)
	return out
}

// waitFor polls the pane until ok holds, and returns the screen.
func (tm *tmux) waitFor(pane, what string, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var s string
	for time.Now().Before(deadline) {
		if s = tm.screen(pane); ok(s) {
			return s
		}
		time.Sleep(10 * time.Millisecond) // polling the pane, not synchronising
	}
	tm.t.Fatalf("pane %s: no %s within 30s; screen:\n%s", pane, what, s)
	return ""
}

func (tm *tmux) waitText(pane, text string) string {
	tm.t.Helper()
	return tm.waitFor(pane, fmt.Sprintf("%q", text), func(s string) bool { return strings.Contains(s, text) })
}

// inputLine is the editor's first row: the line after the rule above it.
func inputLine(screen string) string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "────") && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	return ""
}

func TestTUIStreamsAndSurvivesRestart(t *testing.T) {
	tm := newTmux(t)
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))

	pane := tm.start(100, 30, mnemoCmd(t, d.Addr))
	tm.waitText(pane, "● connected")

	// Keystroke to screen: from send-keys of a character until
	// capture-pane shows it, polling without pause. One capture-pane
	// round trip is the measurement's resolution; it is logged too.
	var lat, capture []time.Duration
	typed := ""
	for _, r := range "keystrokelatency" {
		typed += string(r)
		start := time.Now()
		tm.text(pane, string(r))
		for deadline := start.Add(10 * time.Second); ; {
			c := time.Now()
			s := tm.screen(pane)
			capture = append(capture, time.Since(c))
			if strings.Contains(inputLine(s), typed) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q not on screen after 10s:\n%s", typed, s)
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	slices.Sort(capture)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
	t.Logf("keystroke to screen over %d keys (race-built mnemo): min %s, median %s, p90 %s, max %s; one capture-pane takes %s (median)",
		len(lat), ms(lat[0]), ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[len(lat)-1]), ms(capture[len(capture)/2]))
	tm.keys(pane, "C-u")
	tm.waitFor(pane, "an empty editor", func(s string) bool { return !strings.Contains(inputLine(s), "keystroke") })

	// A streamed reply: seen growing, then whole.
	words := strings.Fields("The garden plan: tomatoes by the north wall, basil between them, water every morning.")
	var chunks []llmtest.Chunk
	for _, w := range words {
		chunks = append(chunks, llmtest.Chunk{Text: w + " ", Delay: 60 * time.Millisecond})
	}
	model.Enqueue(llmtest.Reply{Chunks: chunks})
	tm.text(pane, "what about the garden?")
	tm.keys(pane, "Enter")
	partial := false
	tm.waitFor(pane, "the whole reply", func(s string) bool {
		if strings.Contains(s, "The garden plan") && !strings.Contains(s, "every morning.") {
			partial = true
		}
		return strings.Contains(s, "every morning.")
	})
	if !partial {
		t.Errorf("never saw the reply part-way: it did not stream")
	}

	// hearth restarts: the client shows it, reconnects, resyncs.
	d.Stop(t)
	tm.waitFor(pane, "the reconnecting state", func(s string) bool {
		return strings.Contains(s, "reconnecting") && strings.Contains(s, "hearth is not running on "+d.Addr)
	})
	d = startDaemon(t, root, d.Addr, openaiEnv(model))
	s := tm.waitText(pane, "reconnected · resynced")
	for _, want := range []string{"what about the garden?", "The garden plan"} {
		if n := strings.Count(s, want); n != 1 {
			t.Errorf("after the restart %q shows %d times, want 1:\n%s", want, n, s)
		}
	}

	// And it works on the new connection (the stand-in echoes).
	tm.text(pane, "still there?")
	tm.keys(pane, "Enter")
	tm.waitText(pane, "echo: still there?")
	tm.keys(pane, "C-c")
	tm.waitFor(pane, "mnemo to exit", func(s string) bool { return !strings.Contains(s, "● connected") })
}

func TestTUITwoClientsSideBySide(t *testing.T) {
	tm := newTmux(t)
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), "127.0.0.1:0", openaiEnv(model))

	left := tm.start(160, 30, mnemoCmd(t, d.Addr))
	right := tm.split(left, mnemoCmd(t, d.Addr))
	tm.waitText(left, "● connected")
	tm.waitText(right, "● connected")

	tm.text(left, "hello from the left")
	tm.keys(left, "Enter")
	for _, p := range []string{left, right} {
		s := tm.waitText(p, "echo: hello from the left")
		if n := strings.Count(s, "hello from the left"); n != 2 { // the message and its echo
			t.Errorf("pane %s shows the left message %d times, want 2:\n%s", p, n, s)
		}
	}
	tm.text(right, "and hello from the right")
	tm.keys(right, "Enter")
	for _, p := range []string{left, right} {
		tm.waitText(p, "echo: and hello from the right")
	}
}
