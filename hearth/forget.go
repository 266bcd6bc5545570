package hearth

import (
	"context"
	"slices"
	"strings"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// Who asks to forget, as tombstones and Forgotten events say.
const (
	ByOwner = "owner" // a client: mnemo forget, the TUI
	ByAgent = "agent" // the forget tool, approved by the owner
)

// MaxForget bounds the ids of one Forget.
const MaxForget = 100

// ForgetRequest names the turns to forget, by their ids or by the ids of
// search hits ("<id>#<n>" names the record it is part of).
type ForgetRequest struct {
	IDs []string
	By  string // ByOwner or ByAgent
	// Purge also removes from disk the text of every forgotten turn (these
	// and those forgotten before): the owner's confirmed decision.
	Purge bool
}

// ForgetResult says what Forget did.
type ForgetResult struct {
	Forgotten []string // the records forgotten now
	Unknown   []string // ids that named no live record
	Purged    *journal.PurgeReport
	// Derived is what the forget did to the vault: the notes, summaries
	// and entity notes made from the turns.
	Derived Derived
	// GitKeeps, after a purge, are the vault files a forget ever changed:
	// git's history keeps their earlier versions, made from forgotten
	// turns. A purge erases the journal's text, not git's history.
	GitKeeps []string
}

// Forget forgets the turns req names: one tombstone through the commit
// path, then they leave the recent records, every index and, with a
// Forgotten event, every client's view; with Purge, the journal on disk
// loses their text. It refuses a request that names no live turn (and
// does not purge).
func (h *Hearth) Forget(ctx context.Context, req ForgetRequest) (ForgetResult, error) {
	if req.By == "" {
		req.By = ByOwner
	}
	if len(req.IDs) > MaxForget {
		return ForgetResult{}, &Problem{Code: CodeBadRequest, Message: "forget: at most 100 ids at a time"}
	}
	var ids []string
	for _, id := range req.IDs {
		id, _, _ = strings.Cut(strings.TrimSpace(id), "#") // a hit names its record
		if id = strings.ToUpper(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && !req.Purge {
		return ForgetResult{}, &Problem{Code: CodeBadRequest, Message: "forget: name the turns to forget by their ids"}
	}
	var res ForgetResult
	convs := map[string]string{} // each record's conversation
	if len(ids) > 0 {
		found, err := h.cfg.Journal.Find(ctx, ids)
		if err != nil {
			h.log.Error("forget: read journal", "err", err)
			return res, &Problem{Code: CodeInternal, Message: "hearth could not read the journal; nothing was forgotten"}
		}
		for _, id := range ids {
			if r, ok := found[id]; ok {
				res.Forgotten = append(res.Forgotten, id)
				convs[id] = convOf(r)
			} else {
				res.Unknown = append(res.Unknown, id)
			}
		}
	}
	if len(res.Forgotten) == 0 && len(ids) > 0 {
		return res, &Problem{Code: CodeBadRequest, Message: "forget: no turn has that id (it may be forgotten already)"}
	}
	if len(res.Forgotten) > 0 {
		h.markForget(res.Forgotten, convs, req.By)
		if err := h.forget(ctx, h.conv, res.Forgotten, req.By); err != nil {
			h.clearForgetMarker()
			return res, &Problem{Code: CodeInternal, Message: "hearth could not store the forget; nothing was forgotten"}
		}
		// What was made from the turns: notes, summaries, entity notes.
		d, err := h.forgetDerived(ctx, convs, req.By)
		res.Derived = d
		if err != nil {
			// The marker stays: the next start finishes it.
			h.log.Warn("forget: the turns are forgotten, but what was made from them is not yet changed", "err", err)
		} else {
			h.clearForgetMarker()
		}
	}
	if req.Purge {
		rep, err := h.cfg.Journal.Purge(ctx)
		if err != nil {
			h.log.Error("forget: purge", "err", err)
			return res, &Problem{Code: CodeInternal, Message: "the turns are forgotten, but purging their text from the journal failed; details are in hearth's log"}
		}
		res.Purged = &rep
		if h.cfg.Memory != nil {
			if err := h.cfg.Memory.Forget(ctx, nil, true); err != nil {
				h.log.Warn("forget: compact the index", "err", err)
			}
		}
		res.GitKeeps = h.gitKeeps()
		h.log.Info("journal purged", "records", rep.Records, "shards", rep.Shards, "git_keeps", len(res.GitKeeps))
	}
	return res, nil
}

// forget is the commit path of a forget: the tombstone is appended
// (fsync'd), memory is told and drops the records from every index, the
// conversation drops them, and every subscriber gets one Forgotten — under
// the commit mutex, in journal order with every other commit.
func (h *Hearth) forget(ctx context.Context, c *conversation, ids []string, by string) error {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	tomb, err := h.cfg.Journal.Append(ctx, journal.Tombstone(ids, by))
	if err != nil {
		h.log.Error("journal append failed", "err", err)
		return err
	}
	h.observeEntities(tomb) // the graph is rebuilt without them
	if m := h.cfg.Memory; m != nil {
		m.Notify(tomb.ID)
		if err := m.Forget(ctx, ids, false); err != nil {
			// The tombstone is durable: the indexer drops them when it
			// meets it.
			h.log.Warn("forget: the index has not dropped the turns yet; the indexer will", "err", err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A forget is no conversation's: every conversation drops what it
	// holds of the records, and a title made from one is cleared.
	_ = c // every conversation, not only the one asked from
	for _, conv := range h.convs {
		if slices.ContainsFunc(conv.recent, func(r journal.Record) bool { return slices.Contains(tomb.Forgets, r.ID) }) {
			conv.forgetLocked(tomb.Forgets)
		}
	}
	h.forgets++
	h.forgot = append(h.forgot, forgotten{seq: h.forgets, ids: tomb.Forgets, by: by})
	if len(h.forgot) > maxForgot {
		h.forgot = slices.Delete(h.forgot, 0, len(h.forgot)-maxForgot)
	}
	h.noteLocked(tomb)
	h.registryDirtyLocked()
	h.publishLocked(&Forgotten{IDs: tomb.Forgets, By: by})
	h.log.Info("forgot turns", "count", len(tomb.Forgets), "by", by)
	return nil
}

// forgetLocked drops the records ids from the recent ones. A stored
// provider state made after the oldest of them holds it: it is not
// continued from.
func (c *conversation) forgetLocked(ids []string) {
	oldest := slices.Min(ids)
	c.recent = slices.DeleteFunc(c.recent, func(r journal.Record) bool { return slices.Contains(ids, r.ID) })
	for i := range c.recent {
		if c.recent[i].ID > oldest {
			c.recent[i].ResponseID = ""
		}
	}
}

// gitKeeps lists the vault files a forget ever changed (the ledger's
// lines by forget): their earlier versions in git still hold what was
// made from the turns forgotten.
func (h *Hearth) gitKeeps() []string {
	v := h.cfg.Vault
	if v == nil {
		return nil
	}
	es, _, err := vault.ReadLedger(v.Dir())
	if err != nil {
		h.log.Warn("forget: ledger unreadable", "err", err)
		return nil
	}
	var out []string
	for _, e := range es {
		if e.Author == AuthorForget && !slices.Contains(out, e.Path) {
			out = append(out, e.Path)
		}
	}
	slices.Sort(out)
	return out
}
