package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// await sends m and returns the answer with ref (an error included).
func await(t *testing.T, c *ipc.Conn, m ipc.Msg, ref string) ipc.Msg {
	t.Helper()
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		got, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", ref, err)
		}
		var r string
		switch g := got.(type) {
		case *ipc.VaultFile:
			r = g.Ref
		case *ipc.VaultNotes:
			r = g.Ref
		case *ipc.VaultChanges:
			r = g.Ref
		case *ipc.ProposalDecided:
			r = g.Ref
		case *ipc.VaultExported:
			r = g.Ref
		case *ipc.VaultPurged:
			r = g.Ref
		case *ipc.Error:
			r = g.Ref
		}
		if r == ref {
			return got
		}
	}
}

// The vault's operations through the protocol (the owner's door) and
// through the agent's tools, against the real hearth: the owner writes and
// edits a note with vault_write, reads it now and at its first version,
// lists and reads its history; the agent lists, reads, reads the history
// and edits it with memory_propose; the owner approves a queued proposal
// as they edited it (proposal_decide with content).
func TestVaultOperationsOverTheWire(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model))
	c := mustDial(t, d.Addr)
	path := "knowledge/projects/garden.md"
	note := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Garden\ntype: project\n---\nTomatoes on the balcony.\n"

	w, ok := await(t, c, &ipc.VaultWrite{Op: ipc.VaultOpWrite, Path: path, Content: note, Reason: "my garden", Ref: "w1"}, "w1").(*ipc.ProposalDecided)
	if !ok || w.Decision != "applied" || w.Commit == "" || w.By != "owner" {
		t.Fatalf("vault_write: %+v", w)
	}
	first := w.Commit
	if e, ok := await(t, c, &ipc.VaultWrite{Op: ipc.VaultOpEdit, Path: path, Patch: &ipc.VaultPatch{Append: "And basil.", TagsAdd: []string{"food"}}, Ref: "w2"}, "w2").(*ipc.ProposalDecided); !ok || e.Decision != "applied" {
		t.Fatalf("vault_write edit: %+v", e)
	}
	if f, ok := await(t, c, &ipc.VaultRead{Path: path, Ref: "r1"}, "r1").(*ipc.VaultFile); !ok || !strings.Contains(f.Content, "And basil.") || f.Commit != "" {
		t.Errorf("vault_read: %+v", f)
	}
	if f, ok := await(t, c, &ipc.VaultRead{Path: path, At: first[:8], Ref: "r2"}, "r2").(*ipc.VaultFile); !ok || f.Content != note || f.Commit != first {
		t.Errorf("vault_read at %s: %+v", first[:8], f)
	}
	if e, ok := await(t, c, &ipc.VaultRead{Path: "../etc/passwd", Ref: "r3"}, "r3").(*ipc.Error); !ok || e.Code != ipc.CodeBadRequest {
		t.Errorf("vault_read outside the root: %+v", e)
	}
	if l, ok := await(t, c, &ipc.VaultList{Tag: "food", Ref: "l1"}, "l1").(*ipc.VaultNotes); !ok || len(l.Notes) != 1 || l.Notes[0].Path != path || l.Notes[0].Title != "Garden" {
		t.Errorf("vault_list: %+v", l)
	}
	h, ok := await(t, c, &ipc.VaultHistory{Path: path, Ref: "h1"}, "h1").(*ipc.VaultChanges)
	if !ok || len(h.Changes) != 2 || h.Changes[1].Commit != first || h.Changes[1].Reason != "my garden" || h.Changes[0].Author != "owner" {
		t.Fatalf("vault_history: %+v", h)
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "t1", Name: "memory_list", Arguments: `{"prefix":"knowledge/projects/"}`},
			{ID: "t2", Name: "memory_read", Arguments: `{"path":"` + path + `","version":"` + first + `"}`},
			{ID: "t3", Name: "memory_history", Arguments: `{"path":"` + path + `"}`},
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "t4", Name: "memory_propose", Arguments: `{"op":"edit","path":"` + path + `","content":"The owner adds mint this year.","why":"the owner said so"}`},
			{ID: "t5", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/tea.md","title":"Tea","type":"preference","content":"Green tea in the afternoon.","why":"the owner said so"}`},
			{ID: "t6", Name: "memory_export", Arguments: `{}`},
		}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	c.Send(&ipc.Message{Content: "what do you know about my garden? I add mint this year; and I like green tea in the afternoon"})
	results := map[string]string{}
	var queued *ipc.Proposal
	for _, m := range collect(t, c) {
		switch m := m.(type) {
		case *ipc.ToolResult:
			results[m.ID] = m.Result + m.Error
		case *ipc.Proposal:
			queued = m
		}
	}
	for id, want := range map[string]string{
		"t1": "- " + path + " type=project status=active: Garden tags=food",
		"t2": path + " at version " + first[:12] + ":\n" + note,
		"t3": "2 changes to " + path,
		"t4": "applied: update " + path,
		"t5": "queued for the owner's review",
		"t6": "exported to " + filepath.Join(root, "artifacts", "exports") + "/mnemo-",
	} {
		if !strings.Contains(results[id], want) {
			t.Errorf("tool %s result %q, want it to contain %q", id, results[id], want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, path)); !strings.Contains(string(b), "And basil.\nThe owner adds mint this year.\n") {
		t.Errorf("the note after the agent's edit:\n%s", b)
	}
	if queued == nil {
		t.Fatal("the preference was not queued")
	}
	mine := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6G\ntitle: Tea\ntype: preference\n---\nWhite tea, only on Sundays.\n"
	if dd, ok := await(t, c, &ipc.ProposalDecide{ID: queued.ID, Approve: true, Content: mine, Ref: "d1"}, "d1").(*ipc.ProposalDecided); !ok || dd.Decision != "applied" || dd.Commit == "" {
		t.Fatalf("approve as edited: %+v", dd)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "knowledge/prefs/tea.md")); string(b) != mine {
		t.Errorf("the approved note is not the owner's edit:\n%s", b)
	}
	x, ok := await(t, c, &ipc.VaultExport{Ref: "e1"}, "e1").(*ipc.VaultExported)
	if !ok || x.Bytes == 0 || !strings.HasPrefix(x.Path, filepath.Join(root, "artifacts", "exports")) {
		t.Fatalf("vault_export: %+v", x)
	}
	if st, err := os.Stat(x.Path); err != nil || st.Size() != x.Bytes {
		t.Errorf("the archive: %v", err)
	}
	if p, ok := await(t, c, &ipc.VaultPurge{Layer: "proposals", Ref: "p1"}, "p1").(*ipc.VaultPurged); !ok || p.Removed != 0 {
		t.Errorf("vault_purge proposals: %+v", p)
	}
	if e, ok := await(t, c, &ipc.VaultPurge{Layer: "threads", Ref: "p2"}, "p2").(*ipc.Error); !ok || e.Code != ipc.CodeBadRequest {
		t.Errorf("vault_purge threads without confirm: %+v", e)
	}
}
