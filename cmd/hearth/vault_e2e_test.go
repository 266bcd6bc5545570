package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// TestAgentProposesMemory: the agent (a stand-in model) calls
// memory_propose; a project note is applied at once — the file is under
// knowledge/ and `git log` shows its commit citing the owner's turn — and a
// preference is queued, reaches the client as "proposal", and is written
// once the owner approves it with proposal_decide.
func TestAgentProposesMemory(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model))
	c := mustDial(t, d.Addr)

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/projects/lisbon.md","title":"Moving to Lisbon","type":"project","content":"The owner is moving to Lisbon in May with Ana.","why":"the owner told me about the move"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	c.Send(&ipc.Message{Content: "remember that I am moving to Lisbon in May with Ana", Ref: "m1"})
	var userTurn string
	for _, m := range collect(t, c) {
		switch m := m.(type) {
		case *ipc.TurnStored:
			if m.Ref == "m1" && m.Turn.Role == ipc.RoleUser {
				userTurn = m.Turn.ID
			}
		case *ipc.ToolResult:
			if !strings.HasPrefix(m.Result, "applied: create knowledge/projects/lisbon.md") {
				t.Errorf("memory_propose result = %+v", m)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "knowledge", "projects", "lisbon.md"))
	if err != nil || !strings.Contains(string(b), "Lisbon in May with Ana") || !strings.Contains(string(b), "title: Moving to Lisbon") {
		t.Fatalf("the note: %v\n%s", err, b)
	}
	// The agent's latest commit (hearth also commits its tool catalog).
	out, err := exec.Command("git", "-C", root, "log", "-1", "--author=agent", "--format=%an%n%B").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	if log := string(out); !strings.HasPrefix(log, "agent\nvault: create knowledge/projects/lisbon.md") || userTurn == "" || !strings.Contains(log, "Source: thread main turn "+userTurn) {
		t.Errorf("git log -1 (user turn %s):\n%s", userTurn, log)
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "p2", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/coffee.md","title":"Coffee","type":"preference","content":"The owner drinks black coffee without sugar.","why":"the owner said how they take coffee"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "I'll ask you to confirm."}}},
	)
	c.Send(&ipc.Message{Content: "I drink my coffee black without sugar"})
	var queued *ipc.Proposal
	for _, m := range collect(t, c) {
		switch m := m.(type) {
		case *ipc.Proposal:
			queued = m
		case *ipc.ToolResult:
			if !strings.HasPrefix(m.Result, "queued for the owner's review as prop_") {
				t.Errorf("memory_propose result = %+v", m)
			}
		}
	}
	if queued == nil || queued.Path != "knowledge/prefs/coffee.md" {
		t.Fatalf("no proposal event for the preference: %+v", queued)
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "coffee.md")); !os.IsNotExist(err) {
		t.Fatalf("a queued preference was written: %v", err)
	}
	c.Send(&ipc.ProposalDecide{ID: queued.ID, Approve: true, Ref: "d1"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("waiting for the decision: %v", err)
		}
		if d, ok := m.(*ipc.ProposalDecided); ok && d.Ref == "d1" {
			if d.Decision != "applied" || d.Commit == "" {
				t.Errorf("decision %+v", d)
			}
			break
		}
		if e, ok := m.(*ipc.Error); ok {
			t.Fatalf("decide: %+v", e)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "coffee.md")); err != nil {
		t.Errorf("the approved preference: %v", err)
	}
}
