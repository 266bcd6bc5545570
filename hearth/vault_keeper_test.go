package hearth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// startKeptVault is startVaultCore with fast retries of failed commits,
// files written into the root and, when locked, git's index held before
// the core starts; the subscription is taken before the core runs.
func startKeptVault(t *testing.T, locked bool, before map[string]string) (*hearth.Hearth, *hearth.Subscription, string) {
	t.Helper()
	v, threads, dir := openVault(t)
	for p, c := range before {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if locked {
		if err := os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, s, _ := keptCore(t, threads, v)
	return h, s, dir
}

// keptCore runs a core over the journal in threads and the vault v, with
// fast retries of failed commits, until the test ends or stop is called
// (stop waits for Run to return and closes the journal).
func keptCore(t *testing.T, threads string, v hearth.Vault) (*hearth.Hearth, *hearth.Subscription, func()) {
	t.Helper()
	j, err := journal.Open(threads, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	retry := backoff.Policy{Initial: time.Millisecond, Max: 20 * time.Millisecond}
	h, err := hearth.New(hearth.Config{Journal: j, Vault: v, VaultRetry: retry, ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			s.Close()
			j.Close()
		})
	}
	t.Cleanup(stop)
	return h, s, stop
}

func settled(ev hearth.Event) bool { _, ok := ev.(*hearth.VaultSettled); return ok }

// waitFor runs s until an event satisfies ok, and returns the events
// seen until then.
func waitFor(t *testing.T, s *hearth.Subscription, ok func(hearth.Event) bool) []hearth.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var seen []hearth.Event
	found := errors.New("found")
	err := s.Run(ctx, func(evs []hearth.Event) error {
		for _, ev := range evs {
			seen = append(seen, ev)
			if ok(ev) {
				return found
			}
		}
		return nil
	})
	if !errors.Is(err, found) {
		t.Fatalf("the event did not come: %v (saw %d events)", err, len(seen))
	}
	return seen
}

// A held .git/index.lock: two writes are saved, not committed; the owner
// is told once; health says what waits and why; the conversation is still
// stored; once the lock goes, the keeper commits both in the background
// (no further write needed) and health is clear.
func TestVaultCommitRetried(t *testing.T) {
	h, s, dir := startKeptVault(t, false, nil)
	waitFor(t, s, settled) // the start-up pass
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"knowledge/projects/a.md", "knowledge/projects/b.md"} {
		out, err := h.Propose(t.Context(), noteProposal(p, "project", "mnemo keeps its vault under git with one commit per write"))
		if err != nil || !out.CommitFailed {
			t.Fatalf("%s: %+v, %v; want saved, not committed", p, out, err)
		}
	}
	if err := h.AddTranscript("t1", memory.RoleUser, "chat goes on while git is locked"); err != nil {
		t.Fatal(err)
	}
	seen := waitFor(t, s, func(ev hearth.Event) bool {
		ts, ok := ev.(*hearth.TurnStored)
		return ok && ts.Ref == "t1"
	})
	var notices []string
	for _, ev := range seen {
		if n, ok := ev.(*hearth.Notice); ok {
			notices = append(notices, n.Message)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "index.lock") || !strings.Contains(notices[0], "retries") {
		t.Errorf("notices %q, want one saying git is locked and hearth retries", notices)
	}
	if v := h.Health().Vault; v == nil || v.Uncommitted != 2 || !strings.Contains(v.Failing, "index.lock") || v.Since.IsZero() {
		t.Errorf("health %+v, want 2 uncommitted, failing on the lock", v)
	}

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, settled)
	if v := h.Health().Vault; v == nil || v.Uncommitted != 0 || v.Failing != "" {
		t.Errorf("health after the catch-up %+v, want clear", v)
	}
	log := strings.Join(gitLog(t, dir)[:2], "\n")
	for _, p := range []string{"a.md", "b.md"} {
		if !strings.Contains(log, "agent vault: create knowledge/projects/"+p+" (committed late)") {
			t.Errorf("%s not committed late by the agent:\n%s", p, log)
		}
	}
}

// The owner's hand edits, made while hearth was stopped, are committed by
// the core in the background once it runs, as theirs; with git's index
// held at start they wait (health says so, the owner is told once) and
// are committed when it is released.
func TestOwnerEditsCommittedInBackground(t *testing.T) {
	ana := map[string]string{"knowledge/people/ana.md": "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Ana\n---\nMy sister.\n"}
	for _, locked := range []bool{false, true} {
		t.Run(map[bool]string{false: "free", true: "locked"}[locked], func(t *testing.T) {
			h, s, root := startKeptVault(t, locked, ana)
			if locked {
				seen := waitFor(t, s, func(ev hearth.Event) bool { _, ok := ev.(*hearth.Notice); return ok })
				if n := seen[len(seen)-1].(*hearth.Notice); !strings.Contains(n.Message, "index.lock") {
					t.Errorf("notice %q", n.Message)
				}
				if v := h.Health().Vault; v == nil || v.Uncommitted != 1 {
					t.Errorf("health %+v, want the owner's edits waiting", v)
				}
				if err := os.Remove(filepath.Join(root, ".git", "index.lock")); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, s, settled)
			head := gitLog(t, root)[0]
			if !strings.Contains(head, " owner vault: the owner's edits") || !strings.Contains(head, "knowledge/people/ana.md") {
				t.Errorf("the owner's edit is not committed as theirs: %s", head)
			}
			es, _, _ := vault.ReadLedger(root)
			n := 0
			for _, e := range es {
				if e.Path == "knowledge/people/ana.md" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d ledger lines for the edit, want 1 (a held lock is not ledgered on every retry)", n)
			}
		})
	}
}

