package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory"
)

// hearth lays the vault out at start and commits it; a note the owner
// wrote while hearth was stopped is committed as theirs at the next start,
// and one that does not parse is kept as written and named in the log.
func TestVaultAtStart(t *testing.T) {
	root := t.TempDir()
	r := runHearth(t, root, map[string]string{})
	r.stop()
	if _, err := os.Stat(filepath.Join(root, "config", "memory.policy.yml")); err != nil {
		t.Fatalf("no vault layout: %v", err)
	}
	head := func() (string, string) {
		repo, err := memory.OpenRepository(root)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := repo.Head()
		if err != nil {
			t.Fatal(err)
		}
		c, err := repo.CommitObject(ref.Hash())
		if err != nil {
			t.Fatal(err)
		}
		return c.Author.Name, c.Message
	}
	if who, msg := head(); who != "job:layout" || !strings.HasPrefix(msg, "vault: lay out") {
		t.Errorf("head after the first start: %s %q", who, msg)
	}

	bad := "---\ntitle: [unclosed\n---\nhello\n"
	if err := os.WriteFile(filepath.Join(root, "knowledge", "people", "ana.md"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runHearth(t, root, map[string]string{})
	r.stop()
	if who, msg := head(); who != "owner" || !strings.Contains(msg, "knowledge/people/ana.md") {
		t.Errorf("head after the owner's edit: %s %q", who, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "knowledge", "people", "ana.md")); string(b) != bad {
		t.Errorf("the owner's note was rewritten: %q", b)
	}
	if !strings.Contains(r.logs.String(), "knowledge/people/ana.md:") {
		t.Errorf("the log does not name the malformed note:\n%s", r.logs)
	}
}
