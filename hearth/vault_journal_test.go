package hearth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// openVault opens a memory root in a new folder with its vault laid out;
// it returns the vault, the threads folder and the root.
func openVault(t *testing.T) (*vault.Vault, string, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := memory.Open(t.Context(), dir, data.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(t.Context(), dir, data.Vault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, root.ThreadsDir(), dir
}

// openVaultRoot opens a memory root with its vault and journal.
func openVaultRoot(t *testing.T) (*vault.Vault, *journal.Journal, string) {
	t.Helper()
	v, threads, dir := openVault(t)
	j, err := journal.Open(threads, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return v, j, dir
}

// decisions returns the decision records of j, oldest first.
func decisions(t *testing.T, j *journal.Journal) []journal.Record {
	t.Helper()
	var out []journal.Record
	err := j.Scan(t.Context(), func(r journal.Record) error {
		if r.IsDecision() {
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every decision on a proposal — by policy or by the owner, applied,
// rejected, approved as edited, an owner's write, a purge of the inbox —
// is a journal record naming the proposal, its file, the verdict, who
// decided, why and the commit. None of them is a turn: history and the
// conversation's records leave them out.
func TestDecisionsJournaled(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	ctx := t.Context()
	if _, err := j.Append(ctx, journal.Record{Role: "user", Text: "remember things", Mode: "text"}); err != nil {
		t.Fatal(err)
	}
	h := runCore(t, hearth.Config{Journal: j, Vault: v, ShutdownGrace: 5 * time.Second})
	propose := func(p vault.Proposal) hearth.ProposalOutcome {
		t.Helper()
		out, err := h.Propose(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	decide := func(id string, d hearth.ProposalDecision) hearth.ProposalOutcome {
		t.Helper()
		out, err := h.DecideProposal(ctx, id, d)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	var want []hearth.ProposalOutcome
	var by []string
	add := func(out hearth.ProposalOutcome, who string) {
		want, by = append(want, out), append(by, who)
	}
	add(propose(noteProposal("knowledge/projects/a.md", "project", "mnemo keeps its vault under git with one commit per write")), hearth.DecidedByPolicy)
	noSource := noteProposal("knowledge/projects/b.md", "project", "mnemo keeps its notes as Markdown files with front matter")
	noSource.Sources = nil
	add(propose(noSource), hearth.DecidedByPolicy)
	q1 := propose(noteProposal("knowledge/prefs/tea.md", "preference", "the owner likes green tea"))
	add(decide(q1.ID, hearth.ProposalDecision{Approve: true}), hearth.ByOwner)
	q2 := propose(noteProposal("knowledge/prefs/coffee.md", "preference", "the owner drinks black coffee"))
	mine := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Coffee\ntype: preference\n---\nA flat white.\n"
	add(decide(q2.ID, hearth.ProposalDecision{Approve: true, Content: mine}), hearth.ByOwner)
	q3 := propose(noteProposal("knowledge/prefs/milk.md", "preference", "the owner takes oat milk"))
	add(decide(q3.ID, hearth.ProposalDecision{}), hearth.ByOwner)
	w, err := h.VaultWrite(ctx, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/people/me.md",
		Content: "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6G\ntitle: Me\ntype: person\n---\nI live in Lisbon.\n"})
	if err != nil {
		t.Fatal(err)
	}
	add(w, hearth.ByOwner)
	q4 := propose(noteProposal("knowledge/prefs/music.md", "preference", "the owner likes jazz"))
	purge, err := h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: hearth.LayerProposals})
	if err != nil {
		t.Fatal(err)
	}
	add(hearth.ProposalOutcome{ID: q4.ID, Path: q4.Path, Decision: hearth.DecisionRejected, Why: "purged by the owner", Commit: purge.Commit}, hearth.ByOwner)

	got := decisions(t, j)
	if len(got) != len(want) {
		t.Fatalf("%d decision records, want %d: %+v", len(got), len(want), got)
	}
	for i, r := range got {
		w := want[i]
		d := r.Decision
		if d.Proposal != w.ID || d.Path != w.Path || d.Verdict != w.Decision || d.Why != w.Why || d.Commit != w.Commit || r.By != by[i] || r.Role != journal.RoleSystem {
			t.Errorf("decision %d = %+v by %s, want %+v by %s", i, *d, r.By, w, by[i])
		}
		if w.Decision == hearth.DecisionApplied && d.Commit == "" {
			t.Errorf("decision %d: applied without a commit", i)
		}
	}

	// History, by its tail and by its scan, holds the turns alone.
	for _, q := range []hearth.HistoryQuery{{Limit: 10}, {}, {Since: time.Unix(1, 0)}} {
		page, err := h.History(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if !r.IsTurn() {
				t.Errorf("History(%+v) holds %+v, which is not a turn", q, r)
			}
		}
		if len(page.Records) == 0 {
			t.Errorf("History(%+v) is empty, want the turn", q)
		}
	}
	// A client subscribing now, and a core restarted on the journal,
	// start from the turns alone.
	for _, c := range []*hearth.Hearth{h, runCore(t, hearth.Config{Journal: j, Vault: v, ShutdownGrace: 5 * time.Second})} {
		r := newRecorder()
		r.watch(t, c, hearth.WatchOptions{})
		r.waitFor(t, func(hearth.Event) bool { return true })
		turns := r.snapshot()[0].(*hearth.Snapshot).Turns
		if len(turns) != 1 {
			t.Errorf("the snapshot holds %d records, want the one turn", len(turns))
		}
		for _, r := range turns {
			if !r.IsTurn() {
				t.Errorf("the snapshot holds %+v, which is not a turn", r)
			}
		}
	}
}

// orderVault checks, as it writes, that the journal holds no record of
// the decision yet: the vault is written first.
type orderVault struct {
	*vault.Vault
	j       *journal.Journal
	t       *testing.T
	applies int
}

func (o *orderVault) Apply(ctx context.Context, p *vault.Proposal) (vault.Result, error) {
	o.applies++
	for _, r := range decisions(o.t, o.j) {
		if r.Decision.Proposal == p.ID {
			o.t.Errorf("the decision on %s was journaled before the vault wrote it", p.ID)
		}
	}
	return o.Vault.Apply(ctx, p)
}

// The vault's write (file, ledger, git) comes before the journal's
// record of the decision; a journal that cannot take the record (as
// after a crash between the two) leaves the decision standing in the
// vault, applied and told to every client.
func TestDecisionJournaledAfterTheVault(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	ov := &orderVault{Vault: v, j: j, t: t}
	h := runCore(t, hearth.Config{Journal: j, Vault: ov, ShutdownGrace: 5 * time.Second})
	out, err := h.Propose(t.Context(), noteProposal("knowledge/projects/a.md", "project", "mnemo keeps its vault under git with one commit per write"))
	if err != nil || out.Decision != hearth.DecisionApplied || ov.applies != 1 {
		t.Fatalf("%+v, %v; want applied once", out, err)
	}
	if got := decisions(t, j); len(got) != 1 || got[0].Decision.Proposal != out.ID {
		t.Fatalf("decision records %+v, want the one of %s", got, out.ID)
	}

	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = h.Propose(t.Context(), noteProposal("knowledge/projects/b.md", "project", "mnemo writes every note as Markdown with front matter"))
	if err != nil || out.Decision != hearth.DecisionApplied || out.Commit == "" {
		t.Fatalf("%+v, %v; want applied and committed with the journal closed", out, err)
	}
	if ev, ok := nextVaultEvent(t, s).(*hearth.ProposalDecided); !ok || ev.ID != out.ID {
		t.Errorf("event %+v, want the decision on %s", ev, out.ID)
	}
	es, _, err := vault.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	if last := es[len(es)-1]; last.Proposal != out.ID {
		t.Errorf("ledger ends with %+v, want the write of %s", last, out.ID)
	}
	if _, err := j.Append(t.Context(), journal.Record{Role: "user", Text: "x"}); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("journal append after close: %v", err)
	}
}
