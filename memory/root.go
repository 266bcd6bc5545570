// Package memory owns the memory root: the directory, kept under git, that
// holds everything mnemo remembers (the journal under threads/, the
// continuity anchor, knowledge notes, summaries) and a derived, git-ignored
// index/.
package memory

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	threadsDir = "threads"
	indexDir   = "index"
	gitignore  = ".gitignore"

	commitName    = "hearth"
	commitEmail   = "hearth@localhost"
	commitMessage = "memory: initialise root"
)

// Root is an open memory root.
type Root struct {
	dir string
}

// Open opens the memory root at dir, creating it if needed.
//
// It copies every file of defaults that is missing from dir (an existing file
// is never overwritten), creates threads/ and a .gitignore that ignores
// index/ and the lock file (see LockRoot), and makes sure dir is a git repository with at least one commit.
// defaults may be nil. When version history cannot be established, Open
// returns an error that says so, and the caller must not run without it.
//
// What Open creates is private to the owner whatever the umask: directories
// 0700, files 0600, git objects 0400. It changes the mode of nothing that
// exists; when dir itself lets others in, it logs one warning with the fix.
func Open(ctx context.Context, dir string, defaults fs.FS, log *slog.Logger) (*Root, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dir == "" {
		return nil, errors.New("memory root: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	warnIfShared(dir, log)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	defer root.Close()

	if defaults != nil {
		if _, err := CopyDefaults(ctx, root, defaults, log); err != nil {
			return nil, fmt.Errorf("memory root %s: copy defaults: %w", dir, err)
		}
	}
	if err := root.MkdirAll(threadsDir, dirPerm); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	if err := ensureGitignore(root, log); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	if err := ensureHistory(dir, log); err != nil {
		return nil, fmt.Errorf("memory root %s: cannot establish version history: %w", dir, err)
	}
	log.Debug("memory root open", "dir", dir)
	return &Root{dir: dir}, nil
}

// warnIfShared warns when the root itself lets its group or others in:
// everything hearth creates inside is private to the owner (directories
// 0700, files 0600), but files the owner put there, or that an older hearth
// created, may not be, and the root's mode is the owner's to change.
func warnIfShared(dir string, log *slog.Logger) {
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return
	}
	log.Warn("memory root is open to other users: it holds your conversations",
		"dir", dir, "mode", fmt.Sprintf("%#o", st.Mode().Perm()), "fix", "chmod 700 "+shellQuote(dir))
}

// shellQuote quotes path for a shell when it needs it, so that the fix a
// warning gives can be pasted as it is.
func shellQuote(path string) string {
	plain := func(r rune) bool {
		return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r))
	}
	if path != "" && !strings.ContainsFunc(path, func(r rune) bool { return !plain(r) }) {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}

// Dir returns the absolute path of the root.
func (r *Root) Dir() string { return r.dir }

// IndexDir returns index/, which holds what derives from the memory (the
// recall index, what the journal has reported): git ignores it, and losing
// it loses nothing that cannot be rebuilt.
func (r *Root) IndexDir() string { return filepath.Join(r.dir, indexDir) }

// ThreadsDir returns the directory that holds the conversation journal.
func (r *Root) ThreadsDir() string { return filepath.Join(r.dir, threadsDir) }

// ReadFile reads the file name, a slash-separated path relative to the root
// such as "continuity.json". Paths that would leave the root, lexically or
// through a symbolic link, are rejected with an error wrapping fs.ErrInvalid
// or the error of the underlying os.Root. A missing file gives an error
// wrapping fs.ErrNotExist.
func (r *Root) ReadFile(name string) ([]byte, error) {
	local := filepath.FromSlash(name)
	if !filepath.IsLocal(local) {
		return nil, fmt.Errorf("memory root %s: %w", r.dir, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid})
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", r.dir, err)
	}
	defer root.Close()
	b, err := root.ReadFile(local)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", r.dir, err)
	}
	return b, nil
}

// DefaultDir returns the default memory root: $XDG_DATA_HOME/mnemo, or
// ~/.local/share/mnemo when XDG_DATA_HOME is unset or not absolute.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mnemo"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("memory root: no default directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "mnemo"), nil
}

// CopyDefaults copies into root every regular file of defaults that root
// lacks, creating directories 0700 and files 0600, each fsync'd. It never
// overwrites: what exists is the owner's. It returns the files it created,
// slash-separated and relative to root.
func CopyDefaults(ctx context.Context, root *os.Root, defaults fs.FS, log *slog.Logger) ([]string, error) {
	var created []string
	err := fs.WalkDir(defaults, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		local := filepath.FromSlash(p)
		if d.IsDir() {
			return root.MkdirAll(local, dirPerm)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := defaults.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		ok, err := CreateNew(root, local, in)
		if err != nil || !ok {
			return err
		}
		created = append(created, p)
		log.Info("copied default", "file", p)
		return nil
	})
	return created, err
}

