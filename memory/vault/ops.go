package vault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNotFound is wrapped by ReadAt's error when the file, or the version
// asked for, does not exist.
var ErrNotFound = errors.New("not found")

// CheckReadPath reports whether p names a file of the memory root that the
// vault's operations may read: clean, relative, and not inside .git or any
// other dot directory.
func CheckReadPath(p string) error {
	if p == "" || !fs.ValidPath(p) || p == "." || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q is not a clean relative path in the memory root", p)
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("path %q: dot files are not the vault's", p)
		}
	}
	return nil
}

// CheckWritePath reports whether p names a file a write may touch (the
// same rule as a proposal's: not threads/, index/, audit/, inbox/ or dot
// files).
func CheckWritePath(p string) error { return checkPath(p) }

// ReadAt returns the file p as it is now (rev ""), or as the commit rev
// (a hash, a short hash, or a revision such as HEAD~2) holds it, with the
// full hash of that commit ("" for the file as it is now). A file that
// does not exist, or not at rev, gives an error wrapping ErrNotFound.
func (v *Vault) ReadAt(ctx context.Context, p, rev string) ([]byte, string, error) {
	if err := CheckReadPath(p); err != nil {
		return nil, "", err
	}
	if rev == "" {
		b, err := os.ReadFile(filepath.Join(v.dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("%s: %w", p, ErrNotFound)
		}
		return b, "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	repo, err := openRepository(v.dir, v.beforeRead)
	if err != nil {
		return nil, "", fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	c, err := resolve(repo, rev)
	if err != nil {
		return nil, "", err
	}
	f, err := c.File(p)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil, "", fmt.Errorf("%s at %s: %w", p, short(c.Hash.String()), ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, "", fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, "", fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	return b, c.Hash.String(), nil
}

// resolve finds the commit rev names: a revision git understands, or an
// abbreviated hash of at least 4 hex digits.
func resolve(repo *git.Repository, rev string) (*object.Commit, error) {
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", rev, ErrNotFound)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", rev, ErrNotFound)
	}
	return c, nil
}

func short(h string) string { return h[:min(len(h), 12)] }

// ListFilter selects notes; zero fields select all.
type ListFilter struct {
	Type   string
	Status Status
	Tag    string
	// Prefix is a path prefix ("knowledge/people/"); "" is knowledge/.
	Prefix string
}

// NoteInfo is a note as List shows it. Err is set, and the rest but Path
// empty, for a note that does not parse.
type NoteInfo struct {
	Path      string
	ID        string
	Title     string
	Type      string
	Status    Status
	Tags      []string
	UpdatedAt time.Time
	Err       string
	// Sources are the turns the note cites (a forget finds the notes
	// made from what it forgets by them).
	Sources []Source
}

// List returns the notes (Markdown files of knowledge/ and summaries/,
// READMEs aside) under f.Prefix, sorted by path,
// that match f. A note that does not parse is listed with its error when
// f selects by path only, so that the owner sees it; else it is left out.
func (v *Vault) List(ctx context.Context, f ListFilter) ([]NoteInfo, error) {
	prefix := f.Prefix
	if prefix == "" {
		prefix = KnowledgeDir + "/"
	}
	dirPart := path.Dir(prefix + "x") // the directory the prefix is in
	if dirPart != "." {
		if err := CheckReadPath(dirPart); err != nil {
			return nil, err
		}
	}
	byPathOnly := f.Type == "" && f.Status == "" && f.Tag == ""
	base := filepath.Join(v.dir, filepath.FromSlash(dirPart))
	c := &v.list
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notes == nil {
		c.notes = make(map[string]cachedNote)
	}
	c.gen++
	now := v.now()
	var out []NoteInfo
	err := walkNotes(ctx, base, func(full string, k statKey) error {
		rel, err := filepath.Rel(v.dir, full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		if !strings.HasPrefix(p, prefix) || !isNotePath(p) {
			return nil // a README explains a folder: it is not a note
		}
		n, err := c.info(full, p, k, now)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if n.Err != "" {
			if byPathOnly {
				out = append(out, NoteInfo{Path: p, Err: n.Err})
			}
			return nil
		}
		if f.Type != "" && n.Type != f.Type || f.Status != "" && n.Status != f.Status || f.Tag != "" && !slices.Contains(n.Tags, f.Tag) {
			return nil
		}
		out = append(out, n.clone())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	if prefix == dirPart+"/" {
		c.prune(base + string(filepath.Separator))
	}
	return out, nil
}

// Change is one change to a file: a commit that touched it (Commit, its
// author, time and subject) with the ledger lines that name it, or a
// ledger line no commit of the file holds (a rejection, a write whose
// commit failed), with Commit "".
type Change struct {
	Commit  string
	Author  string
	When    time.Time
	Subject string
	Ledger  []Entry
}

// History returns the changes to the file p, newest first, at most limit
// (0: all): git's commits of p, each with its ledger lines, and the
// ledger lines about p that no such commit holds. ReadAt gives the file as
// each commit holds it.
func (v *Vault) History(ctx context.Context, p string, limit int) ([]Change, error) {
	if err := CheckReadPath(p); err != nil {
		return nil, err
	}
	entries, _, err := ReadLedger(v.dir)
	if err != nil {
		return nil, err
	}
	byCommit := make(map[string][]Entry)
	var loose []Entry
	for _, e := range entries {
		if e.Path != p {
			continue
		}
		if e.Commit == "" {
			loose = append(loose, e)
		} else {
			byCommit[e.Commit] = append(byCommit[e.Commit], e)
		}
	}
	repo, err := openRepository(v.dir, v.beforeRead)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", p, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("history of %s: read HEAD: %w", p, err)
	}
	it, err := repo.Log(&git.LogOptions{From: head.Hash(), FileName: &p})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", p, err)
	}
	defer it.Close()
	var out []Change
	seen := make(map[string]bool)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", p, err)
		}
		h := c.Hash.String()
		seen[h] = true
		subject, _, _ := strings.Cut(c.Message, "\n")
		out = append(out, Change{Commit: h, Author: c.Author.Name, When: c.Author.When, Subject: subject, Ledger: byCommit[h]})
	}
	for _, e := range loose {
		out = append(out, Change{Author: e.Author, When: e.TS, Subject: fmt.Sprintf("vault: %s %s", e.Op, e.Path), Ledger: []Entry{e}})
	}
	slices.SortStableFunc(out, func(a, b Change) int { return b.When.Compare(a.When) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
