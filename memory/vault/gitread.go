package vault

import (
	"errors"
	"io"
	"io/fs"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/mnemo/mnemo/memory"
)

// Maintain moves objects while others read: loose copies are removed once
// packed, and packs once merged into one. go-git lists the packs of a
// repository once, at the first object it does not find loose, and then
// looks in those packs first: a reader that listed them before Maintain
// wrote a pack misses an object whose loose copy went meanwhile, and one
// that listed a pack since merged fails to open it. The vault's readers
// open the repository through openRepository, which looks again, with the
// packs listed anew, for an object it did not find.

// OpenRepository opens the repository of the memory root dir for reading
// its history while the vault may pack it: an object a pack or a merge
// moved meanwhile is looked for again (memory/archive's export uses it).
func OpenRepository(dir string) (*git.Repository, error) { return openRepository(dir, nil) }

// openRepository opens the repository of the memory root dir as
// memory.OpenRepository does, its objects read through rescanStorage
// (beforeRead, for tests, is called before each object is read).
func openRepository(dir string, beforeRead func(plumbing.Hash)) (*git.Repository, error) {
	repo, err := memory.OpenRepository(dir)
	if err != nil {
		return nil, err
	}
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	return git.Open(&rescanStorage{Storage: st, beforeRead: beforeRead}, wt.Filesystem)
}

// rescanStorage is a repository's storage whose object reads, on a miss,
// list the packs again and retry, and read a packed object whole (go-git
// hands out a large one as a reference into its pack, read later: from a
// pack a merge may have removed by then).
type rescanStorage struct {
	*filesystem.Storage
	beforeRead func(plumbing.Hash)
}

func (s *rescanStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if s.beforeRead != nil {
		s.beforeRead(h)
	}
	obj, err := s.read(t, h)
	if isMissing(err) {
		s.Reindex() // the packs as they are now
		obj, err = s.read(t, h)
	}
	return obj, err
}

func (s *rescanStorage) HasEncodedObject(h plumbing.Hash) error {
	err := s.Storage.HasEncodedObject(h)
	if isMissing(err) {
		s.Reindex()
		err = s.Storage.HasEncodedObject(h)
	}
	return err
}

func (s *rescanStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, err := s.Storage.EncodedObjectSize(h)
	if isMissing(err) {
		s.Reindex()
		n, err = s.Storage.EncodedObjectSize(h)
	}
	return n, err
}

// HashesWithPrefix (an abbreviated hash's objects) lists the packs again
// when it finds none.
func (s *rescanStorage) HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error) {
	hs, err := s.Storage.HashesWithPrefix(prefix)
	if err == nil && len(hs) == 0 {
		s.Reindex()
		hs, err = s.Storage.HashesWithPrefix(prefix)
	}
	return hs, err
}

// read reads the object h, whole.
func (s *rescanStorage) read(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := s.Storage.EncodedObject(t, h)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(*packfile.FSObject); !ok {
		return obj, nil
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m := &plumbing.MemoryObject{}
	m.SetType(obj.Type())
	if _, err := io.Copy(m, r); err != nil {
		return nil, err
	}
	if m.Size() != obj.Size() || m.Hash() != h {
		return nil, plumbing.ErrObjectNotFound // a pack cut short: look again
	}
	return m, nil
}

// isMissing reports whether err says an object, or the pack go-git
// listed as holding it, is not there.
func isMissing(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound) ||
		errors.Is(err, fs.ErrNotExist)
}
