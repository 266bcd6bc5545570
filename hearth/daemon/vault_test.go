package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

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
	// The newest commit but the tool catalog's, which hearth writes
	// beside them at start (see TestToolCatalogAtStart).
	head := func() (string, string) {
		repo, err := memory.OpenRepository(root)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := repo.Head()
		if err != nil {
			t.Fatal(err)
		}
		it, err := repo.Log(&git.LogOptions{From: ref.Hash()})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for {
			c, err := it.Next()
			if err != nil {
				t.Fatalf("no commit but the catalog's: %v", err)
			}
			if c.Author.Name != "job:tool-catalog" {
				return c.Author.Name, c.Message
			}
		}
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

// TestToolCatalogAtStart: hearth keeps the tool catalog over its real
// registry — the built-ins, and the manifests in the root's tools/ (an
// invalid one named) — committed by job:tool-catalog.
func TestToolCatalogAtStart(t *testing.T) {
	cfg := loadConfig(t, map[string]string{})
	sys, err := Open(t.Context(), cfg, Runtime{Local: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if err := os.WriteFile(filepath.Join(sys.RootDir(), "tools", "bad.tool.json"), []byte(`{"name":"x__y","permission":"maybe"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if wrote, err := sys.Core().RefreshToolCatalog(t.Context()); err != nil || !wrote {
		t.Fatalf("RefreshToolCatalog: wrote %v, %v", wrote, err)
	}
	b, err := os.ReadFile(filepath.Join(sys.RootDir(), "knowledge", "system", "tool_catalog.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## memory_search", "## memory_propose", "- permission: confirm (the owner approves each call)", `tools/bad.tool.json: permission "maybe"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the catalog lacks %q:\n%s", want, b)
		}
	}
	repo, err := memory.OpenRepository(sys.RootDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := repo.CommitObject(ref.Hash()); err != nil || c.Author.Name != "job:tool-catalog" {
		t.Errorf("head: %v, %v", c, err)
	}
}
