package main_test

// End-to-end tests of the everyday commands: the real mnemo against the
// real hearth, whose model is the llmtest stand-in; no terminal needed.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// mnemoRun is the outcome of one mnemo command.
type mnemoRun struct {
	stdout, stderr string
	code           int
}

// runMnemo runs mnemo --addr addr args... with stdin, in a home of its
// own, and returns what it printed and its exit status.
func runMnemo(t *testing.T, addr, tok, stdin string, args ...string) mnemoRun {
	t.Helper()
	built(t)
	home := t.TempDir()
	cmd := exec.Command(bins.Mnemo, append([]string{"--addr", addr}, args...)...)
	cmd.Env = []string{
		"HOME=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"PATH=" + os.Getenv("PATH"),
		"APP_AUTH_TOKEN=" + tok,
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := mnemoRun{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mnemo %v: %v", args, err)
	}
	return r
}

func (r mnemoRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%sstderr:\n%s", r.code, r.stdout, r.stderr)
}

// lines are the non-empty lines of s.
func lines(s string) []string {
	return slices.DeleteFunc(strings.Split(s, "\n"), func(l string) bool { return l == "" })
}

// A hearth whose snapshot holds 3 turns, with 8 stored: history reads
// back beyond the snapshot with -n and --all, in JSON for scripts, and
// from a time on with --since.
func TestHistoryCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemonArgs(t, filepath.Join(t.TempDir(), "root"), openaiEnv(model), "-history", "3")
	for _, m := range []string{"one", "two", "three", "four"} {
		if r := runMnemo(t, d.Addr, token, "", "send", m); r.code != 0 {
			t.Fatalf("send %s: %v", m, r)
		}
	}
	all := []string{"user: one", "agent: echo: one", "user: two", "agent: echo: two", "user: three", "agent: echo: three", "user: four", "agent: echo: four"}

	// JSON: the wire's turn objects, one a line, oldest first.
	r := runMnemo(t, d.Addr, token, "", "history", "--all", "--json")
	if r.code != 0 {
		t.Fatalf("history --all --json: %v", r)
	}
	var turns []ipc.Turn
	for _, l := range lines(r.stdout) {
		var turn ipc.Turn
		if err := json.Unmarshal([]byte(l), &turn); err != nil {
			t.Fatalf("history --json line %q: %v", l, err)
		}
		turns = append(turns, turn)
	}
	if len(turns) != len(all) {
		t.Fatalf("history --all --json printed %d turns, want %d:\n%s", len(turns), len(all), r.stdout)
	}
	for i, turn := range turns {
		if got := turn.Role + ": " + turn.Content; got != all[i] || turn.ID == "" || turn.TS.IsZero() {
			t.Errorf("turn %d: %+v, want %q with an id and a time", i, turn, all[i])
		}
		if i > 0 && turn.ID <= turns[i-1].ID {
			t.Errorf("turns out of order at %d", i)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default: the snapshot", nil, all[5:]},
		{"-n beyond the snapshot", []string{"-n", "5"}, all[3:]},
		{"-n 1", []string{"-n", "1"}, all[7:]},
		{"--all", []string{"--all"}, all},
		{"--since a turn's time", []string{"--since", turns[4].TS.Format(time.RFC3339Nano)}, all[4:]},
		{"--since and -n", []string{"--since", turns[4].TS.Format(time.RFC3339Nano), "-n", "2"}, all[6:]},
		{"--since a duration", []string{"--since", "1h"}, all},
		{"--since tomorrow", []string{"--since", time.Now().AddDate(0, 0, 2).Format(time.DateOnly)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runMnemo(t, d.Addr, token, "", append([]string{"history"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("history %v: %v", tc.args, r)
			}
			var got []string
			for _, l := range lines(r.stdout) {
				_, rest, _ := strings.Cut(l, "] ")
				got = append(got, rest)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("history %v printed\n%s\nwant %q", tc.args, r.stdout, tc.want)
			}
		})
	}

	if r := runMnemo(t, d.Addr, token, "", "history", "-n", "2", "--all"); r.code != 2 {
		t.Errorf("history -n 2 --all: %v, want exit 2", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "history", "--since", "someday"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Errorf("history --since someday: %v, want exit 2 saying what --since takes", r)
	}
}

// startDaemonArgs is startDaemon on any port, with extra flags.
func startDaemonArgs(t *testing.T, root string, env []string, args ...string) *hearthtest.Daemon {
	t.Helper()
	built(t)
	return hearthtest.Start(t, bins.Hearth, hearthtest.Options{Root: root, Home: filepath.Join(root, "..", "hearth-home"), Env: env, Args: args})
}

// Piped chat prints what it sent before each reply, and exits 1 when a
// message failed.
func TestChatPiped(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), "127.0.0.1:0", openaiEnv(model))

	r := runMnemo(t, d.Addr, token, "good morning\nhow are you?\n", "chat")
	if r.code != 0 {
		t.Fatalf("chat: %v", r)
	}
	out := r.stdout
	order := []string{"> good morning", "agent: echo: good morning", "> how are you?", "agent: echo: how are you?"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("chat output lacks %q after offset %d (want the order %q):\n%s", want, at, order, out)
		}
		at += i + len(want)
	}
	if strings.Count(out, "> good morning") != 1 {
		t.Errorf("message echoed more than once:\n%s", out)
	}

	// The model fails the first message: chat goes on, then exits 1.
	model.Enqueue(llmtest.Reply{Status: 400, ErrorCode: "invalid_request_error"})
	r = runMnemo(t, d.Addr, token, "this one fails\nthis one works\n", "chat")
	if r.code != 1 {
		t.Fatalf("chat with a failed message: %v, want exit 1", r)
	}
	for _, want := range []string{"> this one fails", "! ", "> this one works", "agent: echo: this one works"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "1 of 2 messages failed") {
		t.Errorf("chat stderr %q, want how many failed", r.stderr)
	}
}

// send's exit statuses: 0 answered, 1 the turn failed, 2 usage, 3 hearth
// unreachable or refusing the client.
func TestSendExitCodes(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), "127.0.0.1:0", openaiEnv(model))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now

	for _, tc := range []struct {
		name   string
		addr   string
		tok    string
		fail   bool
		args   []string
		code   int
		stdout string
	}{
		{name: "answered", addr: d.Addr, tok: token, args: []string{"send", "hello"}, code: 0, stdout: "echo: hello"},
		{name: "provider failed", addr: d.Addr, tok: token, fail: true, args: []string{"send", "hello"}, code: 1},
		{name: "no text", addr: d.Addr, tok: token, args: []string{"send"}, code: 2},
		{name: "unknown command", addr: d.Addr, tok: token, args: []string{"sned", "hello"}, code: 2},
		{name: "unknown flag", addr: d.Addr, tok: token, args: []string{"--bogus", "send", "hello"}, code: 2},
		{name: "forget without ids", addr: d.Addr, tok: token, args: []string{"forget"}, code: 2},
		{name: "search without a query", addr: d.Addr, tok: token, args: []string{"search"}, code: 2},
		{name: "nothing listening", addr: closed, tok: token, args: []string{"send", "hello"}, code: 3},
		{name: "wrong token", addr: d.Addr, tok: "wrong-token-0123456789", args: []string{"send", "hello"}, code: 3},
		{name: "no token", addr: d.Addr, args: []string{"send", "hello"}, code: 3},
		{name: "unknown command, no token", addr: d.Addr, args: []string{"sned", "hello"}, code: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail {
				model.Enqueue(llmtest.Reply{Status: 400, ErrorCode: "invalid_request_error"})
			}
			r := runMnemo(t, tc.addr, tc.tok, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) {
				t.Errorf("mnemo %v: %v\nwant exit %d and %q", tc.args, r, tc.code, tc.stdout)
			}
			if tc.code != 0 && !strings.HasPrefix(r.stderr, "mnemo: ") {
				t.Errorf("mnemo %v failed without saying why: %q", tc.args, r.stderr)
			}
		})
	}
}

// Piped chat whose hearth dies while a reply is owed exits 1 saying so,
// instead of waiting for an answer that will never come.
func TestChatPipedHearthGoesAway(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	model.Enqueue(llmtest.Reply{Hang: true})
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), "127.0.0.1:0", openaiEnv(model))

	home := t.TempDir()
	cmd := exec.Command(bins.Mnemo, "--addr", d.Addr, "chat")
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "APP_AUTH_TOKEN=" + token}
	cmd.Stdin = strings.NewReader("will you answer?\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(out.String(), "> will you answer?") {
		n, err := stdout.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("chat output ended before the message was stored: %v\n%s", err, out.String())
		}
	}
	d.Kill(t) // the message is stored; its reply never comes

	done := make(chan error, 1)
	var rest []byte
	go func() {
		rest, _ = io.ReadAll(stdout) // until chat exits
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
		out.Write(rest)
	case <-time.After(30 * time.Second):
		t.Fatalf("chat still waits 30s after hearth died:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("chat exit: %v, want 1\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "hearth went away before answering") {
		t.Errorf("chat did not say the message went unanswered:\n%s", out.String())
	}
}
