package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitCacheBesideOwnerGit: one Vault's commits, which keep the trees
// and the index they wrote, interleave with the owner's git: a commit of
// theirs (HEAD moved outside), an edit staged and left staged, an edit of
// a tracked file to one of the same length (an index of the same size
// with other content). After every step git agrees with what the vault
// wrote: fsck is clean, status shows only the owner's staged edit (and
// the ledger's newest line, committed with the next write), the
// log has every commit, and nothing of the owner's is lost.
func TestCommitCacheBesideOwnerGit(t *testing.T) {
	dir := newRoot(t)
	run := gitRunner(t, dir)
	v := New(dir, nil)
	apply := func(name string) {
		t.Helper()
		if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/"+name)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, staged string) {
		t.Helper()
		run("fsck", "--strict", "--no-dangling")
		if got := run("diff", "--cached", "--name-only"); got != staged {
			t.Errorf("%s: staged %q, want %q", step, got, staged)
		}
		// The ledger's newest line names the commit before it, so it
		// is taken in by the next: the notes are what must be clean.
		if got := run("status", "--porcelain", "--untracked-files=no", "--", "knowledge"); got != "" && got != "M  knowledge/projects/own.md\n" {
			t.Errorf("%s: status:\n%s", step, got)
		}
	}

	apply("a.md")
	apply("b.md") // from the cache: HEAD is the vault's commit
	check("two vault commits", "")

	// The owner commits in the folder the vault's cache holds.
	write("knowledge/projects/own.md", "mine\n")
	run("add", "knowledge/projects/own.md")
	run("commit", "-q", "-m", "owner")
	apply("c.md")
	if got := headFile(t, dir, "knowledge/projects/own.md"); got != "mine\n" {
		t.Fatalf("the vault's commit after the owner's dropped their file: %q", got)
	}
	check("after the owner's commit", "")

	// The owner edits their file to the same length and stages it: the
	// index keeps its size, not its content.
	write("knowledge/projects/own.md", "MINE\n")
	run("add", "knowledge/projects/own.md")
	apply("d.md")
	if got := run("show", ":knowledge/projects/own.md"); got != "MINE\n" {
		t.Fatalf("the owner's staged edit was lost from the index: %q", got)
	}
	if got := headFile(t, dir, "knowledge/projects/own.md"); got != "mine\n" {
		t.Errorf("the owner's staged edit went into the vault's commit: %q", got)
	}
	check("after the owner's staged edit", "knowledge/projects/own.md\n")

	// The owner commits it; the vault goes on.
	run("commit", "-q", "-m", "owner again")
	apply("e.md")
	check("after the owner's second commit", "")
	if got := run("ls-tree", "--name-only", "HEAD", "knowledge/projects/"); got != "knowledge/projects/a.md\nknowledge/projects/b.md\nknowledge/projects/c.md\nknowledge/projects/d.md\nknowledge/projects/e.md\nknowledge/projects/own.md\n" {
		t.Errorf("tree:\n%s", got)
	}
	log := run("log", "--format=%an %s")
	for _, want := range []string{"owner again", "o owner", "create knowledge/projects/a.md", "create knowledge/projects/e.md"} {
		if !strings.Contains(log, want) {
			t.Errorf("git log lacks %q:\n%s", want, log)
		}
	}
}

