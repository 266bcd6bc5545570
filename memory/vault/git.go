package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/mnemo/mnemo/memory"
)

// ErrIndexLocked is wrapped by Commit's error when another git process holds
// .git/index.lock.
var ErrIndexLocked = errors.New("git index is locked")

// CommitError is a commit that failed; the files it was to hold are written
// and stay so, and the next commit that names them takes them in.
type CommitError struct {
	Dir string
	Err error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("memory root %s: the change is saved but not committed to version history: %v", e.Dir, e.Err)
}

func (e *CommitError) Unwrap() error { return e.Err }

const commitEmail = "hearth@localhost"

// Commit stages paths (slash-separated, relative to the memory root dir;
// deleted files are staged as deleted) and commits them, and only them,
// with message under author's name, returning the commit's hash. Like git,
// it holds .git/index.lock meanwhile: when another process holds it, or the
// repository cannot be read, it fails with a *CommitError that says so.
func Commit(ctx context.Context, dir string, paths []string, message, author string) (string, error) {
	fail := func(err error) (string, error) { return "", &CommitError{Dir: dir, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	lock := filepath.Join(dir, git.GitDirName, "index.lock")
	lf, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	switch {
	case errors.Is(err, fs.ErrExist):
		return fail(fmt.Errorf("%w: %s exists: another git process is running, or one crashed (remove the file if no git is running)", ErrIndexLocked, lock))
	case err != nil:
		return fail(fmt.Errorf("cannot lock the git index: %w", err))
	}
	lf.Close()
	defer os.Remove(lock)

	repo, err := memory.OpenRepository(dir)
	if err != nil {
		return fail(fmt.Errorf("open repository: %w", err))
	}
	head, err := repo.Head()
	if err != nil {
		return fail(fmt.Errorf("read HEAD: %w", err))
	}
	wt, err := repo.Worktree()
	if err != nil {
		return fail(fmt.Errorf("worktree: %w", err))
	}
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); errors.Is(err, fs.ErrNotExist) {
			if _, err := wt.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
				return fail(fmt.Errorf("stage removal of %s: %w", p, err))
			}
			continue
		}
		// SkipStatus: staging one file must not hash the whole worktree
		// (the journal is large and not committed here).
		if err := wt.AddWithOptions(&git.AddOptions{Path: p, SkipStatus: true}); err != nil {
			return fail(fmt.Errorf("stage %s: %w", p, err))
		}
	}
	now := time.Now()
	hash, err := wt.Commit(message, &git.CommitOptions{
		Author:    &object.Signature{Name: author, Email: commitEmail, When: now},
		Committer: &object.Signature{Name: "hearth", Email: commitEmail, When: now},
	})
	if errors.Is(err, git.ErrEmptyCommit) {
		return head.Hash().String(), nil // nothing changed: HEAD holds it
	}
	if err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return hash.String(), nil
}
