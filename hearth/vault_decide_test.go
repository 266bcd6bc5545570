package hearth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/vault"
)

// The owner approves a queued proposal with their own edit of it: their
// text is written byte for byte, authored by the owner, ledgered and
// committed; an edit that goes with a rejection is refused.
func TestApproveEdited(t *testing.T) {
	h, dir := startVaultCore(t)
	path := "knowledge/prefs/coffee.md"
	out, err := h.Propose(t.Context(), noteProposal(path, "preference", "the owner drinks black coffee"))
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v", out, err)
	}
	if _, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{Content: "x"}); err == nil {
		t.Error("a rejection with edited content was accepted")
	}
	mine := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Coffee\ntype: preference\n---\nA flat white, no sugar.\n"
	got, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{Approve: true, Content: mine})
	if err != nil || got.Decision != hearth.DecisionApplied || got.Commit == "" || !strings.Contains(got.Why, "edited") {
		t.Fatalf("%+v, %v; want applied as edited, committed", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, path)); string(b) != mine {
		t.Errorf("the note is not the owner's text:\n%s", b)
	}
	if head := gitLog(t, dir)[0]; !strings.HasPrefix(head, got.Commit+" owner vault: create "+path) || !strings.Contains(head, "Approved as edited by the owner.") {
		t.Errorf("git log head %q, want the owner's commit", head)
	}
	es, _, err := vault.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := es[len(es)-1]
	if last.Path != path || last.Author != vault.AuthorOwner || last.Proposal != out.ID || last.After != vault.Hash([]byte(mine)) {
		t.Errorf("ledger line %+v, want the owner's write of %s", last, path)
	}
}

// A rejection, by the owner or by policy, leaves a ledger line and a
// commit saying so; the proposed file is not written.
func TestRejectionsLedgered(t *testing.T) {
	h, dir := startVaultCore(t)
	out, err := h.Propose(t.Context(), noteProposal("knowledge/prefs/tea.md", "preference", "the owner likes green tea"))
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v", out, err)
	}
	if _, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{}); err != nil {
		t.Fatal(err)
	}
	p := noteProposal("knowledge/projects/x.md", "project", "mnemo keeps its vault under git with one commit")
	p.Sources = nil
	pol, err := h.Propose(t.Context(), p)
	if err != nil || pol.Decision != hearth.DecisionRejected {
		t.Fatalf("%+v, %v", pol, err)
	}
	es, _, err := vault.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rejects []vault.Entry
	for _, e := range es {
		if e.Op == vault.OpReject {
			rejects = append(rejects, e)
		}
	}
	if len(rejects) != 2 || rejects[0].Proposal != out.ID || rejects[0].Author != hearth.ByOwner ||
		rejects[1].Proposal != pol.ID || rejects[1].Author != hearth.DecidedByPolicy || !strings.Contains(rejects[1].Reason, "sources") {
		t.Fatalf("reject lines %+v, want the owner's then the policy's", rejects)
	}
	log := gitLog(t, dir)
	if !strings.Contains(log[0], " policy vault: reject create knowledge/projects/x.md") || !strings.Contains(log[1], " owner vault: reject create knowledge/prefs/tea.md") {
		t.Errorf("git log %q, want both rejections committed", log[:2])
	}
	for _, f := range []string{"knowledge/prefs/tea.md", "knowledge/projects/x.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", f, err)
		}
	}
}
