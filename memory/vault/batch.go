package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// batchFile is one file of a batch as its pending record keeps it: what
// the file must be once the batch is applied, so that a write a crash cut
// short can be finished (CommitPending) instead of leaving part of it.
type batchFile struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"` // the hash it was planned against; "" new
	After  []byte `json:"after,omitempty"`
	Remove bool   `json:"remove,omitempty"`
}

// ErrBatch is wrapped by ApplyBatch's error when the batch cannot be
// applied as a whole (two of its changes touch one file, authors differ):
// nothing is written.
var ErrBatch = errors.New("batch refused")

// ApplyBatch writes approved proposals as one change: every file of every
// proposal, then one git commit naming them all, then one ledger line per
// file, fsync'd. All or nothing: each proposal is planned first (a stale
// one, a note that does not parse, two changes of one file refuse the
// whole batch before any file changes); a write that fails part way puts
// back the files already written and drops the record; and a crash part
// way leaves a pending record holding every file's new bytes, so that
// CommitPending finishes the batch, then commits and ledgers it, as its
// author. The proposals must share an author (a job's run, a forget).
// subject names the batch in the commit's first line.
//
// As with Apply, a failed commit leaves the files written and ledgered
// with the error, and a *CommitError is returned.
func (v *Vault) ApplyBatch(ctx context.Context, ps []*Proposal, subject string) (Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(ps) == 0 {
		return Result{}, nil
	}
	author := ps[0].Author
	now := v.now().UTC()
	var writes []fileWrite
	var entries []Entry
	var dequeue []string
	seen := map[string]string{} // path → the proposal that writes it
	for _, p := range ps {
		if err := p.validate(); err != nil {
			return Result{}, fmt.Errorf("apply batch: %s: %w", p.ID, err)
		}
		if p.Author != author {
			return Result{}, fmt.Errorf("apply batch: %w: authors %s and %s", ErrBatch, author, p.Author)
		}
		ws, err := v.plan(p, now)
		if err != nil {
			return Result{}, fmt.Errorf("apply batch: %w", err)
		}
		for _, w := range ws {
			if other, ok := seen[w.path]; ok {
				return Result{}, fmt.Errorf("apply batch: %w: %s and %s both change %s", ErrBatch, other, p.ID, w.path)
			}
			seen[w.path] = p.ID
		}
		writes = append(writes, ws...)
		entries = append(entries, ledgerEntries(p, ws, now)...)
		if _, err := os.Lstat(filepath.Join(v.dir, filepath.FromSlash(proposalPath(p.ID)))); err == nil {
			dequeue = append(dequeue, proposalPath(p.ID))
		}
	}
	paths := make([]string, 0, len(writes)+len(dequeue)+1)
	files := make([]batchFile, 0, len(writes))
	for _, w := range writes {
		paths = append(paths, w.path)
		f := batchFile{Path: w.path, After: w.after, Remove: w.after == nil}
		if w.before != nil {
			f.Before = Hash(w.before)
		}
		files = append(files, f)
	}
	paths = append(paths, dequeue...)
	paths = append(paths, v.ledgerPath())
	pend := &pending{Paths: paths, Message: batchMessage(ps, subject), Author: author, Entries: entries,
		Batch: files, Dequeue: dequeue}
	if err := savePending(v.dir, pend); err != nil {
		return Result{}, fmt.Errorf("apply batch: %w", err)
	}
	res := Result{}
	for i, w := range writes {
		if v.crashed(fmt.Sprintf("batch:%d", i)) {
			return res, errCrash
		}
		var err error
		if v.failWrite != nil {
			err = v.failWrite(i, w.path)
		}
		if err == nil {
			if w.after == nil {
				err = removeDurable(v.dir, w.path)
			} else {
				err = writeAtomic(v.dir, w.path, w.after)
			}
		}
		if err != nil {
			// Put back what was written: none of the batch stays.
			if rerr := v.undo(writes[:i]); rerr != nil {
				// The record stays: CommitPending finishes the batch.
				return Result{}, fmt.Errorf("apply batch: %w (and undoing it failed, so it will be finished instead: %w)", err, rerr)
			}
			return Result{}, errors.Join(fmt.Errorf("apply batch: nothing applied: %w", err), dropPending(v.dir, pend))
		}
		res.Paths = append(res.Paths, w.path)
	}
	for _, q := range dequeue {
		if err := removeDurable(v.dir, q); err != nil {
			return res, fmt.Errorf("apply batch: %w", err)
		}
	}
	if v.crashed("commit") {
		return res, errCrash
	}
	commit, err := v.settle(ctx, pend, pend.Message)
	res.Commit = commit
	if err != nil {
		var cerr *CommitError
		if errors.As(err, &cerr) {
			v.log.Warn("vault: commit failed; the batch is saved and waits for the next commit", "changes", len(ps), "err", err)
		}
		return res, fmt.Errorf("apply batch: %w", err)
	}
	return res, nil
}

// undo puts back the files of writes as they were before.
func (v *Vault) undo(writes []fileWrite) error {
	var errs []error
	for _, w := range slices.Backward(writes) {
		var err error
		if w.before == nil {
			err = removeDurable(v.dir, w.path)
		} else {
			err = writeAtomic(v.dir, w.path, w.before)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// finishBatch completes the files of a batch a crash cut short: each file
// still as it was planned against gets its new bytes (or is removed). A
// file that is neither as before nor as after was changed by someone
// else since, and is left as it is.
func (v *Vault) finishBatch(p *pending) error {
	for _, f := range p.Batch {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			continue
		}
		cur, err := v.Read(f.Path)
		if err != nil {
			return err
		}
		var was string
		if cur != nil {
			was = Hash(cur)
		}
		switch {
		case f.Remove && cur == nil, !f.Remove && cur != nil && was == Hash(f.After):
			continue // written already
		case was != f.Before:
			v.log.Warn("vault: a file of an unfinished batch changed since; left as it is", "path", f.Path)
			continue
		case f.Remove:
			err = removeDurable(v.dir, f.Path)
		default:
			err = writeAtomic(v.dir, f.Path, f.After)
		}
		if err != nil {
			return err
		}
	}
	for _, q := range p.Dequeue {
		if err := removeDurable(v.dir, q); err != nil {
			return err
		}
	}
	return nil
}

// batchMessage names a batch's changes, their reasons, proposals and
// sources.
func batchMessage(ps []*Proposal, subject string) string {
	var b strings.Builder
	subject = strings.Join(strings.Fields(subject), " ")
	if subject == "" {
		subject = fmt.Sprintf("%d changes", len(ps))
	}
	fmt.Fprintf(&b, "vault: %s\n\n", subject)
	for _, p := range ps {
		reason, _, _ := strings.Cut(strings.TrimSpace(p.Reason), "\n")
		fmt.Fprintf(&b, "- %s %s: %s\n", p.Op, p.Path, reason)
	}
	b.WriteString("\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "Proposal: %s\n", p.ID)
	}
	fmt.Fprintf(&b, "Author: %s\n", ps[0].Author)
	var seen []Source
	for _, p := range ps {
		for _, s := range p.Sources {
			if slices.ContainsFunc(seen, func(o Source) bool { return o.Thread == s.Thread && o.Turn == s.Turn }) {
				continue
			}
			seen = append(seen, s)
			fmt.Fprintf(&b, "Source: thread %s turn %s\n", s.Thread, s.Turn)
		}
	}
	return b.String()
}