// TestCommitCacheIndexBytes: the index a vault commit writes from its
// cached copy is byte for byte the one it would write from the file, and
// git reads it as holding the committed notes.
func TestCommitCacheIndexBytes(t *testing.T) {
	dir := newRoot(t)
	run := gitRunner(t, dir)
	v := New(dir, nil)
	for i := range 3 {
		if _, err := v.Apply(t.Context(), projectProposal(t, fmt.Sprintf("knowledge/projects/n%d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	cached := v.git.index
	if cached == nil {
		t.Fatal("no index cached after a commit")
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cached.x.bytes(); string(got) != string(b) {
		t.Fatal("the cached index is not the file's bytes")
	}
	x, err := parseIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.entries) != len(cached.x.entries) {
		t.Fatalf("%d entries cached, %d on disk", len(cached.x.entries), len(x.entries))
	}
	run("update-index", "-q", "--refresh")
	if st := run("status", "--porcelain", "--untracked-files=no", "--", "knowledge"); st != "" {
		t.Errorf("git status:\n%s", st)
	}
	run("fsck", "--strict")
}

// TestCommitLeavesNoTempObjects: a commit that fails after storing its
// blobs (HEAD's commit cannot be read) names no object and leaves no
// temporary file: objects are named only when the commit is about to be
// made.
func TestCommitLeavesNoTempObjects(t *testing.T) {
	dir := newRoot(t)
	run := gitRunner(t, dir)
	head := strings.TrimSpace(run("rev-parse", "HEAD"))
	before := objectFiles(t, dir)
	// HEAD names a commit that does not exist.
	ref := strings.TrimSpace(strings.TrimPrefix(run("symbolic-ref", "HEAD"), "ref: "))
	bad := strings.Repeat("1", len(head))
	if err := os.WriteFile(filepath.Join(dir, ".git", filepath.FromSlash(ref)), []byte(bad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := filepath.Join(dir, "knowledge/projects/x.md")
	if err := os.WriteFile(write, []byte("a note of its own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Commit(t.Context(), dir, []string{"knowledge/projects/x.md"}, "x", AuthorOwner); err == nil {
		t.Fatal("commit on a missing HEAD commit succeeded")
	}
	if after := objectFiles(t, dir); after != before {
		t.Errorf("objects after a failed commit:\n%s\nbefore:\n%s", after, before)
	}
}

// objectFiles lists the files under .git/objects.
func objectFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fmt.Fprintln(&b, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCommitMovesRef: a commit moves HEAD's ref as git does, whether it is
// a loose file, only in packed-refs, or HEAD itself (detached); while a
// git process holds the ref's lock the commit fails, leaving the ref and
// the lock as they were.
func TestCommitMovesRef(t *testing.T) {
	tests := []struct {
		name  string
		setup func(run func(args ...string) string)
	}{
		{"loose", func(func(args ...string) string) {}},
		{"packed", func(run func(args ...string) string) { run("pack-refs", "--all", "--prune") }},
		{"detached", func(run func(args ...string) string) { run("checkout", "-q", "--detach") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			run := gitRunner(t, dir)
			tc.setup(run)
			v := New(dir, nil)
			before := run("rev-parse", "HEAD")
			if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/a.md")); err != nil {
				t.Fatal(err)
			}
			if got := run("rev-parse", "HEAD~1"); got != before {
				t.Errorf("HEAD~1 is %s, want %s", got, before)
			}
			if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/b.md")); err != nil {
				t.Fatal(err)
			}
			run("fsck", "--strict")
			if got := run("ls-tree", "--name-only", "HEAD", "knowledge/projects/"); got != "knowledge/projects/a.md\nknowledge/projects/b.md\n" {
				t.Errorf("tree: %q", got)
			}

			ref := "HEAD"
			if tc.name != "detached" {
				ref = strings.TrimSpace(run("symbolic-ref", "HEAD"))
			}
			lock := filepath.Join(dir, ".git", filepath.FromSlash(ref)+".lock")
			if err := os.WriteFile(lock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			head := run("rev-parse", "HEAD")
			_, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/c.md"))
			if err == nil {
				t.Fatal("a commit under a held ref lock succeeded")
			}
			if got := run("rev-parse", "HEAD"); got != head {
				t.Errorf("HEAD moved under a held lock: %s", got)
			}
			if _, err := os.Stat(lock); err != nil {
				t.Errorf("the other process's lock: %v", err)
			}
			os.Remove(lock)
			if _, err := v.CommitPending(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := headFile(t, dir, "knowledge/projects/c.md"); got == "" {
				t.Error("the write is not committed once the lock is gone")
			}
			run("fsck", "--strict")
		})
	}
}