// CreateNew creates name (0600) in root with the contents of r (nil:
// empty), fsync'd, unless something exists there, in which case it
// reports false. A partly written file is removed, so that a later call
// creates it again.
func CreateNew(root *os.Root, name string, r io.Reader) (created bool, err error) {
	if _, err := root.Lstat(name); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(name)
		}
	}()
	if r != nil {
		if _, err := io.Copy(f, r); err != nil {
			return false, err
		}
	}
	if err := f.Sync(); err != nil {
		return false, err
	}
	return true, f.Close()
}

// ensureGitignore makes sure .gitignore ignores index/ and the lock file. An
// existing file is kept and only appended to: a missing rule is added after
// the owner's lines. The change is not committed here; a new root's first
// commit takes it in, and in an existing root it waits for the next commit.
func ensureGitignore(root *os.Root, log *slog.Logger) error {
	// Each rule, then the spellings that already say the same thing. The
	// lock file records a running process and is no part of the memory.
	rules := [][]string{
		{indexDir + "/", indexDir, "/" + indexDir + "/", "/" + indexDir},
		{lockFile, "/" + lockFile},
	}
	b, err := root.ReadFile(gitignore)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		var all []byte
		for _, r := range rules {
			all = append(all, r[0]+"\n"...)
		}
		return writeNew(root, gitignore, all)
	case err != nil:
		return err
	}
	have := make(map[string]bool)
	for line := range bytes.Lines(b) {
		have[string(bytes.TrimSpace(line))] = true
	}
	var add []byte
	var added []string
	for _, r := range rules {
		if slices.ContainsFunc(r, func(s string) bool { return have[s] }) {
			continue
		}
		add = append(add, r[0]+"\n"...)
		added = append(added, r[0])
	}
	if len(add) == 0 {
		return nil
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		add = append([]byte{'\n'}, add...)
	}
	f, err := root.OpenFile(gitignore, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(add); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	log.Info("memory root: added rules to .gitignore", "rules", added)
	return nil
}

func writeNew(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ensureHistory makes sure dir is a git repository whose HEAD points at a
// readable commit, creating the repository and its first commit if needed.
func ensureHistory(dir string, log *slog.Logger) error {
	repo, err := openRepo(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		// Also reported when .git is a regular file that is not a valid
		// gitdir link, or a directory without a HEAD: never init over
		// one that holds anything, but a .git an init killed early left
		// (no HEAD, no object, no ref) is made again.
		dot := filepath.Join(dir, git.GitDirName)
		if _, serr := os.Lstat(dot); !errors.Is(serr, fs.ErrNotExist) {
			if !unfinishedInit(dot) {
				return fmt.Errorf("%s exists but is not a git repository (it has no HEAD; it holds objects or refs, so it is left as it is): %w", git.GitDirName, err)
			}
			if err := os.RemoveAll(dot); err != nil {
				return fmt.Errorf("remove the unfinished %s: %w", git.GitDirName, err)
			}
			log.Warn("memory root: removed a .git with no HEAD, object or ref (an init that did not finish)", "dir", dir)
		}
		repo, err = initRepo(dir)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		log.Info("memory root: initialised git repository", "dir", dir)
	} else if err != nil {
		return fmt.Errorf("open: %w", err)
	}

	head, err := repo.Head()
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if err := repairIndex(repo, dir, plumbing.ZeroHash, log); err != nil {
			return err
		}
		return initialCommit(repo, log)
	case err != nil:
		return fmt.Errorf("read HEAD: %w", err)
	}
	if _, err := repo.CommitObject(head.Hash()); err != nil {
		return fmt.Errorf("read HEAD commit %s: %w", head.Hash(), err)
	}
	return repairIndex(repo, dir, head.Hash(), log)
}

