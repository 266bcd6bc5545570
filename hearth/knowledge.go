package hearth

import "context"

// KnowledgeIndex is a Memory that indexes the vault's notes: after a vault
// write or an owner's edit, hearth tells it which files changed. It is
// optional (a Memory without it finds turns only), so that stand-in
// memories need not implement it.
type KnowledgeIndex interface {
	// Knowledge brings the index in step with the vault's files paths
	// (relative to the memory root): changed notes indexed again, removed
	// ones dropped, other files ignored.
	Knowledge(ctx context.Context, paths []string) error
}

// knowledge tells memory which vault files a write changed; a failure is
// logged: the write stands, and recall catches up at its next start.
func (h *Hearth) knowledge(ctx context.Context, paths []string) {
	k, ok := h.cfg.Memory.(KnowledgeIndex)
	if !ok || len(paths) == 0 {
		return
	}
	if err := k.Knowledge(ctx, paths); err != nil {
		h.log.Warn("recall: the notes written are not searchable yet", "err", err)
	}
}
