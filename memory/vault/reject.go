package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OpReject is the ledger's op for a proposal that was not applied: policy
// or the owner rejected it.
const OpReject Op = "reject"

// Reject records that p was rejected by by (the owner, or "policy") for
// why: one ledger line, fsync'd, and one git commit holding it (and the
// proposal leaving inbox/proposals/ when it was queued), so that git log
// and the ledger show what was refused as well as what was written. The
// proposal's file is not touched. A failed commit is returned as a
// *CommitError: the ledger line is saved, and the next commit takes it in.
func (v *Vault) Reject(ctx context.Context, p *Proposal, by, why string) (Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := checkID(p.ID); err != nil {
		return Result{}, fmt.Errorf("reject: %w", err)
	}
	paths := []string{v.ledgerPath()}
	queued := proposalPath(p.ID)
	_, qerr := os.Lstat(filepath.Join(v.dir, filepath.FromSlash(queued)))
	if qerr == nil {
		paths = append(paths, queued)
	}
	e := Entry{TS: v.now().UTC(), Op: OpReject, Path: p.Path, Author: by, Reason: strings.TrimSpace(why),
		Sources: p.Sources, Proposal: p.ID}
	msg := fmt.Sprintf("vault: reject %s %s\n\n%s\n\nProposal: %s\nAuthor: %s\nDecided-by: %s\n",
		p.Op, p.Path, strings.TrimSpace(why), p.ID, p.Author, by)
	pend := &pending{Paths: paths, Message: msg, Author: gitName(by), Entries: []Entry{e}, LedgerFirst: true}
	if err := savePending(v.dir, pend); err != nil {
		return Result{}, fmt.Errorf("reject %s: %w", p.ID, err)
	}
	if qerr == nil {
		if err := removeDurable(v.dir, queued); err != nil {
			return Result{}, fmt.Errorf("reject %s: %w", p.ID, err)
		}
	}
	commit, err := v.settle(ctx, pend, msg)
	var cerr *CommitError
	switch {
	case errors.As(err, &cerr):
		return Result{Paths: paths}, err
	case err != nil:
		return Result{Paths: paths}, fmt.Errorf("reject %s: %w", p.ID, err)
	}
	return Result{Paths: paths, Commit: commit}, nil
}

// gitName is who as a git author name: anything that could corrupt a
// commit header ('<', '>', a newline) is dropped.
func gitName(who string) string {
	s := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, who)
	if strings.TrimSpace(s) == "" {
		return "hearth"
	}
	return s
}
