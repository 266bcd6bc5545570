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
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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
	if err := stage(repo, dir, paths); err != nil {
		return fail(err)
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

// stage updates the index for paths in one pass: each file's blob is
// stored and its entry set; a missing file's entry is removed. go-git's
// Worktree.Add reads and rewrites the whole index per path, which costs
// tens of milliseconds per path in a vault of thousands of notes.
func stage(repo *git.Repository, dir string, paths []string) error {
	idx, err := repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("read the git index: %w", err)
	}
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := idx.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
				return fmt.Errorf("stage removal of %s: %w", p, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("stage %s: not a regular file", p)
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		obj := repo.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		obj.SetSize(int64(len(b)))
		w, err := obj.Writer()
		if err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		h, err := repo.Storer.SetEncodedObject(obj)
		if err != nil {
			return fmt.Errorf("stage %s: store: %w", p, err)
		}
		e, err := idx.Entry(p)
		if err != nil {
			e = idx.Add(p)
		}
		mode, err := filemode.NewFromOSFileMode(fi.Mode())
		if err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		// Only content, mode, size and time: git refreshes the rest of
		// the stat information it keeps when it next looks.
		*e = index.Entry{Name: p, Hash: h, Mode: mode, Size: uint32(len(b)), ModifiedAt: fi.ModTime()}
	}
	if err := repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("write the git index: %w", err)
	}
	return nil
}
