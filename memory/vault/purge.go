package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OpPurge is the ledger's op for a file removed by a purge of its layer.
const OpPurge Op = "purge"

// Purgeable layers: the directories Purge empties.
var purgeable = []string{KnowledgeDir, SummariesDir, ProposalsDir}

// Purge empties the layer dir (knowledge, summaries or inbox/proposals)
// of the memory root: every file in it but the READMEs that explain its
// folders is removed, one ledger line each (with why and who), and one
// git commit holds it all, so that history keeps what was purged. It
// returns the files removed. A failed commit is returned as a
// *CommitError with the Result: the files are removed and ledgered, and
// the next commit takes them in.
func (v *Vault) Purge(ctx context.Context, layer, reason, author string) (Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	known := false
	for _, l := range purgeable {
		known = known || l == layer
	}
	if !known {
		return Result{}, fmt.Errorf("purge: %q is not a layer the vault purges (%s)", layer, strings.Join(purgeable, ", "))
	}
	if !validAuthor(author) {
		return Result{}, fmt.Errorf("purge: author %q", author)
	}
	base := filepath.Join(v.dir, filepath.FromSlash(layer))
	var entries []Entry
	var res Result
	now := v.now().UTC()
	err := filepath.WalkDir(base, func(full string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || d.Name() == "README.md" {
			return nil
		}
		rel, err := filepath.Rel(v.dir, full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		e := Entry{TS: now, Op: OpPurge, Path: p, Author: author, Reason: reason}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(full)
			if err != nil {
				return err
			}
			e.Before = Hash(b)
		}
		res.Paths = append(res.Paths, p)
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("purge %s: %w", layer, err)
	}
	if len(res.Paths) == 0 {
		return res, nil
	}
	msg := fmt.Sprintf("vault: purge %s (%d files)\n\n%s\n\nAuthor: %s\n", layer, len(res.Paths), strings.TrimSpace(reason), author)
	paths := append(append([]string(nil), res.Paths...), v.ledgerPath())
	pend := &pending{Paths: paths, Message: msg, Author: author, Entries: entries, LedgerFirst: true}
	if err := savePending(v.dir, pend); err != nil {
		return Result{}, fmt.Errorf("purge %s: %w", layer, err)
	}
	for _, p := range res.Paths {
		if err := os.Remove(filepath.Join(v.dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("purge %s: %w", layer, err)
		}
	}
	if err := syncDirs(v.dir, res.Paths); err != nil {
		return res, fmt.Errorf("purge %s: %w", layer, err)
	}
	res.Commit, err = v.settle(ctx, pend, msg)
	return res, err
}

// syncDirs fsyncs the directories that hold paths (relative to dir).
func syncDirs(dir string, paths []string) error {
	done := make(map[string]bool)
	for _, p := range paths {
		d := filepath.Dir(filepath.Join(dir, filepath.FromSlash(p)))
		if done[d] {
			continue
		}
		done[d] = true
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
