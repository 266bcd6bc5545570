package hearth_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/memory/vault"
)

const garden = "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Garden\ntype: project\ntags: [home]\n---\nTomatoes on the balcony.\n"

// Every core operation of the owner, in turn: write (create, replace),
// read (now, at a version), edit, list with filters, delete (deprecate by
// default, remove when hard), and history with the content at each
// version.
func TestVaultOwnerOperations(t *testing.T) {
	h, dir := startVaultCore(t)
	ctx := t.Context()
	path := "knowledge/projects/garden.md"
	write := func(w hearth.VaultWrite) hearth.ProposalOutcome {
		t.Helper()
		out, err := h.VaultWrite(ctx, w)
		if err != nil || out.Decision != hearth.DecisionApplied || out.Commit == "" {
			t.Fatalf("%s %s: %+v, %v; want applied and committed", w.Op, w.Path, out, err)
		}
		return out
	}
	created := write(hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: path, Content: garden, Reason: "my garden"})
	if b, _ := os.ReadFile(filepath.Join(dir, path)); string(b) != garden {
		t.Fatalf("the owner's note is not byte for byte:\n%s", b)
	}
	if head := gitLog(t, dir)[0]; !strings.HasPrefix(head, created.Commit+" owner vault: create "+path) || !strings.Contains(head, "my garden") {
		t.Errorf("git log head %q", head)
	}
	replaced := strings.Replace(garden, "Tomatoes", "Peppers", 1)
	write(hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: path, Content: replaced})
	write(hearth.VaultWrite{Op: hearth.VaultOpEdit, Path: path, Patch: &vault.Patch{BodyAppend: "And basil.", TagsAdd: []string{"food"}}})

	now, err := h.VaultRead(ctx, path, "")
	if err != nil || !strings.Contains(string(now.Content), "Peppers on the balcony.\nAnd basil.\n") || !strings.Contains(string(now.Content), "food") || now.Commit != "" {
		t.Fatalf("read now: %+v, %v", now, err)
	}
	then, err := h.VaultRead(ctx, path, created.Commit[:10])
	if err != nil || string(then.Content) != garden || then.Commit != created.Commit {
		t.Fatalf("read at the first version: %q at %s, %v", then.Content, then.Commit, err)
	}
	if _, err := h.VaultRead(ctx, "knowledge/projects/none.md", ""); !isCode(err, hearth.CodeBadRequest) {
		t.Errorf("read a missing file: %v, want bad request", err)
	}
	if _, err := h.VaultRead(ctx, ".git/config", ""); !isCode(err, hearth.CodeBadRequest) {
		t.Errorf("read inside .git: %v, want bad request", err)
	}

	write(hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/people/ana.md", Content: "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6G\ntitle: Ana\ntype: person\n---\nA friend.\n"})
	for _, tc := range []struct {
		name string
		f    vault.ListFilter
		want []string
	}{
		{"all", vault.ListFilter{}, []string{"knowledge/people/ana.md", path}},
		{"type", vault.ListFilter{Type: "person"}, []string{"knowledge/people/ana.md"}},
		{"tag", vault.ListFilter{Tag: "food"}, []string{path}},
		{"prefix", vault.ListFilter{Prefix: "knowledge/projects/"}, []string{path}},
		{"name prefix", vault.ListFilter{Prefix: "knowledge/people/an"}, []string{"knowledge/people/ana.md"}},
		{"status", vault.ListFilter{Status: vault.Deprecated}, nil},
	} {
		notes, err := h.VaultList(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, n := range notes {
			got = append(got, n.Path)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("list %s: %v, want %v", tc.name, got, tc.want)
		}
	}

	write(hearth.VaultWrite{Op: hearth.VaultOpDelete, Path: path, Reason: "the garden is gone"})
	if notes, _ := h.VaultList(ctx, vault.ListFilter{Status: vault.Deprecated}); len(notes) != 1 || notes[0].Path != path {
		t.Errorf("after a delete without hard: %+v, want the note kept, deprecated", notes)
	}
	gone := write(hearth.VaultWrite{Op: hearth.VaultOpDelete, Path: path, Hard: true, Reason: "for good"})
	if _, err := os.Stat(filepath.Join(dir, path)); !os.IsNotExist(err) {
		t.Errorf("a hard delete left the file: %v", err)
	}

	cs, err := h.VaultHistory(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range cs {
		if c.Commit == "" || c.Author != vault.AuthorOwner || len(c.Ledger) == 0 {
			t.Errorf("change %+v: want a commit by the owner with its ledger line", c)
			continue
		}
		ops = append(ops, string(c.Ledger[0].Op))
	}
	if got := strings.Join(ops, ","); got != "delete,deprecate,update,update,create" {
		t.Errorf("history ops %s, want delete,deprecate,update,update,create", got)
	}
	if len(cs) > 0 && cs[0].Commit != gone.Commit {
		t.Errorf("newest change %s, want %s", cs[0].Commit, gone.Commit)
	}
	if cs, _ := h.VaultHistory(ctx, path, 2); len(cs) != 2 {
		t.Errorf("history with limit 2: %d changes", len(cs))
	}
	// Every version the history names reads back.
	for _, c := range cs[1:] {
		if _, err := h.VaultRead(ctx, path, c.Commit); err != nil {
			t.Errorf("read at %s: %v", c.Commit, err)
		}
	}
}

// Writes the owner cannot make are refused with a reason and write
// nothing: a stale base, a malformed note, an edit of a missing note, a
// path outside the vault's writable files.
func TestVaultOwnerWriteRefused(t *testing.T) {
	h, dir := startVaultCore(t)
	ctx := t.Context()
	path := "knowledge/projects/garden.md"
	if _, err := h.VaultWrite(ctx, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: path, Content: garden}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    hearth.VaultWrite
	}{
		{"malformed note", hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/x.md", Content: "no front matter\n"}},
		{"edit of a missing note", hearth.VaultWrite{Op: hearth.VaultOpEdit, Path: "knowledge/y.md", Patch: &vault.Patch{Confirmed: true}}},
		{"empty edit", hearth.VaultWrite{Op: hearth.VaultOpEdit, Path: path, Patch: &vault.Patch{}}},
		{"journal", hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "threads/x.jsonl", Content: "x"}},
		{"ledger", hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "audit/ledger/2026-01.jsonl", Content: "x"}},
		{"unknown op", hearth.VaultWrite{Op: "frob", Path: path}},
	} {
		if out, err := h.VaultWrite(ctx, tc.w); !isCode(err, hearth.CodeBadRequest) {
			t.Errorf("%s: %+v, %v; want bad request", tc.name, out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/x.md")); !os.IsNotExist(err) {
		t.Errorf("a malformed note was written: %v", err)
	}
	out, err := h.VaultWrite(ctx, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: path, Content: garden + "more\n", Base: vault.Hash([]byte("older"))})
	if err != nil || out.Decision != hearth.DecisionRejected || !strings.Contains(out.Why, "changed since") {
		t.Errorf("stale base: %+v, %v; want rejected as stale", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, path)); string(b) != garden {
		t.Errorf("a stale write changed the file:\n%s", b)
	}
}

// The owner edits a note by hand while the agent's update of it is under
// way: the agent's write, made against the older file, is not applied —
// the owner's text is kept and committed as theirs — but proposed again,
// against the file as it is, for the owner to review; approved, the
// agent's edit lands on the owner's text.
func TestHandEditRacesAgentWrite(t *testing.T) {
	h, dir := startVaultCore(t)
	ctx := t.Context()
	path := "knowledge/projects/garden.md"
	if _, err := h.VaultWrite(ctx, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: path, Content: garden}); err != nil {
		t.Fatal(err)
	}
	src := []vault.Source{{Thread: "main", Turn: "01JTURN0000000000000000000"}}
	agent := hearth.VaultWrite{Op: hearth.VaultOpEdit, Path: path, Patch: &vault.Patch{BodyAppend: "The owner also grows mint."},
		Base: vault.Hash([]byte(garden)), Reason: "the owner said so", Sources: src, Author: vault.AuthorAgent}
	mine := strings.Replace(garden, "Tomatoes", "Only herbs", 1)
	if err := os.WriteFile(filepath.Join(dir, path), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := h.VaultWrite(ctx, agent)
	if err != nil || out.Decision != hearth.DecisionQueued || !strings.Contains(out.Why, "re-proposed") {
		t.Fatalf("the racing agent write: %+v, %v; want re-proposed for review", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, path)); string(b) != mine {
		t.Fatalf("the owner's edit was clobbered:\n%s", b)
	}
	if log := gitLog(t, dir)[0]; !strings.Contains(log, " owner vault: the owner's edits") {
		t.Errorf("the hand edit was not committed as the owner's: %q", log)
	}
	ps, err := h.Proposals(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != out.ID || ps[0].Base != vault.Hash([]byte(mine)) {
		t.Fatalf("pending %+v, %v; want the re-proposal against the owner's text", ps, err)
	}
	got, err := h.DecideProposal(ctx, out.ID, hearth.ProposalDecision{Approve: true})
	if err != nil || got.Decision != hearth.DecisionApplied {
		t.Fatalf("approve the re-proposal: %+v, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, path)); !strings.Contains(string(b), "Only herbs on the balcony.\nThe owner also grows mint.\n") {
		t.Errorf("the note after the approval:\n%s", b)
	}
}

func isCode(err error, code string) bool {
	var p *hearth.Problem
	return errors.As(err, &p) && p.Code == code
}

// A write a door makes for a non-owner (an external agent's device, which
// the default rules allow vault write) is a proposal of theirs under the
// policy, never the owner's write: a person note waits for the owner, a
// project note may be applied, authored external:<subject>.
func TestVaultWriteForNonOwnerIsProposal(t *testing.T) {
	h, _ := startVaultCore(t)
	agent := auth.WithIdentity(t.Context(), auth.Identity{Subject: "Crush Laptop", Actor: auth.ActorExternalAgent})
	person := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E7A\ntitle: Ana\ntype: person\nconfidence: 0.9\n---\nAna is the owner's sister in Porto.\n"
	out, err := h.VaultWrite(agent, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/people/ana.md", Content: person, Reason: "said in crush"})
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("an agent's person note: %+v, %v; want queued", out, err)
	}
	props, err := h.Proposals(t.Context())
	if err != nil || len(props) != 1 || props[0].Author != "external:crush-laptop" {
		t.Fatalf("proposals %+v, %v", props, err)
	}
	project := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E7B\ntitle: Garden\ntype: project\nconfidence: 0.9\n---\nTomatoes and basil grow on the balcony.\n"
	out, err = h.VaultWrite(agent, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/projects/garden.md", Content: project, Reason: "said in crush"})
	if err != nil || out.Decision != hearth.DecisionApplied {
		t.Fatalf("an agent's project note: %+v, %v; want applied by the policy", out, err)
	}
	owner := auth.WithIdentity(t.Context(), auth.Identity{Subject: "owner", Actor: auth.ActorOwner})
	out, err = h.VaultWrite(owner, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/people/bo.md", Content: strings.Replace(person, "Ana", "Bo", -1)})
	if err != nil || out.Decision != hearth.DecisionApplied {
		t.Fatalf("the owner's person note: %+v, %v; want applied", out, err)
	}
}
