package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// The agent proposes two preferences, which policy queues; mnemo memory
// list shows them, approve writes one to the vault, reject drops the
// other, and the list is empty after. Usage errors exit 2, an unknown id 1.
func TestMemoryReview(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"memory"}},
		{"approve without id", []string{"memory", "approve"}},
		{"unknown subcommand", []string{"memory", "frob"}},
		{"list with an argument", []string{"memory", "list", "x"}},
	} {
		if r := runMnemo(t, d.Addr, token, "", tc.args...); r.code != 2 {
			t.Errorf("%s: %v\nwant exit 2", tc.name, r)
		}
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "list"); r.code != 0 || !strings.Contains(r.stdout, "no proposals wait") {
		t.Errorf("empty list: %v", r)
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/coffee.md","title":"Coffee","type":"preference","content":"The owner drinks black coffee without sugar.","why":"the owner said so"}`},
			{ID: "p2", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/tea.md","title":"Tea","type":"preference","content":"The owner likes green tea in the afternoon.","why":"the owner said so"}`},
		}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "I'll ask you to confirm."}}},
	)
	if r := runMnemo(t, d.Addr, token, "", "send", "black coffee, and green tea in the afternoon"); r.code != 0 {
		t.Fatalf("send: %v", r)
	}
	r := runMnemo(t, d.Addr, token, "", "memory", "list")
	ls := lines(r.stdout)
	if r.code != 0 || len(ls) != 2 || !strings.Contains(ls[0], "knowledge/prefs/coffee.md") || !strings.Contains(ls[1], "knowledge/prefs/tea.md") {
		t.Fatalf("list: %v", r)
	}
	coffee, tea := strings.Fields(ls[0])[0], strings.Fields(ls[1])[0]

	if r := runMnemo(t, d.Addr, token, "", "memory", "approve", coffee); r.code != 0 || !strings.Contains(r.stdout, "applied "+coffee+": knowledge/prefs/coffee.md (commit ") {
		t.Errorf("approve: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "coffee.md")); err != nil {
		t.Errorf("the approved note: %v", err)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "reject", tea); r.code != 0 || !strings.Contains(r.stdout, "rejected "+tea) {
		t.Errorf("reject: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "tea.md")); !os.IsNotExist(err) {
		t.Errorf("the rejected note was written: %v", err)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "approve", tea); r.code != 1 || !strings.Contains(r.stderr, "no proposal waits") {
		t.Errorf("approve a decided one: %v\nwant exit 1", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "list"); r.code != 0 || !strings.Contains(r.stdout, "no proposals wait") {
		t.Errorf("list after: %v", r)
	}
}
