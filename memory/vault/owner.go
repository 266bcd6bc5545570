package vault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// OpEdit is the ledger's op for a change the owner made in an editor.
const OpEdit Op = "edit"

// ownerAreas are the files of the memory root the owner edits by hand: a
// change there that no commit holds is theirs.
var ownerAreas = []string{AgentFile, ContinuityFile, InvariantsFile, "config/", "prompts/", KnowledgeDir + "/", SummariesDir + "/"}

// Edit is a file that differs from HEAD.
type Edit struct {
	Path          string
	Before, After []byte // nil: absent (new, or deleted)
}

// OwnerEdits returns the files of the owner's areas (notes, summaries,
// prompts, config, invariants, AGENT.md, continuity.json) whose content
// differs from HEAD, added or deleted included, sorted by path. Dot files
// (an editor's swap file, Apply's temporary files) are not the owner's
// text and are left out.
func (v *Vault) OwnerEdits(ctx context.Context) ([]Edit, error) {
	repo, err := openRepository(v.dir, v.beforeRead)
	if err != nil {
		return nil, fmt.Errorf("owner edits: %w", err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("owner edits: read HEAD: %w", err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("owner edits: %w", err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("owner edits: %w", err)
	}
	committed := make(map[string]*object.File)
	err = tree.Files().ForEach(func(f *object.File) error {
		if _, ok := under(f.Name, ownerAreas); ok {
			committed[f.Name] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("owner edits: %w", err)
	}
	blob := func(f *object.File) ([]byte, error) {
		r, err := f.Reader()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	var edits []Edit
	seen := make(map[string]bool)
	for _, area := range ownerAreas {
		err := filepath.WalkDir(filepath.Join(v.dir, filepath.FromSlash(area)), func(full string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(v.dir, full)
			if err != nil {
				return err
			}
			p := filepath.ToSlash(rel)
			seen[p] = true
			b, err := os.ReadFile(full)
			if err != nil {
				return err
			}
			f := committed[p]
			if f != nil && f.Hash == plumbing.ComputeHash(plumbing.BlobObject, b) {
				return nil
			}
			e := Edit{Path: p, After: b}
			if f != nil {
				if e.Before, err = blob(f); err != nil {
					return err
				}
			}
			edits = append(edits, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("owner edits: %w", err)
		}
	}
	for p, f := range committed {
		if seen[p] || strings.HasPrefix(filepath.Base(p), ".") {
			continue
		}
		b, err := blob(f)
		if err != nil {
			return nil, fmt.Errorf("owner edits: %w", err)
		}
		edits = append(edits, Edit{Path: p, Before: b})
	}
	slices.SortFunc(edits, func(a, b Edit) int { return strings.Compare(a.Path, b.Path) })
	return edits, nil
}

// CommitOwnerEdits commits the owner's edits (OwnerEdits) as author
// "owner", one ledger line each. A note that no longer parses is committed
// as the owner wrote it, never rewritten; its *ParseError is returned in
// malformed so that it can be shown to them.
func (v *Vault) CommitOwnerEdits(ctx context.Context) (res Result, malformed []error, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	edits, err := v.OwnerEdits(ctx)
	if err != nil || len(edits) == 0 {
		return Result{}, nil, err
	}
	// A write whose commit is pending is its author's, not the owner's.
	ps, err := readPending(v.dir)
	if err != nil {
		return Result{}, nil, err
	}
	theirs := make(map[string]bool)
	for _, p := range ps {
		for _, path := range p.Paths {
			theirs[path] = true
		}
	}
	edits = slices.DeleteFunc(edits, func(e Edit) bool { return theirs[e.Path] })
	if len(edits) == 0 {
		return Result{}, nil, nil
	}
	const reason = "edited by the owner"
	var b strings.Builder
	fmt.Fprintf(&b, "vault: the owner's edits\n\n%s:\n", reason)
	for _, e := range edits {
		res.Paths = append(res.Paths, e.Path)
		fmt.Fprintf(&b, "  %s\n", e.Path)
		if e.After != nil && isNotePath(e.Path) {
			if _, perr := ParseNote(e.Path, e.After); perr != nil {
				malformed = append(malformed, perr)
			}
		}
	}
	fmt.Fprintf(&b, "\nAuthor: %s\n", AuthorOwner)
	var cerr error
	res.Commit, cerr = v.commit(ctx, res.Paths, b.String(), AuthorOwner)
	now := v.now().UTC()
	entries := make([]Entry, 0, len(edits))
	for _, e := range edits {
		le := Entry{TS: now, Op: OpEdit, Path: e.Path, Author: AuthorOwner, Reason: reason, Commit: res.Commit}
		if e.Before != nil {
			le.Before = Hash(e.Before)
		}
		if e.After != nil {
			le.After = Hash(e.After)
		} else {
			le.Op = OpDelete
		}
		if cerr != nil {
			le.CommitErr = cerr.Error()
		}
		entries = append(entries, le)
	}
	if err := appendLedger(v.dir, now, entries...); err != nil {
		return res, malformed, errors.Join(err, cerr)
	}
	return res, malformed, cerr
}
