package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// dropFromJournal removes, with hearth stopped, every journal line that
// holds text, as an owner editing threads/*.jsonl by hand would. It
// returns how many lines went.
func dropFromJournal(t *testing.T, root, text string) int {
	t.Helper()
	shards, err := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	if err != nil || len(shards) == 0 {
		t.Fatalf("no journal shards under %s: %v", root, err)
	}
	dropped := 0
	for _, path := range shards {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept [][]byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if bytes.Contains(line, []byte(text)) {
				dropped++
				continue
			}
			kept = append(kept, line)
		}
		if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dropped
}

// hearth restarts on a journal changed while it was down: the UI's resync
// drops the turns hearth no longer has and keeps the rest.
func TestTUIResyncDropsRemovedTurns(t *testing.T) {
	tm := newTmux(t)
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))

	pane := tm.start(100, 30, mnemoCmd(t, d.Addr))
	tm.waitText(pane, "● connected")
	for _, msg := range []string{"keep this one", "forget the plum tree"} {
		tm.text(pane, msg)
		tm.keys(pane, "Enter")
		tm.waitText(pane, "echo: "+msg)
	}

	d.Stop(t)
	tm.waitText(pane, "reconnecting")
	if n := dropFromJournal(t, root, "plum tree"); n != 2 {
		t.Fatalf("dropped %d journal lines, want the message and its echo", n)
	}
	d = startDaemon(t, root, d.Addr, openaiEnv(model))
	s := tm.waitText(pane, "reconnected · resynced")
	if strings.Contains(s, "plum tree") {
		t.Errorf("after the resync the UI still shows turns hearth no longer has:\n%s", s)
	}
	for _, want := range []string{"keep this one", "echo: keep this one", "2 turns no longer on hearth"} {
		if !strings.Contains(s, want) {
			t.Errorf("after the resync the screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "shutting down") {
		t.Errorf("the shutdown notice outlived the resync:\n%s", s)
	}
	tm.keys(pane, "C-c")
}
