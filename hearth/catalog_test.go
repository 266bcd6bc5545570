package hearth_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory/vault"
)

// catalogTools is a registry whose tools and manifest errors the test
// changes.
type catalogTools struct {
	mu       sync.Mutex
	specs    []tools.Spec
	problems []error
}

func (c *catalogTools) List(context.Context) ([]tools.Spec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.specs), nil
}
func (c *catalogTools) Call(context.Context, string, json.RawMessage) (tools.Result, error) {
	return tools.Result{Text: "ok"}, nil
}
func (c *catalogTools) ManifestErrors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}
func (c *catalogTools) set(specs []tools.Spec, problems ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.specs, c.problems = specs, problems
}

func catalogSpecs() []tools.Spec {
	return []tools.Spec{
		{Name: "web__fetch", Description: "Fetch a page.\n\n## not a heading\n---", Source: "mcp:web", Effect: tools.ReadOnly, Permission: tools.Safe},
		{Name: "memory_search", Description: "Search memory.", Source: "builtin", Effect: tools.ReadOnly, Permission: tools.Safe},
		{Name: "files__write", Description: "Write a file.", Source: "mcp:files", Effect: tools.WritesLocal, Permission: tools.Confirm},
		{Name: "current_time", Description: "The time.", Source: "builtin", Effect: tools.ReadOnly, Permission: tools.Safe},
	}
}

func catalogCommits(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, c := range gitLog(t, dir) {
		if strings.Contains(c, hearth.ToolCatalogPath) {
			out = append(out, c)
		}
	}
	return out
}

// TestToolCatalog: the catalog is generated from the registry, in a
// deterministic order with a generated header, as a note the vault
// parses; written through the vault (one commit by job:tool-catalog, a
// ledger line) only when what it says changes — not again on a second
// start — and again when the tools or manifests change, or the owner
// edits it.
func TestToolCatalog(t *testing.T) {
	v, _, dir := openVault(t)
	reg := &catalogTools{}
	reg.set(catalogSpecs(), errors.New("tools/typo.tool.json: unknown field"))
	h, err := hearth.New(hearth.Config{Journal: &memJournal{}, Vault: v, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	wrote, err := h.RefreshToolCatalog(t.Context())
	if err != nil || !wrote {
		t.Fatalf("first refresh: wrote %v, %v", wrote, err)
	}
	path := filepath.Join(dir, filepath.FromSlash(hearth.ToolCatalogPath))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := vault.ParseNote(hearth.ToolCatalogPath, b)
	if err != nil {
		t.Fatalf("the catalog is not a note: %v\n%s", err, b)
	}
	body := string(n.Body)
	golden(t, "tool_catalog.md", body)
	if !strings.Contains(body, "Do not edit it") {
		t.Errorf("no generated header:\n%s", body)
	}
	commits := catalogCommits(t, dir)
	if len(commits) != 1 || !strings.Contains(commits[0], " job:tool-catalog ") {
		t.Fatalf("commits = %q, want one by job:tool-catalog", commits)
	}
	ledger, _, err := vault.ReadLedger(dir)
	if err != nil || len(ledger) == 0 || ledger[len(ledger)-1].Path != hearth.ToolCatalogPath || ledger[len(ledger)-1].Author != "job:tool-catalog" {
		t.Errorf("ledger = %+v, %v", ledger, err)
	}

	// Nothing changed: no write, on this core or a new one (a restart).
	if wrote, err := h.RefreshToolCatalog(t.Context()); err != nil || wrote {
		t.Errorf("unchanged refresh: wrote %v, %v", wrote, err)
	}
	again, err := hearth.New(hearth.Config{Journal: &memJournal{}, Vault: v, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	if wrote, err := again.RefreshToolCatalog(t.Context()); err != nil || wrote {
		t.Errorf("refresh after a restart: wrote %v, %v", wrote, err)
	}
	// Order in the registry does not matter.
	specs := catalogSpecs()
	slices.Reverse(specs)
	reg.set(specs, errors.New("tools/typo.tool.json: unknown field"))
	if wrote, _ := h.RefreshToolCatalog(t.Context()); wrote {
		t.Error("reordered tools rewrote the catalog")
	}
	if n := len(catalogCommits(t, dir)); n != 1 {
		t.Errorf("%d catalog commits, want still 1", n)
	}

	// A tool added, one removed: written again, saying so, same note id.
	specs = append(catalogSpecs()[1:], tools.Spec{Name: "forget", Description: "Forget.", Source: "builtin", Effect: tools.Irreversible, Permission: tools.Confirm})
	reg.set(specs)
	if wrote, err := h.RefreshToolCatalog(t.Context()); err != nil || !wrote {
		t.Fatalf("refresh after a change: wrote %v, %v", wrote, err)
	}
	commits = catalogCommits(t, dir)
	if len(commits) != 2 || !strings.Contains(commits[0], "added: forget") || !strings.Contains(commits[0], "removed: web__fetch") {
		t.Errorf("commits = %q", commits)
	}
	b, _ = os.ReadFile(path)
	if n2, err := vault.ParseNote("", b); err != nil || n2.ID != n.ID || !strings.Contains(string(n2.Body), "## forget") || strings.Contains(string(n2.Body), "Manifests left out") {
		t.Errorf("rewritten catalog (id %s, was %s): %v\n%s", n2.ID, n.ID, err, b)
	}

	// The owner edits it by hand: their edit is committed as theirs,
	// then the catalog is written again.
	if err := os.WriteFile(path, append(b, "my notes\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if wrote, err := h.RefreshToolCatalog(t.Context()); err != nil || !wrote {
		t.Fatalf("refresh after the owner's edit: wrote %v, %v", wrote, err)
	}
	log := gitLog(t, dir)
	if !strings.Contains(log[0], "job:tool-catalog") || !strings.Contains(log[1], " owner ") {
		t.Errorf("log = %q, want the owner's edit then the catalog", log[:2])
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "my notes") {
		t.Error("the generated catalog kept a hand edit")
	}
}

// TestToolCatalogKept: a running core writes the catalog at start and
// again when a List (here, a voice credential's) finds the tools changed;
// a List that finds them as they were writes nothing.
func TestToolCatalogKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, _, dir := openVault(t)
		reg := &catalogTools{}
		reg.set(catalogSpecs())
		h := runCore(t, hearth.Config{Journal: &memJournal{}, Vault: v, Tools: reg, ToolCatalog: true, Voice: &fakeMinter{}})
		synctest.Wait() // the catalog is kept: written, and waiting for a change
		if n := len(catalogCommits(t, dir)); n != 1 {
			t.Fatalf("%d catalog commits at start, want 1", n)
		}
		if _, err := h.RequestVoice(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(catalogCommits(t, dir)); n != 1 {
			t.Errorf("%d catalog commits after an unchanged List, want 1", n)
		}

		reg.set(append(catalogSpecs(), tools.Spec{Name: "extra", Description: "More.", Source: "builtin", Effect: tools.ReadOnly, Permission: tools.Safe}))
		if _, err := h.RequestVoice(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(catalogCommits(t, dir)); n != 2 {
			t.Errorf("%d catalog commits after the tools changed, want 2", n)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(hearth.ToolCatalogPath))); !strings.Contains(string(b), "## extra") {
			t.Errorf("catalog lacks the new tool:\n%s", b)
		}
	})
}