// savedNotCommitted runs a core on a new root, has it write a note at path
// while git's index lock is held (saved, its commit failed) and stops it:
// the root, the lock still there, and the write's outcome.
func savedNotCommitted(t *testing.T, path, claim string) (dir string, root *memory.Root, lock string, out hearth.ProposalOutcome) {
	t.Helper()
	dir = t.TempDir()
	root, err := memory.Open(t.Context(), dir, data.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(t.Context(), dir, data.Vault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h, s, stop := keptCore(t, root.ThreadsDir(), v)
	waitFor(t, s, settled)
	lock = filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = h.Propose(t.Context(), noteProposal(path, "project", claim))
	if err != nil || !out.CommitFailed {
		t.Fatalf("Propose = %+v, %v; want saved, not committed", out, err)
	}
	stop() // hearth stops with the commit not made
	return dir, root, lock, out
}

// A write saved whose commit failed, then hearth stopped: the pending
// commit outlives the core. A new core on the same root (nothing in
// memory) commits it once, as the agent's with its proposal, and never
// as the owner's edit; its ledger line is not repeated.
func TestPendingCommitSurvivesRestart(t *testing.T) {
	const path = "knowledge/projects/restart.md"
	dir, root, lock, out := savedNotCommitted(t, path, "mnemo keeps its vault under git with one commit per write")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}

	_, s2, _ := keptCore(t, root.ThreadsDir(), vault.New(dir, nil))
	waitFor(t, s2, settled)
	var got []string
	for _, l := range gitLog(t, dir) {
		if strings.Contains(l, path) {
			got = append(got, l)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], " agent vault: create "+path+" (committed late)") || !strings.Contains(got[0], "Proposal: "+out.ID) {
		t.Fatalf("commits naming %s: %q, want one by the agent", path, got)
	}
	n := 0
	es, _, _ := vault.ReadLedger(dir)
	for _, e := range es {
		if e.Path == path {
			n++
			if e.Author != vault.AuthorAgent || e.Proposal != out.ID {
				t.Errorf("ledger line %+v", e)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d ledger lines for %s, want 1", n, path)
	}
}

// A write whose commit a stopped hearth left waiting is counted from the
// first health request of the next one, before its keeper has run (the
// crash loop's check took 0 there for "nothing waits"); a start-up pass
// that cannot commit it tells the owner once, and once git takes it
// health is clear.
func TestHealthCountsSavedWritesFromTheStart(t *testing.T) {
	dir, root, lock, _ := savedNotCommitted(t, "knowledge/projects/saved.md", "mnemo keeps a write saved until git takes it")

	j, err := journal.Open(root.ThreadsDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	retry := backoff.Policy{Initial: time.Millisecond, Max: 20 * time.Millisecond}
	h2, err := hearth.New(hearth.Config{Journal: j, Vault: vault.New(dir, nil), VaultRetry: retry, ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Health().Vault; got == nil || got.Uncommitted != 1 || got.Failing != "" {
		t.Fatalf("health before Run: vault %+v, want 1 uncommitted, not failing yet", got)
	}
	s2, err := h2.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h2.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, s2, func(ev hearth.Event) bool {
		n, ok := ev.(*hearth.Notice)
		return ok && strings.Contains(n.Message, "index.lock")
	})
	if got := h2.Health().Vault; got == nil || got.Uncommitted != 1 || !strings.Contains(got.Failing, "index.lock") || got.Since.IsZero() {
		t.Fatalf("health with git held: vault %+v", got)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s2, settled)
	if got := h2.Health().Vault; got == nil || got.Uncommitted != 0 || got.Failing != "" {
		t.Errorf("health once committed: vault %+v", got)
	}
}

// maintainSeen is a vault that reports each Maintain the keeper runs.
type maintainSeen struct {
	*vault.Vault
	seen chan vault.Maintenance
}

func (v maintainSeen) Maintain(ctx context.Context, threshold int) (vault.Maintenance, error) {
	m, err := v.Vault.Maintain(ctx, threshold)
	v.seen <- m
	return m, err
}

// TestKeeperMaintainsVaultAtStart: once its first pass is done, the
// keeper has the vault keep its repository small (here: a temporary
// object file a crash left hours ago is removed).
func TestKeeperMaintainsVaultAtStart(t *testing.T) {
	v, threads, dir := openVault(t)
	stale := filepath.Join(dir, ".git", "objects", "ab", "tmp_obj_crashed")
	if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	mv := maintainSeen{Vault: v, seen: make(chan vault.Maintenance, 1)}
	keptCore(t, threads, mv)
	if m := <-mv.seen; m.StaleTemps != 1 {
		t.Errorf("maintenance %+v, want the stale temporary object removed", m)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary object: %v", err)
	}
}