// unfinishedInit reports whether the repository folder dot holds nothing
// a user could lose: no HEAD, no packed-refs, and no file under objects/
// or refs/ (what go-git's Init creates before it writes HEAD).
func unfinishedInit(dot string) bool {
	st, err := os.Lstat(dot)
	if err != nil || !st.IsDir() {
		return false
	}
	for _, name := range []string{"HEAD", "packed-refs"} {
		if _, err := os.Lstat(filepath.Join(dot, name)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	for _, sub := range []string{"objects", "refs"} {
		found := false
		err := filepath.WalkDir(filepath.Join(dot, sub), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		if found || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
			return false
		}
	}
	return true
}

// checkIndex reports whether the git index at path is whole: a missing
// one is (git reads it as empty); one that is not an index, or whose
// trailing SHA-1 does not match its bytes (torn by a crash), is not. It is
// a cheap check for the start-up path: decoding every entry is not needed
// to see a torn file.
func checkIndex(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(b) < 12+sha1.Size || string(b[:4]) != "DIRC" {
		return errors.New("not a git index")
	}
	if sum := sha1.Sum(b[:len(b)-sha1.Size]); !bytes.Equal(sum[:], b[len(b)-sha1.Size:]) {
		return errors.New("git index checksum mismatch")
	}
	return nil
}

// indexFromCommit writes the index of the commit head's tree, each entry
// its blob and mode (git refreshes the stat data when it next looks), as
// git reset --mixed does. go-git's Reset is not used: it also rewrites the
// branch ref, in place.
func indexFromCommit(repo *git.Repository, head plumbing.Hash) error {
	c, err := repo.CommitObject(head)
	if err != nil {
		return err
	}
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	idx := &index.Index{Version: 2}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if e.Mode == filemode.Dir {
			continue
		}
		idx.Entries = append(idx.Entries, &index.Entry{Name: name, Hash: e.Hash, Mode: e.Mode})
	}
	slices.SortFunc(idx.Entries, func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) })
	return repo.Storer.SetIndex(idx)
}

// repairIndex puts aside a git index that cannot be read (torn by a crash,
// say) as .git/index.broken, and rebuilds it from the commit head's tree
// without touching the files (git reset --mixed); with no commit yet, the
// first commit stages every file anew. A readable index is left alone, and
// so is one another git process holds (.git/index.lock).
func repairIndex(repo *git.Repository, dir string, head plumbing.Hash, log *slog.Logger) error {
	dot := filepath.Join(dir, git.GitDirName)
	if err := checkIndex(filepath.Join(dot, "index")); err == nil {
		return nil
	} else {
		log.Warn("memory root: the git index cannot be read; rebuilding it", "dir", dir, "err", err)
	}
	lock := filepath.Join(dot, "index.lock")
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		log.Warn("memory root: cannot lock the git index to rebuild it; leaving it", "dir", dir, "err", err)
		return nil
	}
	f.Close()
	defer os.Remove(lock)
	if err := os.Rename(filepath.Join(dot, "index"), filepath.Join(dot, "index.broken")); err != nil {
		return fmt.Errorf("put the unreadable git index aside: %w", err)
	}
	if head.IsZero() {
		return nil
	}
	if err := indexFromCommit(repo, head); err != nil {
		return fmt.Errorf("rebuild the git index from HEAD: %w", err)
	}
	log.Info("memory root: rebuilt the git index from HEAD", "dir", dir, "commit", head.String())
	return nil
}

// OpenRepository opens the git repository of the memory root dir as Open
// leaves it: what go-git writes into .git is private to the owner (see
// openRepo). It is for the packages that commit to the root (memory/vault).
func OpenRepository(dir string) (*git.Repository, error) { return openRepo(dir) }

// InitRepository creates an empty git repository in dir (no commit), with
// the same private modes as the root's. It is for restoring a root whose
// history comes from elsewhere (memory/archive).
func InitRepository(dir string) (*git.Repository, error) { return initRepo(dir) }

// openRepo opens the repository of the worktree dir. When .git is a
// directory, go-git writes through privateFS, so that what a commit adds
// to it is private to the owner; a gitdir link (.git a file naming a
// repository elsewhere) is left to go-git's own handling.
func openRepo(dir string) (*git.Repository, error) {
	st, err := os.Lstat(filepath.Join(dir, git.GitDirName))
	if err != nil || !st.IsDir() {
		return git.PlainOpen(dir)
	}
	wt := newPrivateFS(dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	return git.Open(filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), wt)
}

// initRepo is git.PlainInit(dir, false) with the repository's directories
// 0700 and files 0600 (objects 0400), whatever the umask.
func initRepo(dir string) (*git.Repository, error) {
	wt := newPrivateFS(dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	repo, err := git.Init(filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), wt)
	if err != nil {
		return nil, err
	}
	// As PlainInit: the configuration is written out in full.
	cfg, err := repo.Config()
	if err != nil {
		return nil, err
	}
	if err := repo.Storer.SetConfig(cfg); err != nil {
		return nil, err
	}
	return repo, nil
}

func initialCommit(repo *git.Repository, log *slog.Logger) error {
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return fmt.Errorf("add: %w", err)
	}
	hash, err := wt.Commit(commitMessage, &git.CommitOptions{
		Author: &object.Signature{
			Name:  commitName,
			Email: commitEmail,
			When:  time.Now(),
		},
		AllowEmptyCommits: true,
	})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	log.Info("memory root: first commit", "commit", hash.String())
	return nil
}
