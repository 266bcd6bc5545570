package hearth_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// knowMemory is a Memory that records the vault files it is told of.
type knowMemory struct {
	fakeMemory
	mu    sync.Mutex
	calls [][]string
}

func (m *knowMemory) Knowledge(_ context.Context, paths []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, slices.Clone(paths))
	return nil
}

func (m *knowMemory) told() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// TestVaultWritesReachRecall: an applied write tells memory which files
// it wrote, and an owner's edit committed before a write is told too, so
// that recall indexes them before the write returns.
func TestVaultWritesReachRecall(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	mem := &knowMemory{}
	h := runCore(t, hearth.Config{Journal: j, Vault: v, Memory: mem, ShutdownGrace: 5 * time.Second})

	const p = "knowledge/projects/mnemo.md"
	out, err := h.Propose(t.Context(), noteProposal(p, "project", "mnemo keeps its vault under git with one commit per write"))
	if err != nil || out.Decision != hearth.DecisionApplied {
		t.Fatalf("outcome %+v, %v; want applied", out, err)
	}
	if got := mem.told(); len(got) != 1 || !slices.Contains(got[0], p) {
		t.Fatalf("memory was told %q, want the note written", got)
	}

	// The owner edits the note by hand; the next write commits the edit
	// first and tells memory of both.
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, p), append(b, "\nEdited by hand.\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	const q = "knowledge/projects/hearth.md"
	if _, err := h.Propose(t.Context(), noteProposal(q, "project", "hearth serves every client over one commit path")); err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the keeper's start pass may commit and tell
	// the first note again (a commit it retried): a path told twice is
	// indexed twice, harmlessly. What must hold: the owner's edit is told
	// after the first write and before the second note.
	got := mem.told()
	if len(got) < 3 {
		t.Fatalf("memory was told %q, want the note, the owner's edit of it, then the second note", got)
	}
	tellsP := 0
	for _, c := range got[1 : len(got)-1] {
		if slices.Contains(c, p) {
			tellsP++
		}
	}
	if tellsP == 0 || !slices.Contains(got[len(got)-1], q) {
		t.Errorf("memory was told %q, want the note, the owner's edit of it, then the second note", got)
	}
}
