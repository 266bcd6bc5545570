package vault

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
)

// A hearth killed mid-commit leaves its .git/index.lock; the next Open
// (under the root's lock) removes it, so the saved write is committed
// late instead of waiting for the owner to delete the file by hand. A
// lock of git's, or an empty one, stays. Found by the crash loop
// (bench/reliability).
func TestOpenClearsTheIndexLockAKilledHearthLeft(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string // of the lock left behind
		cleared bool
	}{
		{"hearth's", indexLockMark, true},
		{"git's", "DIRC\x00\x00\x00\x02", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := committedRoot(t)
			lock := filepath.Join(dir, ".git", "index.lock")
			if err := os.WriteFile(lock, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			p := projectProposal(t, "knowledge/projects/killed.md")
			var cerr *CommitError
			if _, err := New(dir, nil).Apply(t.Context(), p); !errors.As(err, &cerr) || !errors.Is(err, ErrIndexLocked) {
				t.Fatalf("Apply with the lock held = %v, want ErrIndexLocked", err)
			}
			// Killed while moving the branch too: its ref lock is left.
			refLock := filepath.Join(dir, ".git", "refs", "heads", "master.lock")
			if tc.cleared {
				if err := os.WriteFile(refLock, []byte("0123\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			v, err := Open(t.Context(), dir, data.Vault(), nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			_, statErr := os.Stat(lock)
			if cleared := errors.Is(statErr, fs.ErrNotExist); cleared != tc.cleared {
				t.Fatalf("lock cleared = %v (%v), want %v", cleared, statErr, tc.cleared)
			}
			if _, err := os.Stat(refLock); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ref lock left: %v", err)
			}
			res, err := v.CommitPending(t.Context())
			if tc.cleared && (err != nil || res.Commit == "") {
				t.Errorf("CommitPending after the restart = %+v, %v", res, err)
			}
			if !tc.cleared && !errors.Is(err, ErrIndexLocked) {
				t.Errorf("CommitPending with a git's lock = %v, want ErrIndexLocked", err)
			}
		})
	}
}

// takeIndexLock's lock is marked from the instant it exists, and only one
// taker gets it.
func TestTakeIndexLock(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "index.lock")
	if err := takeIndexLock(lock); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != indexLockMark {
		t.Fatalf("lock holds %q, %v", b, err)
	}
	if err := takeIndexLock(lock); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second take = %v, want fs.ErrExist", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "mnemo-index-lock*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A write a kill cut short leaves its temporary file beside the note; the
// catch-up after the restart removes it (git status and the owner's
// editor would show it), and only it. Found by the crash loop.
func TestCommitPendingRemovesTheTempFileAKillLeft(t *testing.T) {
	dir := committedRoot(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := projectProposal(t, "knowledge/projects/cut.md")
	if _, err := New(dir, nil).Apply(t.Context(), p); !errors.Is(err, ErrIndexLocked) {
		t.Fatalf("Apply = %v", err)
	}
	projects := filepath.Join(dir, "knowledge", "projects")
	left := filepath.Join(projects, ".cut.md.tmp123456")
	other := filepath.Join(projects, ".other.md.tmp42")
	for _, f := range []string{left, other} {
		if err := os.WriteFile(f, []byte("half a no"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(lock)
	if _, err := New(dir, nil).CommitPending(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the cut write's temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file of no pending write was removed: %v", err)
	}
}

// A commit replaces the branch file whole (a new file renamed over it), so
// a kill can never leave it empty: go-git truncated it in place and wrote
// after, and a kill in between made the next start take the root for a new
// repository and cut its history off. Found by the crash loop.
func TestCommitReplacesTheBranchWhole(t *testing.T) {
	dir := committedRoot(t)
	ref := filepath.Join(dir, ".git", "refs", "heads", "master")
	if _, err := os.Stat(ref); err != nil {
		ref = filepath.Join(dir, ".git", "refs", "heads", "main")
	}
	before, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	parent := headHash(t, dir)
	if _, err := New(dir, nil).Apply(t.Context(), projectProposal(t, "knowledge/projects/whole.md")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("the branch file was rewritten in place")
	}
	if b, _ := os.ReadFile(ref); string(b) != headHash(t, dir)+"\n" || headHash(t, dir) == parent {
		t.Errorf("branch file %q, HEAD %s (was %s)", b, headHash(t, dir), parent)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(ref), ".mnemo-ref*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A first start killed after Ensure created the layout and before Open
// saved its commit as pending left the files on disk and out of git; the
// next Open's Ensure creates nothing, so it commits the layout's files HEAD
// lacks (jobs/ and tools/ are no owner's area: nothing else would). A file
// the owner wrote at a default's path stays theirs.
func TestOpenCommitsTheLayoutAKillLeft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		left  func(t *testing.T, dir string) // the state the kill left
		owner string                         // a file the owner wrote, left for the owner-edit check
	}{
		{"every file created", func(t *testing.T, dir string) {
			if _, err := Ensure(t.Context(), dir, data.Vault(), nil); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"killed mid-Ensure", func(t *testing.T, dir string) {
			// The defaults are copied in walk order: the kill came
			// after jobs/, before the rest.
			if _, err := Ensure(t.Context(), dir, data.Vault(), nil); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"prompts/daily.system.md", "tools/README.md"} {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
					t.Fatal(err)
				}
			}
		}, ""},
		{"the owner's file at a default's path", func(t *testing.T, dir string) {
			if _, err := Ensure(t.Context(), dir, data.Vault(), nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", "README.md"), []byte("mine\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "tools/README.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
				t.Fatal(err)
			}
			tc.left(t, dir)
			if _, err := Open(t.Context(), dir, data.Vault(), nil); err != nil {
				t.Fatalf("Open: %v", err)
			}
			var want []string
			err := fs.WalkDir(data.Vault(), ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					want = append(want, p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range want {
				if got := headFile(t, dir, p); (got == "") != (p == tc.owner) {
					t.Errorf("HEAD holds %s: %v, want %v", p, got != "", p != tc.owner)
				}
			}
			if msg, author := headCommit(t, dir); author != "job:layout" || !strings.HasPrefix(msg, "vault: lay out") {
				t.Errorf("HEAD by %s: %q, want the layout's commit", author, msg)
			}
			if gitBin, err := exec.LookPath("git"); err == nil {
				out, err := exec.Command(gitBin, "-C", dir, "status", "--porcelain").CombinedOutput()
				if err != nil {
					t.Fatalf("git status: %v\n%s", err, out)
				}
				wantStatus := "?? audit/\n" // the ledger's lines name the commit: the next takes them in
				if tc.owner != "" {
					wantStatus += "?? " + path.Dir(tc.owner) + "/\n"
				}
				if string(out) != wantStatus {
					t.Errorf("git status:\n%s\nwant:\n%s", out, wantStatus)
				}
			}
		})
	}
}
