package vault

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// gitCache is what a vault's commits keep of git between them, so that a
// commit in a vault of 10,000 notes does not read and decode again the
// folder's tree and the index it wrote a moment before. Nothing in it can
// go stale unseen: trees are kept by their hash (a tree's content is its
// name), HEAD is read on every commit, and the index is taken from memory
// only when the file on disk still ends in the checksum of the bytes the
// vault wrote (any other writer, the owner's `git add` included, changes
// it). A nil *gitCache keeps nothing. Its user serializes the commits.
type gitCache struct {
	trees map[plumbing.Hash]*cachedTree
	tick  uint64 // a clock for the least recently used tree
	size  int    // entries held over all trees

	// The last commit written and its tree, so that HEAD, when it is
	// still that commit, needs no commit object read.
	lastCommit, lastTree plumbing.Hash

	index      *cachedIndex
	zw, zstore *zlib.Writer // the loose objects' compressors
}

// Bounds of the tree cache: a few folders of 10,000 notes at most.
const (
	treeCacheEntries = 64
	treeCacheSize    = 100_000
)

type cachedTree struct {
	entries []object.TreeEntry
	used    uint64
}

// cachedIndex is the index as the vault last wrote it.
type cachedIndex struct {
	x    *rawIndex
	size int64
	sum  [sha1.Size]byte // the file's trailing checksum
}

// treeEntries returns the entries of the tree h, in git's order, from the
// cache or read through s. The caller must not modify them.
func (c *gitCache) treeEntries(s storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	if c != nil {
		if t, ok := c.trees[h]; ok {
			c.tick++
			t.used = c.tick
			return t.entries, nil
		}
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, err
	}
	c.keepTree(h, t.Entries)
	return t.Entries, nil
}

// keepTree caches the entries of the tree h, dropping the least recently
// used trees beyond the cache's bounds.
func (c *gitCache) keepTree(h plumbing.Hash, entries []object.TreeEntry) {
	if c == nil || len(entries) > treeCacheSize {
		return
	}
	if c.trees == nil {
		c.trees = make(map[plumbing.Hash]*cachedTree)
	}
	if _, ok := c.trees[h]; ok {
		return
	}
	c.tick++
	c.trees[h] = &cachedTree{entries: entries, used: c.tick}
	c.size += len(entries)
	for len(c.trees) > treeCacheEntries || c.size > treeCacheSize {
		var oldest plumbing.Hash
		var at uint64
		for k, t := range c.trees {
			if k != h && (at == 0 || t.used < at) {
				oldest, at = k, t.used
			}
		}
		if at == 0 {
			return
		}
		c.size -= len(c.trees[oldest].entries)
		delete(c.trees, oldest)
	}
}

// headTree returns the tree of the commit head, read through s unless it
// is the commit c wrote last.
func (c *gitCache) headTree(s storer.EncodedObjectStorer, head plumbing.Hash) (plumbing.Hash, error) {
	if c != nil && !c.lastCommit.IsZero() && head == c.lastCommit {
		return c.lastTree, nil
	}
	parent, err := object.GetCommit(s, head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return parent.TreeHash, nil
}

// committed records the commit just written and its tree.
func (c *gitCache) committed(commit, tree plumbing.Hash) {
	if c != nil {
		c.lastCommit, c.lastTree = commit, tree
	}
}

// takeIndex returns the index of the repository at gitDir: the one the
// vault wrote last when the file still holds it (same size, same
// checksum), else read from disk. The cached copy is handed over, not
// shared: a commit that fails after changing it leaves nothing cached.
func (c *gitCache) takeIndex(gitDir string) (*rawIndex, error) {
	f, err := os.Open(filepath.Join(gitDir, "index"))
	if errors.Is(err, fs.ErrNotExist) {
		return &rawIndex{version: 2}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cached *cachedIndex
	if c != nil {
		cached, c.index = c.index, nil
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if cached != nil && st.Size() == cached.size {
		var sum [sha1.Size]byte
		if _, err := f.ReadAt(sum[:], cached.size-sha1.Size); err == nil && sum == cached.sum {
			return cached.x, nil
		}
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return parseIndex(b)
}

// keepIndex caches x, just written to disk as b.
func (c *gitCache) keepIndex(x *rawIndex, b []byte) {
	if c == nil {
		return
	}
	x.rebase(b)
	ci := &cachedIndex{x: x, size: int64(len(b))}
	copy(ci.sum[:], b[len(b)-sha1.Size:])
	c.index = ci
}

// encodeTree is a tree object's content: per entry its mode in octal, a
// space, its name, a NUL and its hash, as git and go-git encode it.
func encodeTree(entries []object.TreeEntry) []byte {
	n := 0
	for _, e := range entries {
		n += 7 + 1 + len(e.Name) + 1 + len(e.Hash)
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.Hash[:]...)
	}
	return b
}

// encodedObject is an object's content encoded by go-git (a commit).
func encodedObject(obj *plumbing.MemoryObject) ([]byte, error) {
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
