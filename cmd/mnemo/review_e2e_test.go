package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// The owner reviews in the TUI what the agent proposed to remember: the
// chat says changes wait, alt+r shows the first with its diff, e opens
// the proposed file in $EDITOR (a script here) and approves what was
// saved, r rejects the next, and the panel is empty after.
func TestTUIReviewsProposals(t *testing.T) {
	tm := newTmux(t)
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))

	dir := t.TempDir()
	editor := filepath.Join(dir, "editor")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/black coffee/flat whites/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pane := tm.start(100, 30, "env VISUAL= EDITOR="+editor+" "+mnemoCmd(t, d.Addr))
	tm.waitText(pane, "● connected")

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/coffee.md","title":"Coffee","type":"preference","content":"The owner drinks black coffee without sugar.","why":"the owner said so"}`},
			{ID: "p2", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/tea.md","title":"Tea","type":"preference","content":"The owner likes green tea in the afternoon.","why":"the owner said so"}`},
		}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "I'll ask you to confirm."}}},
	)
	tm.text(pane, "black coffee, and green tea in the afternoon")
	tm.keys(pane, "Enter")
	tm.waitText(pane, "memory: 2 changes waiting for review — /review")

	tm.keys(pane, "M-r")
	// The whole panel, drawn: its title, the diff and its keys.
	tm.waitFor(pane, "the panel with the coffee diff", func(s string) bool {
		for _, want := range []string{"review · 1 of 2", "create knowledge/prefs/coffee.md", "reason the owner said so", "sources turn",
			"+++ b/knowledge/prefs/coffee.md", "+The owner drinks black coffee without sugar.", "a approve · e edit · r reject"} {
			if !strings.Contains(s, want) {
				return false
			}
		}
		return true
	})

	tm.text(pane, "e")
	tm.waitFor(pane, "the tea proposal, the coffee one applied", func(s string) bool {
		return strings.Contains(s, "review · 1 of 1") && strings.Contains(s, "create knowledge/prefs/tea.md") &&
			strings.Contains(s, "knowledge/prefs/coffee.md applied (commit ")
	})
	// Applied as the owner edited it, not as proposed.
	if b, err := os.ReadFile(filepath.Join(root, "knowledge", "prefs", "coffee.md")); err != nil {
		t.Errorf("the approved note: %v", err)
	} else if !strings.Contains(string(b), "flat whites") || strings.Contains(string(b), "black coffee") {
		t.Errorf("the approved note is not the owner's edit:\n%s", b)
	}

	tm.text(pane, "r")
	tm.waitText(pane, "nothing waits for your review")
	tm.waitText(pane, "change to knowledge/prefs/tea.md rejected")
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "tea.md")); !os.IsNotExist(err) {
		t.Errorf("the rejected note was written: %v", err)
	}

	tm.keys(pane, "Escape")
	tm.waitText(pane, "I'll ask you to confirm.")
	tm.keys(pane, "C-c")
}
