package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

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
// deleted files are staged as deleted) and commits them, and only them, on
// HEAD's tree, with message under author's name, returning the commit's
// hash (HEAD's when nothing changed). What else is staged stays staged. Like
// git, it holds .git/index.lock meanwhile: when another process holds it, or
// the repository cannot be read, it fails with a *CommitError that says so.
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
	changes, err := stage(repo, dir, paths)
	if err != nil {
		return fail(err)
	}
	parent, err := repo.CommitObject(head.Hash())
	if err != nil {
		return fail(fmt.Errorf("read HEAD commit: %w", err))
	}
	base, err := parent.Tree()
	if err != nil {
		return fail(fmt.Errorf("read HEAD tree: %w", err))
	}
	tree, _, err := writeTree(repo.Storer, base, changes)
	if err != nil {
		return fail(fmt.Errorf("write tree: %w", err))
	}
	if tree == base.Hash {
		return head.Hash().String(), nil // nothing changed: HEAD holds it
	}
	now := time.Now()
	c := &object.Commit{
		Author:       object.Signature{Name: author, Email: commitEmail, When: now},
		Committer:    object.Signature{Name: "hearth", Email: commitEmail, When: now},
		Message:      message,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{head.Hash()},
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	hash, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	// HEAD names a branch (refs/heads/…), or a commit when detached.
	if err := repo.Storer.CheckAndSetReference(plumbing.NewHashReference(head.Name(), hash), head); err != nil {
		return fail(fmt.Errorf("move %s: %w", head.Name(), err))
	}
	return hash.String(), nil
}

// change is a staged path: its new blob and mode, or its removal.
type change struct {
	hash plumbing.Hash
	mode filemode.FileMode
	del  bool
}

// writeTree stores the tree that is t (nil: empty) with changes applied
// (paths relative to t), reusing every subtree no change touches, and
// returns its hash, or empty when nothing is left in it. go-git's
// Worktree.Commit re-reads the index and rewrites every tree; this writes
// only the trees on the changed paths, and commits only those paths, not
// what the owner may have staged.
func writeTree(s storer.EncodedObjectStorer, t *object.Tree, changes map[string]change) (plumbing.Hash, bool, error) {
	entries := make(map[string]object.TreeEntry)
	if t != nil {
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	sub := make(map[string]map[string]change)
	for p, c := range changes {
		first, rest, nested := strings.Cut(p, "/")
		if !nested {
			if c.del {
				delete(entries, first)
			} else {
				entries[first] = object.TreeEntry{Name: first, Mode: c.mode, Hash: c.hash}
			}
			continue
		}
		if sub[first] == nil {
			sub[first] = make(map[string]change)
		}
		sub[first][rest] = c
	}
	for name, ch := range sub {
		var child *object.Tree
		if e, ok := entries[name]; ok && e.Mode == filemode.Dir {
			var err error
			if child, err = object.GetTree(s, e.Hash); err != nil {
				return plumbing.ZeroHash, false, err
			}
		}
		h, empty, err := writeTree(s, child, ch)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			delete(entries, name)
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	// git's order: by name, a directory compared as if it ended in '/'.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(list, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: list}).Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err := s.SetEncodedObject(obj)
	return h, false, err
}

// stage updates the index for paths in one pass: each file's blob is
// stored and its entry set; a missing file's entry is removed. go-git's
// Worktree.Add reads and rewrites the whole index per path, which costs
// tens of milliseconds per path in a vault of thousands of notes.
func stage(repo *git.Repository, dir string, paths []string) (map[string]change, error) {
	idx, err := repo.Storer.Index()
	if err != nil {
		return nil, fmt.Errorf("read the git index: %w", err)
	}
	changes := make(map[string]change, len(paths))
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := idx.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
				return nil, fmt.Errorf("stage removal of %s: %w", p, err)
			}
			changes[p] = change{del: true}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("stage %s: not a regular file", p)
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		obj := repo.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		obj.SetSize(int64(len(b)))
		w, err := obj.Writer()
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		if _, err := w.Write(b); err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		h, err := repo.Storer.SetEncodedObject(obj)
		if err != nil {
			return nil, fmt.Errorf("stage %s: store: %w", p, err)
		}
		e, err := idx.Entry(p)
		if err != nil {
			e = idx.Add(p)
		}
		mode, err := filemode.NewFromOSFileMode(fi.Mode())
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
		// Only content, mode, size and time: git refreshes the rest of
		// the stat information it keeps when it next looks.
		*e = index.Entry{Name: p, Hash: h, Mode: mode, Size: uint32(len(b)), ModifiedAt: fi.ModTime()}
		changes[p] = change{hash: h, mode: mode}
	}
	// A cached-tree extension would now describe old trees: drop it, git
	// rebuilds it (it is only a cache). go-git writes no extensions today;
	// this keeps a stale one out should it start to.
	idx.Cache, idx.EndOfIndexEntry = nil, nil
	if err := repo.Storer.SetIndex(idx); err != nil {
		return nil, fmt.Errorf("write the git index: %w", err)
	}
	return changes, nil
}

// Probe reports whether a commit in the memory root dir can take git's
// index now: an error wrapping ErrIndexLocked when another process holds
// .git/index.lock. It writes nothing.
func Probe(dir string) error {
	lock := filepath.Join(dir, git.GitDirName, "index.lock")
	if _, err := os.Lstat(lock); err == nil {
		return fmt.Errorf("%w: %s exists", ErrIndexLocked, lock)
	}
	return nil
}
