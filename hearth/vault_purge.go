package hearth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// Layers PurgeLayer empties.
const (
	LayerKnowledge = "knowledge"
	LayerSummaries = "summaries"
	LayerProposals = "proposals"
	LayerThreads   = "threads" // only with Confirm
	LayerIndex     = "index"
)

// Layers lists the layers a purge names.
func Layers() []string {
	return []string{LayerIndex, LayerSummaries, LayerKnowledge, LayerProposals, LayerThreads}
}

// PurgeRequest is the owner's purge of one layer of memory.
type PurgeRequest struct {
	Layer string
	// Confirm is required for threads: the conversation itself.
	Confirm bool
	Reason  string
}

// PurgeResult says what a purge removed.
type PurgeResult struct {
	Layer   string
	Removed int    // files (vault layers) or turns (threads)
	Commit  string // the vault commit that holds it; "" for threads, index
	// CommitFailed: removed and ledgered, but git could not commit it
	// yet (the keeper retries).
	CommitFailed bool
}

// IndexRebuilder is what Memory implements when it can drop its index and
// rebuild it from the journal (a purge of the index layer).
type IndexRebuilder interface {
	RebuildIndex(ctx context.Context) error
}

// PurgeLayer empties one layer of memory, for the owner: the vault's
// knowledge, summaries or proposals (every file but the READMEs, one
// ledger line each and one commit, so that git history keeps them);
// threads, with Confirm, forgets every turn (tombstones in the journal)
// and purges their text from disk and every index; index drops the recall
// index and rebuilds it from the journal, when Memory can.
func (h *Hearth) PurgeLayer(ctx context.Context, req PurgeRequest) (PurgeResult, error) {
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		reason = "purged by the owner"
	}
	out := PurgeResult{Layer: req.Layer}
	switch req.Layer {
	case LayerThreads:
		if !req.Confirm {
			return out, &Problem{Code: CodeBadRequest, Message: "purging threads erases the whole conversation from disk: confirm it (--confirm)"}
		}
		n, err := h.purgeThreads(ctx)
		out.Removed = n
		return out, err
	case LayerIndex:
		r, ok := h.cfg.Memory.(IndexRebuilder)
		if !ok {
			return out, &Problem{Code: CodeUnavailable, Message: "this hearth's recall cannot rebuild its index on request yet; stop hearth, remove the memory root's index/ and start it: the index is rebuilt from the journal"}
		}
		if err := r.RebuildIndex(ctx); err != nil {
			h.log.Error("purge: rebuild the index", "err", err)
			return out, &Problem{Code: CodeInternal, Message: "hearth could not rebuild the index; details are in hearth's log"}
		}
		h.log.Info("purge: the index is dropped and rebuilds from the journal and the notes in the background", "reason", reason)
		return out, nil
	case LayerKnowledge, LayerSummaries, LayerProposals:
	default:
		return out, &Problem{Code: CodeBadRequest, Message: fmt.Sprintf("purge: unknown layer %q: want one of %s", req.Layer, strings.Join(Layers(), ", "))}
	}
	v := h.cfg.Vault
	if v == nil {
		return out, noVault()
	}
	dir := map[string]string{LayerKnowledge: vault.KnowledgeDir, LayerSummaries: vault.SummariesDir, LayerProposals: vault.ProposalsDir}[req.Layer]
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	// What the owner edited is committed first: history keeps it.
	h.ownerEditsLocked(ctx)
	var queued []vault.Proposal
	if req.Layer == LayerProposals {
		ps, _, _ := vault.ListProposals(v.Dir())
		for _, p := range ps {
			queued = append(queued, *p)
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	defer cancel()
	res, err := v.Purge(wctx, dir, reason, vault.AuthorOwner)
	var cerr *vault.CommitError
	switch {
	case errors.As(err, &cerr):
		out.CommitFailed = true
		h.vaultFailed(h.waitingLocked(), err)
	case err != nil:
		h.log.Error("purge", "layer", req.Layer, "err", err)
		return out, &Problem{Code: CodeInternal, Message: "hearth could not purge that layer; details are in hearth's log"}
	}
	out.Removed, out.Commit = len(res.Paths), res.Commit
	for _, p := range queued {
		h.decidedLocked(ctx, ProposalOutcome{ID: p.ID, Path: p.Path, Decision: DecisionRejected, Why: "purged by the owner", Commit: out.Commit}, ByOwner)
	}
	h.log.Info("purge", "layer", req.Layer, "files", out.Removed, "commit", out.Commit)
	return out, nil
}

// purgeThreads forgets every live turn (tombstones through the commit
// path, in batches) and purges their text from the journal and the index.
func (h *Hearth) purgeThreads(ctx context.Context) (int, error) {
	var ids []string
	err := h.cfg.Journal.ScanAfter(ctx, "", func(r journal.Record) error {
		if r.IsTurn() && !r.Redacted {
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		h.log.Error("purge threads: read the journal", "err", err)
		return 0, &Problem{Code: CodeInternal, Message: "hearth could not read the journal; nothing was purged"}
	}
	for batch := range slices.Chunk(ids, MaxForget) {
		if err := h.forget(ctx, h.conv, batch, ByOwner); err != nil {
			return 0, &Problem{Code: CodeInternal, Message: "hearth could not store the forget; the threads are purged only in part"}
		}
	}
	if _, err := h.Forget(ctx, ForgetRequest{By: ByOwner, Purge: true}); err != nil {
		return len(ids), err
	}
	return len(ids), nil
}
