package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// localEnv is the environment of a `mnemo --local` run: a home of its own
// and the stand-in model.
func localEnv(t *testing.T, model *llmtest.Server) []string {
	home := t.TempDir()
	return append([]string{
		"HOME=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"PATH=" + os.Getenv("PATH"),
		"MNEMO_CURATOR=false", // its calls would take the stand-in's scripted replies
	}, openaiEnv(model)...)
}

// mnemoLocal runs `mnemo --local --root root args...` to completion.
func mnemoLocal(t *testing.T, env []string, root string, args ...string) (string, error) {
	t.Helper()
	built(t)
	cmd := exec.Command(bins.Mnemo, append([]string{"--local", "--root", root}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The in-process door: the TUI over a core in its own process, no port
// and no token, and what it said is in the memory root afterwards.
func TestLocalTUIAndSend(t *testing.T) {
	tm := newTmux(t)
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	env := localEnv(t, model)
	built(t)

	cmd := "env -i " + strings.Join(env, " ") + fmt.Sprintf(" %s --local --root %s", bins.Mnemo, root)
	pane := tm.start(100, 30, cmd)
	tm.waitText(pane, "● connected")
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Local "}, {Text: "and "}, {Text: "well."}}})
	tm.text(pane, "are you in here with me?")
	tm.keys(pane, "Enter")
	tm.waitText(pane, "Local and well.")

	// A second opener of the same root is refused while the UI holds it.
	if out, err := mnemoLocal(t, env, root, "history"); err == nil || !strings.Contains(out, "in use by mnemo --local") {
		t.Errorf("a second --local on a held root: err %v, output:\n%s\nwant a refusal naming the holder", err, out)
	}

	tm.keys(pane, "C-c")
	tm.waitFor(pane, "mnemo to exit", func(s string) bool { return !strings.Contains(s, "● connected") })
	tm.waitFor(pane, "the pane's program to end", func(string) bool {
		out, _ := tm.run("display-message", "-p", "-t", pane, "#{pane_dead}")
		return strings.TrimSpace(out) == "1"
	})

	out, err := mnemoLocal(t, env, root, "history")
	if err != nil {
		t.Fatalf("mnemo --local history: %v\n%s", err, out)
	}
	for _, want := range []string{"user: are you in here with me?", "agent: Local and well."} {
		if !strings.Contains(out, want) {
			t.Errorf("history after the UI closed lacks %q:\n%s", want, out)
		}
	}

	// send streams the reply (the stand-in echoes when nothing is queued).
	out, err = mnemoLocal(t, env, root, "send", "one more thing")
	if err != nil {
		t.Fatalf("mnemo --local send: %v\n%s", err, out)
	}
	if !strings.Contains(out, "echo: one more thing") {
		t.Errorf("send printed %q, want the echoed reply", out)
	}

	// history's query goes through the in-process door too.
	out, err = mnemoLocal(t, env, root, "history", "-n", "1", "--json")
	if err != nil || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"content":"echo: one more thing"`) {
		t.Errorf("mnemo --local history -n 1 --json: %v\n%s\nwant the last turn as one JSON line", err, out)
	}
}
