package main_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// runHearth runs a second hearth to completion, as the owner would.
func runHearth(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Hearth, args...)
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "APP_AUTH_TOKEN=" + token}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// One process owns a memory root: a second daemon and an in-process
// client are refused with who holds it, and a crash (kill -9) frees it.
func TestMemoryRootHasOneOwner(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, openaiEnv(model))
	pid := strconv.Itoa(d.Cmd.Process.Pid)

	out, err := runHearth(t, t.TempDir(), "-addr", "127.0.0.1:0", "-root", root)
	if err == nil || !strings.Contains(out, "in use by hearth (pid "+pid+", listening on "+d.Addr+")") {
		t.Errorf("a second hearth on the root: %v\n%s\nwant a refusal naming pid %s and %s", err, out, pid, d.Addr)
	}

	home := t.TempDir()
	local := exec.Command(bins.Mnemo, "--local", "--root", root, "history")
	local.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	lout, err := local.CombinedOutput()
	if err == nil || !strings.Contains(string(lout), "mnemo --addr "+d.Addr) {
		t.Errorf("mnemo --local on a root hearth serves: %v\n%s\nwant the advice to connect to %s", err, lout, d.Addr)
	}

	// The daemon still serves.
	c := mustDial(t, d.Addr)
	c.Close()

	d.Kill(t)
	d = startDaemon(t, root, openaiEnv(model))
	mustDial(t, d.Addr).Close()
}

// A hearth started on a port another hearth listens on fails at bind,
// before it touches its memory root.
func TestBusyPortFailsBeforeTheRoot(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), openaiEnv(model))
	other := filepath.Join(t.TempDir(), "other-root")
	out, err := runHearth(t, t.TempDir(), "-addr", d.Addr, "-root", other)
	if err == nil || !strings.Contains(out, "address already in use") {
		t.Errorf("a hearth on a busy port: %v\n%s", err, out)
	}
	if _, statErr := exec.Command("test", "-e", other).CombinedOutput(); statErr == nil {
		t.Errorf("the second hearth created its memory root %s before failing to bind", other)
	}
}

// `hearth config` shows every effective value and its source, and never a
// secret's value.
func TestConfigCommand(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(bins.Hearth, "-history", "20", "config")
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XAI_API_KEY=xai-very-secret-value", "MNEMO_MODEL=grok-test"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hearth config: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "xai-very-secret-value") {
		t.Errorf("hearth config shows the API key:\n%s", s)
	}
	for _, want := range []string{"env XAI_API_KEY", "grok-test", "env MNEMO_MODEL", "flag -history", "127.0.0.1:7744"} {
		if !strings.Contains(s, want) {
			t.Errorf("hearth config lacks %q:\n%s", want, s)
		}
	}

	bad := exec.Command(bins.Hearth, "-context-budget", "10", "config")
	bad.Env = cmd.Env
	out, err = bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-context-budget 10 (flag)") {
		t.Errorf("an invalid flag: %v\n%s\nwant the problem named with its source", err, out)
	}
}

// `hearth stop` stops the hearth on its root, gracefully, and no other.
func TestStopCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	other := startDaemon(t, filepath.Join(t.TempDir(), "other"), openaiEnv(model))
	d := startDaemon(t, root, openaiEnv(model))

	out, err := runHearth(t, t.TempDir(), "-root", root, "stop")
	if err != nil || !strings.Contains(out, "hearth stopped") {
		t.Fatalf("hearth stop: %v\n%s", err, out)
	}
	if err := d.Exited(t, 30*time.Second); err != nil {
		t.Errorf("hearth exit after stop: %v (a graceful stop exits 0)\n%s", err, d.Log())
	}
	if !strings.Contains(d.Log(), "shutting down") {
		t.Errorf("hearth did not shut down in order:\n%s", d.Log())
	}
	mustDial(t, other.Addr).Close() // the other root's hearth still serves

	out, err = runHearth(t, t.TempDir(), "-root", root, "stop")
	if err != nil || !strings.Contains(out, "no hearth is running on "+root) {
		t.Errorf("stop with nothing running: %v\n%s", err, out)
	}
}
