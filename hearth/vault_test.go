package hearth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// startVaultCore opens a real memory root with its vault laid out and
// runs a core over it.
func startVaultCore(t *testing.T) (*hearth.Hearth, string) {
	t.Helper()
	v, j, dir := openVaultRoot(t)
	return runCore(t, hearth.Config{Journal: j, Vault: v, ShutdownGrace: 5 * time.Second}), dir
}

func noteProposal(path, typ, body string) vault.Proposal {
	content := fmt.Sprintf("---\nid: %s\ntitle: A note\ntype: %s\nconfidence: 0.9\n---\n%s\n", vault.NewNoteID(), typ, body)
	return vault.Proposal{
		Op: vault.OpCreate, Path: path, Content: content,
		Reason:  "the owner said so",
		Sources: []vault.Source{{Thread: "main", Turn: "01JTURN0000000000000000000"}},
	}
}

// nextVaultEvent returns the next ProposalQueued or ProposalDecided s
// delivers, and fails if another follows it in the same batch.
func nextVaultEvent(t *testing.T, s *hearth.Subscription) hearth.Event {
	t.Helper()
	var got hearth.Event
	errFound := fmt.Errorf("found")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var rest []hearth.Event
	err := s.Run(ctx, func(evs []hearth.Event) error {
		for i, ev := range evs {
			switch ev.(type) {
			case *hearth.ProposalQueued, *hearth.ProposalDecided:
				got, rest = ev, evs[i+1:]
				return errFound
			}
		}
		return nil
	})
	if got == nil {
		t.Fatalf("no vault event: %v", err)
	}
	// A second proposal event in the same batch is one too many; others
	// (the keeper's VaultSettled, a state change) come when they come.
	for _, ev := range rest {
		switch ev.(type) {
		case *hearth.ProposalQueued, *hearth.ProposalDecided:
			t.Fatalf("more proposal events than expected after %T: %T", got, ev)
		}
	}
	return got
}

func gitLog(t *testing.T, dir string) []string {
	t.Helper()
	repo, err := memory.OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	it, err := repo.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for {
		c, err := it.Next()
		if err != nil {
			break
		}
		msgs = append(msgs, c.Hash.String()+" "+c.Author.Name+" "+c.Message)
	}
	return msgs
}

