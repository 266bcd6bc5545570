package vault

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
)

func TestCommitOwnerEdits(t *testing.T) {
	dir := t.TempDir()
	if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	v, err := Open(t.Context(), dir, data.Vault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := projectProposal(t, "knowledge/projects/mnemo.md")
	if _, err := v.Apply(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := Commit(t.Context(), dir, ledgerFiles(t, dir), "ledger", AuthorOwner); err != nil {
		t.Fatal(err)
	}
	if edits, err := v.OwnerEdits(t.Context()); err != nil {
		t.Fatal(err)
	} else if len(edits) != 0 {
		t.Fatalf("%d edits in a clean root (first %q)", len(edits), edits[0].Path)
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := v.Read(p.Path)
	edited := string(b) + "The owner's own line.\n"
	write(p.Path, edited)
	write("knowledge/people/me.md", "---\ntitle: no id\n---\nI live in Lisbon.\n") // malformed: kept as is
	write("knowledge/projects/.mnemo.md.swp", "editor swap")
	if err := os.Remove(filepath.Join(dir, InvariantsFile)); err != nil {
		t.Fatal(err)
	}
	edits, err := v.OwnerEdits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range edits {
		paths = append(paths, e.Path)
	}
	want := []string{InvariantsFile, "knowledge/people/me.md", p.Path}
	if !slices.Equal(paths, want) {
		t.Fatalf("edits %v, want %v", paths, want)
	}
	res, malformed, err := v.CommitOwnerEdits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var pe *ParseError
	if len(malformed) != 1 || !errors.As(malformed[0], &pe) || pe.File != "knowledge/people/me.md" || pe.Line != 2 {
		t.Errorf("malformed %v", malformed)
	}
	if headFile(t, dir, p.Path) != edited || headFile(t, dir, "knowledge/people/me.md") == "" || headFile(t, dir, InvariantsFile) != "" {
		t.Error("owner's edits not committed as they are")
	}
	if headFile(t, dir, "knowledge/projects/.mnemo.md.swp") != "" {
		t.Error("swap file committed")
	}
	if _, author := headCommit(t, dir); author != AuthorOwner || res.Commit == "" {
		t.Errorf("author %q commit %q", author, res.Commit)
	}
	entries, _, _ := ReadLedger(dir)
	last := entries[len(entries)-3:]
	if last[0].Op != OpDelete || last[2].Op != OpEdit || last[2].Before != Hash(b) || last[2].After != Hash([]byte(edited)) {
		t.Errorf("ledger %+v", last)
	}
	if b, _ := v.Read("knowledge/people/me.md"); string(b) != "---\ntitle: no id\n---\nI live in Lisbon.\n" {
		t.Error("malformed note rewritten")
	}
}
