package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
)

// committedRoot is a memory root whose layout is committed.
func committedRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), dir, data.Vault(), nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func headHash(t *testing.T, dir string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash().String()
}

// ledgerFor returns the ledger's lines for path.
func ledgerFor(t *testing.T, dir, path string) []Entry {
	t.Helper()
	es, _, err := ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, e := range es {
		if e.Path == path {
			out = append(out, e)
		}
	}
	return out
}

// A write cut short by a crash at each stage of Apply is, after a
// restart (a new Vault on the same root, nothing in memory), committed
// once as its author with its proposal and reason, and ledgered once;
// the owner-edit check never takes it as the owner's.
func TestApplyCrashThenRestart(t *testing.T) {
	const path = "knowledge/projects/crash.md"
	tests := []struct {
		stage        string
		wantCommit   bool // the restart makes the commit
		wantLedger   int  // ledger lines for the path afterwards
		wantFile     bool
		lineNamesNew bool // the ledger line names the restart's commit
	}{
		{"files", false, 0, false, false}, // nothing changed yet: nothing to commit
		{"commit", true, 1, true, true},   // written, not committed
		{"ledger", false, 1, true, false}, // committed, not ledgered
		// committed and ledgered, record left: the restart commits the
		// ledger's line, as the next write would have
		{"drop", true, 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			dir := committedRoot(t)
			v := New(dir, nil)
			v.crash = func(s string) bool { return s == tt.stage }
			p := projectProposal(t, path)
			p.Author = AuthorAgent
			if _, err := v.Apply(t.Context(), p); !errors.Is(err, errCrash) {
				t.Fatalf("Apply = %v, want the crash", err)
			}
			before := headHash(t, dir)

			again := New(dir, nil) // the restart
			if n, err := again.Pending(); err != nil || n != 1 {
				t.Fatalf("Pending = %d, %v; want 1", n, err)
			}
			// hearth commits pending writes first, but even the owner
			// check alone must not take the agent's write.
			if res, _, err := again.CommitOwnerEdits(t.Context()); err != nil || len(res.Paths) != 0 {
				t.Fatalf("CommitOwnerEdits = %+v, %v; want nothing (the write is the agent's)", res, err)
			}
			if _, err := again.CommitPending(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n, _ := again.Pending(); n != 0 {
				t.Errorf("%d pending after the catch-up", n)
			}
			after := headHash(t, dir)
			if (after != before) != tt.wantCommit {
				t.Errorf("new commit = %v, want %v", after != before, tt.wantCommit)
			}
			if tt.wantFile {
				msg, author := headCommit(t, dir)
				if author != AuthorAgent || !strings.Contains(msg, "Proposal: "+p.ID) || !strings.Contains(msg, p.Reason) {
					t.Errorf("HEAD by %q:\n%s\nwant the agent's commit of %s", author, msg, p.ID)
				}
				if b, _ := again.Read(path); headFile(t, dir, path) != string(b) {
					t.Errorf("HEAD does not hold the written file")
				}
			}
			es := ledgerFor(t, dir, path)
			if len(es) != tt.wantLedger {
				t.Fatalf("%d ledger lines for %s, want %d: %+v", len(es), path, tt.wantLedger, es)
			}
			names := before
			if tt.lineNamesNew {
				names = after
			}
			for _, e := range es {
				if e.Author != AuthorAgent || e.Proposal != p.ID || e.Commit != names || e.CommitErr != "" {
					t.Errorf("ledger line %+v, want the agent's, proposal %s, commit %s", e, p.ID, names)
				}
			}
			// Nothing is left for the owner either.
			if edits, err := again.OwnerEdits(t.Context()); err != nil || len(edits) != 0 {
				t.Errorf("owner edits after the catch-up: %+v, %v", edits, err)
			}
		})
	}
}

