package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// TestForgetReachesNotesCommand: the real mnemo and hearth. A note citing
// a turn is removed when the turn is forgotten, mnemo forget says what the
// vault lost, and the purge says which files git's history still holds.
func TestForgetReachesNotesCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemonArgs(t, filepath.Join(t.TempDir(), "root"), openaiEnv(model))
	if r := runMnemo(t, d.Addr, token, "", "send", "The allotment is on Elm Street."); r.code != 0 {
		t.Fatalf("send: %v", r)
	}
	r := runMnemo(t, d.Addr, token, "", "history", "--all", "--json")
	var turn ipc.Turn
	if err := json.Unmarshal([]byte(lines(r.stdout)[0]), &turn); err != nil || turn.Role != "user" {
		t.Fatalf("history: %v %v", r, err)
	}
	const path = "knowledge/projects/allotment.md"
	note := fmt.Sprintf("---\nid: 01JDQ000000000000000000N01\ntitle: Allotment\ntype: project\nsources:\n  - thread: main\n    turn: %s\n---\nThe allotment is on Elm Street.\n", turn.ID)
	if r := runMnemo(t, d.Addr, token, note, "memory", "write", path); r.code != 0 {
		t.Fatalf("memory write: %v", r)
	}
	r = runMnemo(t, d.Addr, token, "", "forget", turn.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "memory made from them: 1 note(s) removed") || !strings.Contains(r.stdout, "stay in the vault's git history") {
		t.Fatalf("forget: %v", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "read", path); r.code == 0 {
		t.Errorf("the note made from the forgotten turn is still there: %v", r)
	}
	r = runMnemo(t, d.Addr, token, "", "forget", "--purge")
	if r.code != 0 || !strings.Contains(r.stdout, "not erased: git history still holds earlier versions of 1 vault file(s)") || !strings.Contains(r.stdout, "  "+path+"\n") {
		t.Fatalf("forget --purge: %v", r)
	}
}
