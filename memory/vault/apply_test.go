package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestApplyCreateUpdateDeprecateDelete(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	v.now = func() time.Time { return time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC) }
	ctx := t.Context()

	// A queued proposal is applied and leaves the inbox.
	p := projectProposal(t, "knowledge/projects/mnemo.md")
	if err := SaveProposal(dir, p); err != nil {
		t.Fatal(err)
	}
	if ps, bad, err := ListProposals(dir); err != nil || len(bad) != 0 || len(ps) != 1 || ps[0].ID != p.ID {
		t.Fatalf("ListProposals = %v %v %v", ps, bad, err)
	}
	res, err := v.Apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	created, _ := v.Read(p.Path)
	if res.Commit == "" || headFile(t, dir, p.Path) != string(created) {
		t.Fatalf("not committed: %+v", res)
	}
	if n, err := ParseNote(p.Path, created); err != nil || !n.CreatedAt.Equal(v.now()) || !n.UpdatedAt.Equal(v.now()) {
		t.Errorf("agent's note not stamped: %+v %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, proposalPath(p.ID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("applied proposal still in the inbox: %v", err)
	}
	msg, author := headCommit(t, dir)
	for _, want := range []string{"vault: create knowledge/projects/mnemo.md", p.Reason, "Proposal: " + p.ID, "Source: thread 2026-01-30"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	if author != AuthorCurator {
		t.Errorf("commit author %q", author)
	}
	if st, _ := os.Stat(filepath.Join(dir, p.Path)); st.Mode().Perm() != filePerm {
		t.Errorf("note mode %v", st.Mode().Perm())
	}

	// Patch.
	cur, _ := v.Read(p.Path)
	conf := 0.95
	up := &Proposal{ID: NewProposalID(), Op: OpUpdate, Path: p.Path, Base: Hash(cur),
		Patch:  &Patch{BodyAppend: "It has a ledger.", TagsAdd: []string{"git"}, Confidence: &conf, Confirmed: true},
		Reason: "more detail", Sources: src, Author: AuthorAgent}
	if _, err := v.Apply(ctx, up); err != nil {
		t.Fatal(err)
	}
	after, _ := v.Read(p.Path)
	n, err := ParseNote(p.Path, after)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(n.Body), claim+"\nIt has a ledger.\n") || n.Confidence != 0.95 ||
		!n.LastConfirmedAt.Equal(v.now()) || n.Tags[len(n.Tags)-1] != "git" {
		t.Errorf("patched note %+v", n)
	}

	// The same proposal again: its base is gone.
	if _, err := v.Apply(ctx, up); !errors.Is(err, ErrStale) {
		t.Errorf("replayed update: %v, want ErrStale", err)
	}

	// Deprecate keeps the note.
	dep := &Proposal{ID: NewProposalID(), Op: OpDeprecate, Path: p.Path, Base: Hash(after), Reason: "project ended", Sources: src, Author: AuthorOwner}
	if _, err := v.Apply(ctx, dep); err != nil {
		t.Fatal(err)
	}
	b, _ := v.Read(p.Path)
	if n, err := ParseNote(p.Path, b); err != nil || n.Status != Deprecated {
		t.Errorf("deprecated note: %v %v", n, err)
	}

	// Delete removes it.
	del := &Proposal{ID: NewProposalID(), Op: OpDelete, Path: p.Path, Base: Hash(b), Reason: "owner asked", Author: AuthorOwner}
	if _, err := v.Apply(ctx, del); err != nil {
		t.Fatal(err)
	}
	if b, _ := v.Read(p.Path); b != nil || headFile(t, dir, p.Path) != "" {
		t.Errorf("deleted note still there")
	}

	// One ledger line per write, each naming its commit, before and after.
	entries, skipped, err := ReadLedger(dir)
	if err != nil || skipped != 0 || len(entries) != 4 {
		t.Fatalf("ledger %+v skipped %d err %v", entries, skipped, err)
	}
	wantOps := []Op{OpCreate, OpUpdate, OpDeprecate, OpDelete}
	for i, e := range entries {
		if e.Op != wantOps[i] || e.Commit == "" || e.Path != p.Path || e.Reason == "" || e.Proposal == "" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if entries[0].Before != "" || entries[0].After != Hash(created) || entries[3].After != "" || entries[3].Before != Hash(b) {
		t.Errorf("hashes: %+v", entries)
	}
	// The ledger reaches git with the next commit.
	if !strings.Contains(headLedger(t, dir), entries[2].Commit) {
		t.Error("ledger not committed")
	}
}

// TestApplyRefusesOwnerEdit: a hand edit between proposal and apply wins.
func TestApplyRefusesOwnerEdit(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	p := projectProposal(t, "knowledge/projects/mnemo.md")
	if _, err := v.Apply(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	up := &Proposal{ID: NewProposalID(), Op: OpUpdate, Path: p.Path, Base: Hash([]byte(p.Content)),
		Content: noteText("project", Active, 0.9, "", claim+" and more"), Reason: "r", Sources: src, Author: AuthorAgent}
	owners := []byte(strings.Replace(p.Content, claim, "the owner's own words about the project", 1))
	if err := os.WriteFile(filepath.Join(dir, p.Path), owners, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := Decide(DefaultPolicy(), up, owners); d.Verdict != Reject {
		t.Errorf("Decide = %v", d)
	}
	if _, err := v.Apply(t.Context(), up); !errors.Is(err, ErrStale) {
		t.Fatalf("Apply = %v, want ErrStale", err)
	}
	if b, _ := v.Read(p.Path); string(b) != string(owners) {
		t.Error("the owner's edit was overwritten")
	}
}

func TestApplySupersedes(t *testing.T) {
	for _, contradicts := range []bool{false, true} {
		dir := newRoot(t)
		v := New(dir, nil)
		old := projectProposal(t, "knowledge/projects/home.md")
		old.Content = noteText("project", Active, 0.9, "", "the owner lives in Berlin near the river")
		if _, err := v.Apply(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		oldNote, _ := ParseNote("", []byte(old.Content))
		p := projectProposal(t, "knowledge/projects/home-2026.md")
		p.Content = noteText("project", Active, 0.9, "", "the owner moved to Lisbon in March")
		p.Supersedes, p.Contradicts = []string{old.Path}, contradicts
		if _, err := v.Apply(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		ob, _ := v.Read(old.Path)
		nb, _ := v.Read(p.Path)
		on, err := ParseNote(old.Path, ob)
		if err != nil {
			t.Fatal(err)
		}
		nn, err := ParseNote(p.Path, nb)
		if err != nil {
			t.Fatal(err)
		}
		want := Superseded
		if contradicts {
			want = Contradicted
		}
		if on.Status != want || len(on.SupersededBy) != 1 || on.SupersededBy[0] != nn.ID ||
			len(nn.Supersedes) != 1 || nn.Supersedes[0] != oldNote.ID {
			t.Errorf("contradicts=%v: old %s by %v, new supersedes %v", contradicts, on.Status, on.SupersededBy, nn.Supersedes)
		}
		if !strings.Contains(string(on.Body), "Berlin") {
			t.Error("old note's content lost")
		}
		if headFile(t, dir, old.Path) != string(ob) || headFile(t, dir, p.Path) != string(nb) {
			t.Error("both notes not in one commit")
		}
		entries, _, _ := ReadLedger(dir)
		if len(entries) != 3 || entries[2].Path != old.Path || entries[2].Commit != entries[1].Commit {
			t.Errorf("ledger %+v", entries)
		}
	}
}
