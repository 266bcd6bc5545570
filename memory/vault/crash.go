package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
)

// indexLockMark is what hearth writes in the .git/index.lock it takes. git
// writes the new index there (it begins "DIRC"), never this, so a lock that
// holds the mark is hearth's.
const indexLockMark = "mnemo: hearth holds the git index\n"

// takeIndexLock creates lock, only if it does not exist (an error wrapping
// fs.ErrExist), already holding indexLockMark: the mark goes into a
// temporary file first, which is then linked to lock. A kill at any instant
// leaves either no lock or a marked one, never an empty lock that could be
// a git's.
func takeIndexLock(lock string) error {
	tmp, err := os.CreateTemp(filepath.Dir(lock), "mnemo-index-lock*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(indexLockMark)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), lock)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// A file system without hard links: create the lock, then mark it.
	lf, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, werr = lf.WriteString(indexLockMark)
	return errors.Join(werr, lf.Close())
}

// clearStaleIndexLock removes the .git/index.lock of the memory root dir
// when a hearth left it (it holds indexLockMark): one killed mid-commit. It
// is for Open, whose caller holds the root's lock (memory.LockRoot), so no
// other hearth can be committing. A lock without the mark is a git's (or
// the owner's) and stays. It also removes the temporary files a kill left
// in takeIndexLock.
func clearStaleIndexLock(dir string, log *slog.Logger) error {
	gitDir := filepath.Join(dir, git.GitDirName)
	if tmps, _ := filepath.Glob(filepath.Join(gitDir, "mnemo-index-lock*")); len(tmps) > 0 {
		for _, tmp := range tmps {
			os.Remove(tmp)
		}
	}
	lock := filepath.Join(gitDir, "index.lock")
	b, err := os.ReadFile(lock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("vault %s: read the git index lock: %w", dir, err)
	case string(b) != indexLockMark:
		return nil
	}
	// hearth moves a ref (moveRef) only while it holds the index: a ref
	// lock left with its index lock is its own too.
	refLocks, _ := filepath.Glob(filepath.Join(gitDir, "refs", "heads", "*.lock"))
	for _, l := range append(refLocks, filepath.Join(gitDir, "HEAD.lock")) {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("vault %s: remove the ref lock a stopped hearth left: %w", dir, err)
		}
	}
	if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("vault %s: remove the git index lock a stopped hearth left: %w", dir, err)
	}
	if log != nil {
		log.Warn("vault: removed the git index lock a stopped hearth left (killed mid-commit)", "lock", lock)
	}
	return nil
}

// removeTemps removes the temporary files writeAtomic left beside the
// files paths name (slash-separated, relative to the root dir) when a kill
// cut it short: dot files the owner's editor and git status would show.
func removeTemps(dir string, paths []string) {
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		prefix := "." + filepath.Base(full) + ".tmp"
		ents, err := os.ReadDir(filepath.Dir(full))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
				os.Remove(filepath.Join(filepath.Dir(full), e.Name()))
			}
		}
	}
}
