package vault

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-git/go-git/v5"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
)

// newRoot opens a memory root with its defaults and lays the vault out.
func newRoot(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(t.Context(), dir, data.Vault(), nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEnsureLayout(t *testing.T) {
	dir := t.TempDir()
	if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	created, err := Ensure(t.Context(), dir, data.Vault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{InvariantsFile, PolicyFile, "prompts/curator.system.md", "knowledge/README.md"} {
		if !slices.Contains(created, f) {
			t.Errorf("created %v, missing %s", created, f)
		}
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != filePerm {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	for _, d := range append(slices.Clone(layoutDirs), "knowledge", "summaries", "inbox") {
		st, err := os.Stat(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		if !st.IsDir() || st.Mode().Perm() != dirPerm {
			t.Errorf("%s: %v, want a 0700 directory", d, st.Mode())
		}
	}
	// The shipped policy is the default policy.
	b, err := os.ReadFile(filepath.Join(dir, PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultPolicy(); !policyEqual(pol, d) {
		t.Errorf("shipped policy %+v differs from DefaultPolicy %+v", pol, d)
	}
}

func TestEnsureNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "config"), 0o755)
	mine := []byte("# my own rules\n")
	os.WriteFile(filepath.Join(dir, InvariantsFile), mine, 0o644)
	os.WriteFile(filepath.Join(dir, PolicyFile), []byte("version: 1\n"), 0o644)
	defaults := fstest.MapFS{
		InvariantsFile:   {Data: []byte("default\n")},
		PolicyFile:       {Data: []byte("default\n")},
		"prompts/new.md": {Data: []byte("new\n")},
	}
	created, err := Ensure(context.Background(), dir, defaults, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"prompts/new.md"}; !slices.Equal(created, want) {
		t.Errorf("created %v, want %v", created, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, InvariantsFile)); string(b) != string(mine) {
		t.Errorf("invariants.md overwritten: %q", b)
	}
	if st, _ := os.Stat(filepath.Join(dir, "config")); st.Mode().Perm() != 0o755 {
		t.Errorf("existing config/ chmodded to %v", st.Mode().Perm())
	}
	again, err := Ensure(context.Background(), dir, defaults, nil)
	if err != nil || len(again) != 0 {
		t.Errorf("second Ensure created %v, %v", again, err)
	}
}

func TestCommitErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   string
		is     error
	}{
		{"held index.lock", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another git process", ErrIndexLocked},
		{"corrupt HEAD", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", nil},
		{"objects gone", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
		}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			tc.break_(t, dir)
			v := New(dir, nil)
			p := projectProposal(t, "knowledge/projects/mnemo.md")
			_, err := v.Apply(t.Context(), p)
			var ce *CommitError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *CommitError", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), "saved but not committed") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("unclear error: %v", err)
			}
			written, _ := os.ReadFile(filepath.Join(dir, p.Path))
			if !strings.Contains(string(written), claim) {
				t.Errorf("file not left written: %q", written)
			}
			entries, _, _ := ReadLedger(dir)
			if len(entries) != 1 || entries[0].Commit != "" || entries[0].CommitErr == "" {
				t.Errorf("ledger %+v, want one line with the commit error", entries)
			}
			if tc.is == ErrIndexLocked {
				// The owner's lock is theirs: left in place.
				if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err != nil {
					t.Errorf("index.lock removed: %v", err)
				}
				// Released, the next commit catches the write up.
				os.Remove(filepath.Join(dir, ".git", "index.lock"))
				if _, err := Commit(t.Context(), dir, append([]string{p.Path}, ledgerFiles(t, dir)...), "catch up", AuthorAgent); err != nil {
					t.Fatal(err)
				}
				if got := headFile(t, dir, p.Path); got != string(written) {
					t.Errorf("after catch-up HEAD has %q", got)
				}
			}
		})
	}
}

// headFile returns the content of p at HEAD.
func headFile(t *testing.T, dir, p string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File(p)
	if err != nil {
		return ""
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func headCommit(t *testing.T, dir string) (msg, author string) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c.Message, c.Author.Name
}

func TestOpenCommitsLayout(t *testing.T) {
	dir := t.TempDir()
	if _, err := memory.Open(t.Context(), dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), dir, data.Vault(), nil); err != nil {
		t.Fatal(err)
	}
	if headFile(t, dir, InvariantsFile) == "" || headFile(t, dir, PolicyFile) == "" {
		t.Error("defaults not committed")
	}
	if _, author := headCommit(t, dir); author != "job:layout" {
		t.Errorf("author %q", author)
	}
	entries, _, _ := ReadLedger(dir)
	if len(entries) == 0 || entries[0].Commit == "" {
		t.Errorf("ledger %+v", entries)
	}
	// A second Open creates and commits nothing.
	before, _ := headCommit(t, dir)
	if _, err := Open(t.Context(), dir, data.Vault(), nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := headCommit(t, dir); after != before {
		t.Error("second Open committed")
	}
	if e2, _, _ := ReadLedger(dir); len(e2) != len(entries) {
		t.Error("second Open ledgered")
	}
}

// TestCommitOnlyNamedPaths: the owner's unstaged edits and the journal
// stay out of a vault commit.
func TestCommitOnlyNamedPaths(t *testing.T) {
	dir := newRoot(t)
	os.WriteFile(filepath.Join(dir, "threads", "2026-01-30.jsonl"), []byte("{}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, AgentFile), []byte("the owner's edit\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "knowledge/projects/a.md"), []byte("a\n"), 0o600)
	if _, err := Commit(t.Context(), dir, []string{"knowledge/projects/a.md"}, "m", AuthorOwner); err != nil {
		t.Fatal(err)
	}
	if headFile(t, dir, "knowledge/projects/a.md") != "a\n" {
		t.Error("named file not committed")
	}
	if headFile(t, dir, "threads/2026-01-30.jsonl") != "" || headFile(t, dir, AgentFile) == "the owner's edit\n" {
		t.Error("a path not named was committed")
	}
	// Nothing changed: no new commit, HEAD returned.
	h1, _ := Commit(t.Context(), dir, []string{"knowledge/projects/a.md"}, "m", AuthorOwner)
	h2, err := Commit(t.Context(), dir, []string{"knowledge/projects/a.md"}, "m", AuthorOwner)
	if err != nil || h1 != h2 {
		t.Errorf("empty commit: %s %s %v", h1, h2, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("index.lock left behind: %v", err)
	}
}

// TestCommitAgreesWithGit: after Apply, the git CLI (when installed) sees
// a clean worktree for what was written, and an intact repository.
func TestCommitAgreesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git binary")
	}
	dir := newRoot(t)
	v := New(dir, nil)
	p := projectProposal(t, "knowledge/projects/mnemo.md")
	if _, err := v.Apply(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	b, _ := v.Read(p.Path)
	del := &Proposal{ID: NewProposalID(), Op: OpDelete, Path: p.Path, Base: Hash(b), Reason: "r", Author: AuthorOwner}
	if _, err := v.Apply(t.Context(), del); err != nil {
		t.Fatal(err)
	}
	if _, err := Commit(t.Context(), dir, ledgerFiles(t, dir), "ledger", AuthorOwner); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("fsck", "--strict")
	if st := run("status", "--porcelain", "--", "knowledge/projects", "audit"); st != "" {
		t.Errorf("git status after vault commits:\n%s", st)
	}
	if log := run("log", "--format=%an %s"); !strings.Contains(log, "curator vault: create knowledge/projects/mnemo.md") ||
		!strings.Contains(log, "owner vault: delete knowledge/projects/mnemo.md") {
		t.Errorf("git log:\n%s", log)
	}
}

// TestCommitBesideGitCLI: vault commits and an owner's git interleave. Git's
// cached trees in the index must not go stale (a later `git commit` would
// drop the vault's change), and what the owner staged stays staged and out
// of the vault's commit.
func TestCommitBesideGitCLI(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git binary")
	}
	dir := newRoot(t)
	home := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"-C", dir, "-c", "user.name=o", "-c", "user.email=o@x"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The owner commits with git: the index gains a cached-tree extension.
	os.WriteFile(filepath.Join(dir, "knowledge/projects/own.md"), []byte("mine\n"), 0o600)
	run("add", "knowledge")
	run("commit", "-q", "-m", "owner")
	// The owner stages an edit and leaves it staged.
	os.WriteFile(filepath.Join(dir, AgentFile), []byte("staged by the owner\n"), 0o600)
	run("add", AgentFile)

	v := New(dir, nil)
	p := projectProposal(t, "knowledge/projects/mnemo.md")
	if _, err := v.Apply(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if headFile(t, dir, AgentFile) == "staged by the owner\n" {
		t.Error("the owner's staged edit went into the vault's commit")
	}
	if st := run("diff", "--cached", "--name-only"); st != AgentFile+"\n" {
		t.Errorf("staged after the vault's commit: %q, want only %s", st, AgentFile)
	}
	// The owner commits again with git: the vault's note must survive.
	run("commit", "-q", "-m", "owner again")
	if got := run("show", "HEAD:"+p.Path); !strings.Contains(got, claim) {
		t.Errorf("the owner's next commit dropped the vault's note: %q", got)
	}
	if got := run("ls-tree", "-r", "--name-only", "HEAD", "knowledge/projects"); got != "knowledge/projects/mnemo.md\nknowledge/projects/own.md\n" {
		t.Errorf("tree: %q", got)
	}
	run("fsck", "--strict")
}
