package hearth

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/vault"
)

// EntityNotesAuthor is the author of the entity notes in the vault.
const EntityNotesAuthor = "job:entities"

// Entity notes: only entities mentioned at least minNoteMentions times
// get one, at most maxEntityNotes of the most salient.
const (
	minNoteMentions = 3
	maxEntityNotes  = 100
)

// EntityNotes is what WriteEntityNotes did.
type EntityNotes struct {
	Applied, Queued, Rejected, Unchanged int
}

// WriteEntityNotes keeps the entity notes of the vault
// (entities/<type>/<slug>.md, human-readable, with the relations and the
// evidence ids) in step with the graph: the most salient entities whose
// note is missing or says something else (type, name, aliases,
// relations, or the day last seen) are proposed through Propose under the
// vault's policy, citing the turns that mention them. It proposes nothing
// when the policy does not apply entities/ on its own: derived notes
// must not fill the owner's inbox.
func (h *Hearth) WriteEntityNotes(ctx context.Context) (EntityNotes, error) {
	var out EntityNotes
	g := h.entityGraph()
	v := h.cfg.Vault
	if g == nil || v == nil {
		return out, nil
	}
	pol, err := v.Policy()
	if err != nil {
		return out, fmt.Errorf("entity notes: %w", err)
	}
	if !slices.ContainsFunc(pol.AutoApply.Paths, func(p string) bool { return p == graph.EntityDir+"/" || p == graph.EntityDir }) {
		return out, nil
	}
	notes := g.Notes()
	notes = slices.DeleteFunc(notes, func(n graph.Note) bool {
		return n.Entity.Mentions < minNoteMentions || len(n.Entity.Evidence) == 0
	})
	slices.SortStableFunc(notes, func(a, b graph.Note) int { return cmp.Compare(b.Entity.Salience, a.Entity.Salience) })
	notes = notes[:min(len(notes), maxEntityNotes)]
	for _, n := range notes {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		path := graph.NotePath(n.Entity)
		current, err := v.Read(path)
		if err != nil {
			return out, fmt.Errorf("entity notes: read %s: %w", path, err)
		}
		if current != nil {
			if old, err := graph.ParseNote(n.Entity.ID, current); err == nil && sameNote(old, n) {
				out.Unchanged++
				continue
			}
		}
		p := vault.Proposal{Op: vault.OpCreate, Path: path, Content: string(graph.RenderNote(n)), Author: EntityNotesAuthor,
			Reason: fmt.Sprintf("%s, a %s named %d times in the conversation", n.Entity.Name, n.Entity.Type, n.Entity.Mentions)}
		if current != nil {
			p.Op, p.Base = vault.OpUpdate, vault.Hash(current)
		}
		for _, id := range n.Entity.Evidence {
			p.Sources = append(p.Sources, vault.Source{Thread: MainConversation, Turn: id})
		}
		res, err := h.Propose(ctx, p)
		if err != nil {
			return out, fmt.Errorf("entity notes: %s: %w", path, err)
		}
		switch res.Decision {
		case DecisionApplied:
			out.Applied++
		case DecisionQueued:
			out.Queued++
		default:
			out.Rejected++
		}
	}
	return out, nil
}

// sameNote reports whether a note already says what n says, counters
// aside: type, name, aliases, relations (type and other end) and the day
// last seen.
func sameNote(old, n graph.Note) bool {
	a, b := old.Entity, n.Entity
	if a.Type != b.Type || a.Name != b.Name || !slices.Equal(a.Aliases, b.Aliases) ||
		a.LastSeen.UTC().Truncate(24*time.Hour) != b.LastSeen.UTC().Truncate(24*time.Hour) {
		return false
	}
	edges := func(n graph.Note) []string {
		var out []string
		for _, r := range n.Relations {
			other := r.To
			if other == n.Entity.ID {
				other = r.From
			}
			out = append(out, r.Type+" "+other)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(edges(old), edges(n))
}
