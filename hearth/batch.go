package hearth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mnemo/mnemo/memory/vault"
)

// BatchVault is the optional part of a Vault that writes several
// proposals as one commit, all or nothing (*vault.Vault implements it).
type BatchVault interface {
	ApplyBatch(ctx context.Context, ps []*vault.Proposal, subject string) (vault.Result, error)
}

// ProposeBatch governs ps under the vault's policy, like Propose each,
// and carries the verdicts out together: what policy applies is written
// as one vault commit (one ledger line per file), all of it or, when a
// write fails, none; what it queues goes to the inbox; what it rejects
// is ledgered. An error means nothing of the batch was applied (what was
// queued or rejected before stays so): the caller retries it whole.
//
// resumed says the batch may have been carried out before (a run cut
// short by a crash, resumed from its stage): proposals the ledger names
// already, or that wait in the inbox, are not carried out again, so a
// resumed batch is applied exactly once. subject names the batch in its
// commit.
func (h *Hearth) ProposeBatch(ctx context.Context, ps []vault.Proposal, subject string, resumed bool) ([]ProposalOutcome, error) {
	v := h.cfg.Vault
	if v == nil {
		return nil, &Problem{Code: CodeUnavailable, Message: "this hearth has no vault"}
	}
	bv, ok := v.(BatchVault)
	if !ok {
		return nil, &Problem{Code: CodeUnavailable, Message: "this vault cannot write a batch"}
	}
	now := time.Now().UTC()
	for i := range ps {
		p := &ps[i]
		if p.ID == "" {
			p.ID = vault.NewProposalID()
		}
		if p.Author == "" {
			p.Author = vault.AuthorAgent
		}
		if p.CreatedAt.IsZero() {
			p.CreatedAt = now
		}
	}
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	// A batch a crash cut short is finished here (its pending record),
	// before the ledger is read.
	h.ownerEditsLocked(ctx)
	done := map[string]vault.Entry{}
	if resumed {
		es, _, err := vault.ReadLedger(v.Dir())
		if err != nil {
			return nil, fmt.Errorf("batch: read the ledger: %w", err)
		}
		want := map[string]bool{}
		for _, p := range ps {
			want[p.ID] = true
		}
		for _, e := range es {
			if want[e.Proposal] {
				done[e.Proposal] = e
			}
		}
	}
	pol, err := v.Policy()
	if err != nil {
		h.log.Warn("vault: the memory policy is invalid", "err", err)
		return nil, &Problem{Code: CodeConfigInvalid, Message: "the memory policy (config/memory.policy.yml) is invalid; fix it to write memories"}
	}
	outs := make([]ProposalOutcome, len(ps))
	type verdict struct {
		i   int
		why string
	}
	var apply, reject []verdict
	touched := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		out := ProposalOutcome{ID: p.ID, Path: p.Path}
		if e, ok := done[p.ID]; ok {
			out.Decision, out.Why, out.Commit = DecisionApplied, "applied before the run was cut short", e.Commit
			if e.Op == vault.OpReject {
				out.Decision, out.Why = DecisionRejected, e.Reason
			}
			outs[i] = out
			continue
		}
		if resumed && queuedAlready(v.Dir(), p.ID) {
			out.Decision, out.Why = DecisionQueued, "queued before the run was cut short"
			outs[i] = out
			continue
		}
		var current []byte
		if fs.ValidPath(p.Path) {
			if current, err = v.Read(p.Path); err != nil {
				h.log.Error("vault: read", "path", p.Path, "err", err)
				return nil, &Problem{Code: CodeInternal, Message: "hearth could not read the memory file; nothing was written"}
			}
		}
		d := vault.Decide(pol, p, current)
		if d.Verdict == vault.Reject && racedOwner(p, current) {
			d = vault.Decision{Verdict: vault.Queue, Why: "re-proposed: the file changed since the proposal was made (the owner's edit is kept); review it against the file as it is"}
			p.Base = vault.Hash(current)
		}
		if d.Verdict == vault.Apply && (touched[p.Path] || overlaps(p, touched)) {
			d = vault.Decision{Verdict: vault.Reject, Why: "another change of the same file is in this run; propose it again"}
		}
		out.Why = d.Why
		switch d.Verdict {
		case vault.Queue:
			if err := vault.SaveProposal(v.Dir(), p); err != nil {
				h.log.Error("vault: queue proposal", "proposal", p.ID, "err", err)
				return nil, &Problem{Code: CodeInternal, Message: "hearth could not queue the proposal; nothing was written"}
			}
			out.Decision = DecisionQueued
			h.publish(&ProposalQueued{Proposal: *p, Why: d.Why, Current: current})
		case vault.Apply:
			touched[p.Path] = true
			for _, s := range p.Supersedes {
				touched[s] = true
			}
			out.Decision = DecisionApplied
			apply = append(apply, verdict{i, d.Why})
		default:
			out.Decision = DecisionRejected
			reject = append(reject, verdict{i, d.Why})
		}
		outs[i] = out
	}
	if len(apply) > 0 {
		batch := make([]*vault.Proposal, len(apply))
		for k, a := range apply {
			batch[k] = &ps[a.i]
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
		res, err := bv.ApplyBatch(wctx, batch, subject)
		cancel()
		var cerr *vault.CommitError
		switch {
		case err == nil:
		case errors.As(err, &cerr):
			h.log.Warn("vault: the batch is saved but not committed; retrying in the background", "changes", len(batch), "err", err)
			h.vaultFailed(h.waitingLocked(), err)
			for _, a := range apply {
				outs[a.i].CommitFailed = true
			}
		default:
			h.log.Warn("vault: batch not applied; nothing of it was written", "changes", len(batch), "err", err)
			return nil, fmt.Errorf("batch: nothing applied: %w", err)
		}
		h.knowledge(ctx, res.Paths)
		for _, a := range apply {
			outs[a.i].Commit = res.Commit
			h.decidedLocked(ctx, outs[a.i], DecidedByPolicy)
		}
	}
	for _, r := range reject {
		h.rejectLocked(ctx, &ps[r.i], DecidedByPolicy, r.why)
		h.decidedLocked(ctx, outs[r.i], DecidedByPolicy)
	}
	return outs, nil
}

// overlaps reports whether p marks a note another change of the batch
// writes.
func overlaps(p *vault.Proposal, touched map[string]bool) bool {
	for _, s := range p.Supersedes {
		if touched[s] {
			return true
		}
	}
	return false
}

// queuedAlready reports whether the proposal id waits in the inbox.
func queuedAlready(dir, id string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(vault.ProposalsDir), id+".json"))
	return err == nil
}
