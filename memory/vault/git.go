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
	return (*gitCache)(nil).commit(ctx, dir, paths, message, author)
}

// commit is Commit, keeping in c what the next commit can use of this
// one's reads (c nil: nothing).
func (c *gitCache) commit(ctx context.Context, dir string, paths []string, message, author string) (string, error) {
	fail := func(err error) (string, error) { return "", &CommitError{Dir: dir, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	lock := filepath.Join(dir, git.GitDirName, "index.lock")
	switch err := takeIndexLock(lock); {
	case errors.Is(err, fs.ErrExist):
		return fail(fmt.Errorf("%w: %s exists: another git process is running, or one crashed (remove the file if no git is running)", ErrIndexLocked, lock))
	case err != nil:
		return fail(fmt.Errorf("cannot lock the git index: %w", err))
	}
	defer os.Remove(lock)

	repo, err := memory.OpenRepository(dir)
	if err != nil {
		return fail(fmt.Errorf("open repository: %w", err))
	}
	head, err := repo.Head()
	if err != nil {
		return fail(fmt.Errorf("read HEAD: %w", err))
	}
	// With .git a directory (a memory root's), objects are written loose
	// and the index as raw entries (gitindex.go); a gitdir link, or an
	// index version not handled there, goes through go-git.
	put := storerPut(repo.Storer)
	var lw *looseWriter
	var changes map[string]change
	var writeIndex func() error
	gitDir := filepath.Join(dir, git.GitDirName)
	if st, err := os.Lstat(gitDir); err == nil && st.IsDir() {
		lw = &looseWriter{gitDir: gitDir}
		if c != nil {
			lw.zw, lw.zstore = c.zw, c.zstore
			defer func() { c.zw, c.zstore = lw.zw, lw.zstore }()
		}
		defer lw.abort() // the objects of a commit that fails
		put = lw.put
		changes, writeIndex, err = c.stageRaw(gitDir, dir, paths, put)
		if errors.Is(err, errIndexVersion) {
			// go-git writes the index at once: the blobs it names
			// are named (and durable) first.
			put = func(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
				h, err := lw.put(typ, data)
				if err == nil {
					err = lw.flush()
				}
				return h, err
			}
			changes, err = nil, nil
		} else if err != nil {
			return fail(err)
		}
	}
	if changes == nil {
		if changes, err = stage(repo, dir, paths, put); err != nil {
			return fail(err)
		}
	}
	// The order that keeps git whole across a crash: the objects durable
	// and named, then the index naming the blobs, then the ref naming
	// the commit.
	store := func() error {
		if lw != nil {
			if err := lw.flush(); err != nil {
				return fmt.Errorf("store objects: %w", err)
			}
		}
		if writeIndex != nil {
			if err := writeIndex(); err != nil {
				return fmt.Errorf("write the git index: %w", err)
			}
		}
		return nil
	}
	baseHash, err := c.headTree(repo.Storer, head.Hash())
	if err != nil {
		return fail(fmt.Errorf("read HEAD commit: %w", err))
	}
	base, err := c.treeEntries(repo.Storer, baseHash)
	if err != nil {
		return fail(fmt.Errorf("read HEAD tree: %w", err))
	}
	tree, _, err := c.writeTree(repo.Storer, put, base, changes)
	if err != nil {
		return fail(fmt.Errorf("write tree: %w", err))
	}
	if tree == baseHash {
		if err := store(); err != nil {
			return fail(err)
		}
		return head.Hash().String(), nil // nothing changed: HEAD holds it
	}
	now := time.Now()
	cm := &object.Commit{
		Author:       object.Signature{Name: author, Email: commitEmail, When: now},
		Committer:    object.Signature{Name: "hearth", Email: commitEmail, When: now},
		Message:      message,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{head.Hash()},
	}
	obj := &plumbing.MemoryObject{}
	if err := cm.Encode(obj); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	data, err := encodedObject(obj)
	if err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	hash, err := put(plumbing.CommitObject, data)
	if err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	if err := store(); err != nil {
		return fail(err)
	}
	// HEAD names a branch (refs/heads/…), or a commit when detached.
	moved := false
	if lw != nil {
		if moved, err = moveRef(gitDir, head.Name(), head.Hash(), hash); err != nil {
			return fail(fmt.Errorf("move %s: %w", head.Name(), err))
		}
	}
	if !moved {
		if err := repo.Storer.CheckAndSetReference(plumbing.NewHashReference(head.Name(), hash), head); err != nil {
			return fail(fmt.Errorf("move %s: %w", head.Name(), err))
		}
	}
	c.committed(hash, tree)
	return hash.String(), nil
}

// moveRef moves the loose ref name of the repository at gitDir from old
// to h as git does: under name.lock (created exclusively, so that a git
// process at work on the ref makes it fail), the new value written and
// fsync'd, renamed over the ref, and the folder fsync'd: a crash leaves
// the old value or the new, never a torn file. It reports false, moving
// nothing, when the ref is not a loose file (only in packed-refs), for
// go-git to move.
func moveRef(gitDir string, name plumbing.ReferenceName, old, h plumbing.Hash) (bool, error) {
	if !strings.HasPrefix(name.String(), "refs/") && name != plumbing.HEAD {
		return false, fmt.Errorf("not a ref: %s", name)
	}
	path := filepath.Join(gitDir, filepath.FromSlash(name.String()))
	if !filepath.IsLocal(name.String()) {
		return false, fmt.Errorf("not a ref: %s", name)
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("%s exists: another git process is moving it, or one crashed", lock)
	}
	if err != nil {
		return false, err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(lock)
		}
	}()
	cur, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // packed: go-git's
	}
	if err != nil {
		return false, err
	}
	if got := strings.TrimSpace(string(cur)); got != old.String() {
		return false, fmt.Errorf("moved meanwhile to %.40s", got)
	}
	if _, err := f.WriteString(h.String() + "\n"); err != nil {
		return false, err
	}
	if err := f.Sync(); err != nil {
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	if err := os.Rename(lock, path); err != nil {
		return false, err
	}
	done = true
	return true, syncDir(filepath.Dir(path))
}

// change is a staged path: its new blob and mode, or its removal.
type change struct {
	hash plumbing.Hash
	mode filemode.FileMode
	del  bool
}

// writeTree stores the tree whose entries are base (nil: empty) with changes applied
// (paths relative to t), reusing every subtree no change touches, and
// returns its hash, or empty when nothing is left in it. go-git's
// Worktree.Commit re-reads the index and rewrites every tree; this writes
// only the trees on the changed paths, and commits only those paths, not
// what the owner may have staged.
func (c *gitCache) writeTree(s storer.EncodedObjectStorer, put putFunc, base []object.TreeEntry, changes map[string]change) (plumbing.Hash, bool, error) {
	// base is in git's order, as the tree holds it.
	lookup := func(name string) (object.TreeEntry, bool) {
		for _, e := range base {
			if e.Name == name {
				return e, true
			}
		}
		return object.TreeEntry{}, false
	}
	set := make(map[string]*object.TreeEntry) // the entries changed here; nil: removed
	sub := make(map[string]map[string]change)
	for p, c := range changes {
		first, rest, nested := strings.Cut(p, "/")
		if !nested {
			if c.del {
				set[first] = nil
			} else {
				set[first] = &object.TreeEntry{Name: first, Mode: c.mode, Hash: c.hash}
			}
			continue
		}
		if sub[first] == nil {
			sub[first] = make(map[string]change)
		}
		sub[first][rest] = c
	}
	for name, ch := range sub {
		var child []object.TreeEntry
		if e, ok := lookup(name); ok && e.Mode == filemode.Dir {
			var err error
			if child, err = c.treeEntries(s, e.Hash); err != nil {
				return plumbing.ZeroHash, false, err
			}
		}
		h, empty, err := c.writeTree(s, put, child, ch)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			set[name] = nil
		} else {
			set[name] = &object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	// git's order: by name, a directory compared as if it ended in '/'.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	cmpEntries := func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) }
	// The entries no change touches keep their order; the changed ones
	// are merged in, so a folder of 10,000 notes is not sorted again.
	kept := make([]object.TreeEntry, 0, len(base))
	for _, e := range base {
		if _, changed := set[e.Name]; !changed {
			kept = append(kept, e)
		}
	}
	var added []object.TreeEntry
	for _, e := range set {
		if e != nil {
			added = append(added, *e)
		}
	}
	slices.SortFunc(added, cmpEntries)
	list := make([]object.TreeEntry, 0, len(kept)+len(added))
	for i, j := 0, 0; i < len(kept) || j < len(added); {
		if j == len(added) || (i < len(kept) && cmpEntries(kept[i], added[j]) < 0) {
			list = append(list, kept[i])
			i++
		} else {
			list = append(list, added[j])
			j++
		}
	}
	if len(list) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	h, err := put(plumbing.TreeObject, encodeTree(list))
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	c.keepTree(h, list)
	return h, false, nil
}

// putFunc stores an object's content and returns its hash.
type putFunc func(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error)

// storerPut stores objects through go-git's storer.
func storerPut(s storer.EncodedObjectStorer) putFunc {
	return func(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
		obj := s.NewEncodedObject()
		obj.SetType(typ)
		obj.SetSize(int64(len(data)))
		w, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write(data); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		return s.SetEncodedObject(obj)
	}
}

// stageRaw is stage over the raw index of the repository at gitDir: each
// file's blob is stored through put and its entry set; a missing file's
// entries are removed. Only the changed entries are built; the others are
// copied as they were read. The index is written when the returned
// function is called, once the blobs it names are stored.
func (c *gitCache) stageRaw(gitDir, dir string, paths []string, put putFunc) (map[string]change, func() error, error) {
	idx, err := c.takeIndex(gitDir)
	if err != nil {
		if errors.Is(err, errIndexVersion) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("read the git index: %w", err)
	}
	changes := make(map[string]change, len(paths))
	entries := make(map[string]*rawEntry, len(paths))
	for _, p := range paths {
		fi, b, err := readStaged(dir, p)
		if errors.Is(err, fs.ErrNotExist) {
			entries[p] = nil
			changes[p] = change{del: true}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		mode, err := filemode.NewFromOSFileMode(fi.Mode())
		if err != nil {
			return nil, nil, fmt.Errorf("stage %s: %w", p, err)
		}
		h, err := put(plumbing.BlobObject, b)
		if err != nil {
			return nil, nil, fmt.Errorf("stage %s: store: %w", p, err)
		}
		e := newEntry(p, h, mode, int64(len(b)), fi.ModTime())
		entries[p] = &e
		changes[p] = change{hash: h, mode: mode}
	}
	idx.update(entries)
	write := func() error {
		b, err := writeIndexFile(gitDir, idx, osSync{})
		if err != nil {
			return err
		}
		c.keepIndex(idx, b)
		return nil
	}
	return changes, write, nil
}

// readStaged reads the regular file p of dir; fs.ErrNotExist when it is
// gone.
func readStaged(dir, p string) (fs.FileInfo, []byte, error) {
	full := filepath.Join(dir, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("stage %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("stage %s: not a regular file", p)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, nil, fmt.Errorf("stage %s: %w", p, err)
	}
	return fi, b, nil
}

// stage updates the index for paths in one pass: each file's blob is
// stored and its entry set; a missing file's entry is removed. go-git's
// Worktree.Add reads and rewrites the whole index per path, which costs
// tens of milliseconds per path in a vault of thousands of notes.
func stage(repo *git.Repository, dir string, paths []string, put putFunc) (map[string]change, error) {
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
		h, err := put(plumbing.BlobObject, b)
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