// A low-risk, sourced note auto-applies: the file is written, git holds
// its commit, and every subscriber hears one ProposalDecided.
func TestProposeAutoApplies(t *testing.T) {
	h, dir := startVaultCore(t)
	var subs []*hearth.Subscription
	for range 2 {
		s, err := h.Subscribe(hearth.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		subs = append(subs, s)
	}
	out, err := h.Propose(t.Context(), noteProposal("knowledge/projects/mnemo.md", "project", "mnemo keeps its vault under git with one commit per write"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != hearth.DecisionApplied || out.Commit == "" {
		t.Fatalf("outcome %+v, want applied with a commit", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/projects/mnemo.md")); err != nil {
		t.Fatal(err)
	}
	log := gitLog(t, dir)
	if !strings.HasPrefix(log[0], out.Commit+" agent vault: create knowledge/projects/mnemo.md") {
		t.Errorf("git log head %q, want the note's commit %s", log[0], out.Commit)
	}
	for i, s := range subs {
		ev, ok := nextVaultEvent(t, s).(*hearth.ProposalDecided)
		if !ok || ev.ID != out.ID || ev.Decision != hearth.DecisionApplied || ev.Commit != out.Commit || ev.By != hearth.DecidedByPolicy {
			t.Errorf("subscriber %d got %+v, want the applied decision of %s", i, ev, out.ID)
		}
	}
}

// A preference is queued for the owner (every subscriber hears it), lists
// as pending, and is written once the owner approves it.
func TestProposeQueuesThenApproved(t *testing.T) {
	h, dir := startVaultCore(t)
	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := "knowledge/prefs/coffee.md"
	out, err := h.Propose(t.Context(), noteProposal(path, "preference", "the owner drinks black coffee without sugar"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != hearth.DecisionQueued {
		t.Fatalf("outcome %+v, want queued", out)
	}
	if q, ok := nextVaultEvent(t, s).(*hearth.ProposalQueued); !ok || q.Proposal.ID != out.ID || q.Proposal.Path != path || q.Why == "" {
		t.Fatalf("got %+v, want the queued proposal %s with why", q, out.ID)
	}
	if _, err := os.Stat(filepath.Join(dir, path)); !os.IsNotExist(err) {
		t.Fatalf("a queued note was written: %v", err)
	}
	pending, err := h.Proposals(t.Context())
	if err != nil || len(pending) != 1 || pending[0].ID != out.ID {
		t.Fatalf("pending %+v, %v; want %s", pending, err, out.ID)
	}

	got, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Decision != hearth.DecisionApplied || got.Commit == "" {
		t.Fatalf("approval %+v, want applied with a commit", got)
	}
	if d, ok := nextVaultEvent(t, s).(*hearth.ProposalDecided); !ok || d.ID != out.ID || d.By != hearth.ByOwner || d.Decision != hearth.DecisionApplied {
		t.Fatalf("got %+v, want the owner's approval", d)
	}
	if _, err := os.Stat(filepath.Join(dir, path)); err != nil {
		t.Fatal(err)
	}
	if pending, _ := h.Proposals(t.Context()); len(pending) != 0 {
		t.Errorf("still pending after approval: %+v", pending)
	}
	if !strings.HasPrefix(gitLog(t, dir)[0], got.Commit+" agent vault: create "+path) {
		t.Errorf("git log head %q", gitLog(t, dir)[0])
	}
	if log := gitLog(t, dir)[0]; !strings.Contains(log, "Approved by the owner.") {
		t.Errorf("the commit does not say who approved it:\n%s", log)
	}
	// Deciding it again is refused.
	if _, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{Approve: true}); err == nil {
		t.Error("a decided proposal was decided again")
	}
}

// Rejecting a queued proposal drops it unwritten; a proposal with no
// sources is rejected by policy.
func TestProposeRejected(t *testing.T) {
	h, dir := startVaultCore(t)
	p := noteProposal("knowledge/prefs/tea.md", "preference", "the owner likes green tea in the afternoon")
	out, err := h.Propose(t.Context(), p)
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v", out, err)
	}
	got, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{})
	if err != nil || got.Decision != hearth.DecisionRejected {
		t.Fatalf("%+v, %v", got, err)
	}
	if pending, _ := h.Proposals(t.Context()); len(pending) != 0 {
		t.Errorf("still pending after rejection: %+v", pending)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/prefs/tea.md")); !os.IsNotExist(err) {
		t.Errorf("a rejected note was written: %v", err)
	}
	p = noteProposal("knowledge/projects/x.md", "project", "mnemo keeps its vault under git with one commit")
	p.Sources = nil
	out, err = h.Propose(t.Context(), p)
	if err != nil || out.Decision != hearth.DecisionRejected || !strings.Contains(out.Why, "sources") {
		t.Fatalf("%+v, %v; want rejected for no sources", out, err)
	}
}

// A held .git/index.lock (the owner's git running) fails the commit: the
// note is saved, the outcome says it is not committed, every subscriber
// gets a Notice, and the next write commits both.
func TestProposeCommitFails(t *testing.T) {
	h, dir := startVaultCore(t)
	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := h.Propose(t.Context(), noteProposal("knowledge/projects/a.md", "project", "mnemo keeps its vault under git with one commit per write"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != hearth.DecisionApplied || !out.CommitFailed || out.Commit != "" {
		t.Fatalf("outcome %+v, want applied, not committed", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/projects/a.md")); err != nil {
		t.Fatal(err)
	}
	var notice *hearth.Notice
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errSeen := fmt.Errorf("seen")
	s.Run(ctx, func(evs []hearth.Event) error {
		for _, ev := range evs {
			if n, ok := ev.(*hearth.Notice); ok {
				notice = n
			}
			if _, ok := ev.(*hearth.ProposalDecided); ok && notice != nil {
				return errSeen
			}
		}
		return nil
	})
	if notice == nil || !strings.Contains(notice.Message, "not commit") {
		t.Errorf("notice %+v, want one saying the change is not committed", notice)
	}

	os.Remove(lock)
	out, err = h.Propose(t.Context(), noteProposal("knowledge/projects/b.md", "project", "the second note of the vault goes in after the lock"))
	if err != nil || out.Commit == "" {
		t.Fatalf("%+v, %v; want committed", out, err)
	}
	repo, err := memory.OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(out.Commit))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.File("knowledge/projects/b.md"); err != nil {
		t.Errorf("b.md not in the commit: %v", err)
	}
	if _, err := tree.File("knowledge/projects/a.md"); err != nil {
		t.Errorf("a.md, written while git was locked, is not committed: %v", err)
	}
	// It was committed as the agent's, not taken for an owner's edit.
	it, err := repo.Log(&git.LogOptions{From: c.Hash, FileName: ptr("knowledge/projects/a.md")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := it.Next()
	if err != nil || first.Author.Name != "agent" || !strings.Contains(first.Message, "committed late") {
		t.Errorf("a.md committed by %+v, %v; want the agent's late commit", first, err)
	}
}

func ptr[T any](v T) *T { return &v }

// Approving a proposal whose file the owner wrote meanwhile is refused,
// never clobbering their text, and the proposal leaves the inbox.
func TestApproveStale(t *testing.T) {
	h, dir := startVaultCore(t)
	path := "knowledge/prefs/tea.md"
	out, err := h.Propose(t.Context(), noteProposal(path, "preference", "the owner likes green tea in the afternoon"))
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v", out, err)
	}
	mine := []byte("---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Tea\n---\nOnly white tea, thanks.\n")
	if err := os.WriteFile(filepath.Join(dir, path), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := h.DecideProposal(t.Context(), out.ID, hearth.ProposalDecision{Approve: true})
	if err != nil || got.Decision != hearth.DecisionRejected || !strings.Contains(got.Why, "changed since") {
		t.Fatalf("%+v, %v; want rejected as stale", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, path)); string(b) != string(mine) {
		t.Errorf("the owner's note was overwritten:\n%s", b)
	}
	if pending, _ := h.Proposals(t.Context()); len(pending) != 0 {
		t.Errorf("a stale proposal stays pending: %+v", pending)
	}
	if log := gitLog(t, dir)[0]; !strings.Contains(log, " owner vault: the owner's edits") {
		t.Errorf("the owner's note was not committed as theirs: %s", log)
	}
}

// A queued change is reviewed as a diff: its event and the review list
// carry the file as it is, and the list says what policy says of it now.
func TestReviewProposalsCarryTheFileAndWhy(t *testing.T) {
	h, dir := startVaultCore(t)
	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := "knowledge/prefs/coffee.md"
	old := noteProposal(path, "preference", "the owner drinks black coffee").Content
	if err := os.MkdirAll(filepath.Join(dir, "knowledge/prefs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, path), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	p := noteProposal(path, "preference", "")
	p.Op, p.Base = vault.OpUpdate, vault.Hash([]byte(old))
	p.Content = strings.Replace(old, "black coffee", "flat whites", 1)
	out, err := h.Propose(t.Context(), p)
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v; want queued", out, err)
	}
	q, ok := nextVaultEvent(t, s).(*hearth.ProposalQueued)
	if !ok || string(q.Current) != old {
		t.Fatalf("queued event %+v, want the file as it is", q)
	}

	list, err := h.ReviewProposals(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("%+v, %v", list, err)
	}
	if got := list[0]; got.Proposal.ID != out.ID || string(got.Current) != old || got.Why != q.Why {
		t.Errorf("listed %+v, want %s with the file and why %q", got, out.ID, q.Why)
	}

	// The owner edits the file meanwhile: the review shows it, and why
	// the proposal can no longer apply.
	edited := strings.Replace(old, "black coffee", "espresso", 1)
	if err := os.WriteFile(filepath.Join(dir, path), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err = h.ReviewProposals(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("%+v, %v", list, err)
	}
	if got := list[0]; string(got.Current) != edited || !strings.Contains(got.Why, "changed since") {
		t.Errorf("after the owner's edit: current %q, why %q", got.Current, got.Why)
	}
}