// A commit refused by a held index.lock keeps its record on disk: a
// restart commits it as its author; retries that fail again add no
// ledger lines.
func TestApplyCommitFailedThenRestart(t *testing.T) {
	dir := committedRoot(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := projectProposal(t, "knowledge/projects/locked.md")
	var cerr *CommitError
	if _, err := New(dir, nil).Apply(t.Context(), p); !errors.As(err, &cerr) {
		t.Fatalf("Apply = %v, want a CommitError", err)
	}
	again := New(dir, nil)
	for range 2 {
		if _, err := again.CommitPending(t.Context()); !errors.As(err, &cerr) {
			t.Fatalf("CommitPending with the lock held = %v", err)
		}
	}
	if es := ledgerFor(t, dir, p.Path); len(es) != 1 || es[0].CommitErr == "" {
		t.Fatalf("ledger %+v, want one line saying the commit failed", es)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	res, err := again.CommitPending(t.Context())
	if err != nil || res.Commit == "" {
		t.Fatalf("CommitPending = %+v, %v", res, err)
	}
	msg, author := headCommit(t, dir)
	if author != AuthorCurator || !strings.HasPrefix(msg, "vault: create "+p.Path+" (committed late)\n") || !strings.Contains(msg, "Proposal: "+p.ID) {
		t.Errorf("HEAD by %q:\n%s", author, msg)
	}
	if es := ledgerFor(t, dir, p.Path); len(es) != 1 {
		t.Errorf("%d ledger lines after the catch-up, want 1", len(es))
	}
}

// A rejection and a purge whose commits failed are committed after a
// restart as who decided them, not as the owner's edits.
func TestRejectAndPurgePendingAcrossRestart(t *testing.T) {
	dir := committedRoot(t)
	v := New(dir, nil)
	note := projectProposal(t, "knowledge/projects/gone.md")
	if _, err := v.Apply(t.Context(), note); err != nil {
		t.Fatal(err)
	}
	q := projectProposal(t, "knowledge/projects/queued.md")
	if err := SaveProposal(dir, q); err != nil {
		t.Fatal(err)
	}
	if _, _, err := New(dir, nil).CommitOwnerEdits(t.Context()); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var cerr *CommitError
	if _, err := v.Reject(t.Context(), q, "policy", "no"); !errors.As(err, &cerr) {
		t.Fatalf("Reject = %v", err)
	}
	if _, err := v.Purge(t.Context(), KnowledgeDir, "start over", "job:reset"); !errors.As(err, &cerr) {
		t.Fatalf("Purge = %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	again := New(dir, nil)
	if res, _, err := again.CommitOwnerEdits(t.Context()); err != nil || len(res.Paths) != 0 {
		t.Fatalf("CommitOwnerEdits = %+v, %v; want nothing of the owner's", res, err)
	}
	if _, err := again.CommitPending(t.Context()); err != nil {
		t.Fatal(err)
	}
	msg, author := headCommit(t, dir)
	if author != "job:reset" || !strings.HasPrefix(msg, "vault: purge knowledge") {
		t.Errorf("HEAD by %q:\n%s", author, msg)
	}
	if edits, err := again.OwnerEdits(t.Context()); err != nil || len(edits) != 0 {
		t.Errorf("owner edits after the catch-up: %+v, %v", edits, err)
	}
	if n := len(ledgerFor(t, dir, note.Path)); n != 2 { // created, purged
		t.Errorf("%d ledger lines for the purged note, want 2", n)
	}
}

// Whatever a pending record holds (torn, hand-edited, hostile), reading
// the records never panics, keeps only well-formed ones, and drops the
// rest; committing them never commits outside the root.
func FuzzReadPending(f *testing.F) {
	f.Add([]byte(`{"id":"X","paths":["knowledge/a.md"],"message":"m","author":"agent"}`))
	f.Add([]byte(`{"id":`))
	f.Add([]byte(`{"id":"X","paths":[]}`))
	f.Add([]byte(`{"id":"X","paths":["../../etc/passwd"],"entries":[{"path":"../x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		pd := filepath.Join(dir, "."+pendingDirName) // no .git: the root's own
		if err := os.MkdirAll(pd, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pd, "X.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		ps, err := readPending(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.ID != "X" || len(p.Paths) == 0 {
				t.Fatalf("kept %+v", p)
			}
		}
		if len(ps) == 0 {
			if _, err := os.Stat(filepath.Join(pd, "X.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a bad record is left: %v", err)
			}
		}
		// No repository: the commit fails, and nothing is written
		// outside the root.
		_, _ = New(dir, nil).CommitPending(t.Context())
	})
}
