package hearth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/curator"
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
	if ok, err := h.entityNotesApplied(); err != nil || !ok {
		return out, err
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

// entityNotesApplied reports whether the vault's policy applies
// entities/ on its own: only then are entity notes proposed, as derived
// notes must not fill the owner's inbox.
func (h *Hearth) entityNotesApplied() (bool, error) {
	pol, err := h.cfg.Vault.Policy()
	if err != nil {
		return false, fmt.Errorf("entity notes: %w", err)
	}
	return slices.ContainsFunc(pol.AutoApply.Paths, func(p string) bool { return p == graph.EntityDir+"/" || p == graph.EntityDir }), nil
}

// sameNote reports whether a note already says what n says, counters
// aside: type (and whether it is fixed), name, aliases, relations (type
// and other end; for the curator's, direction and evidence too) and the
// day last seen.
func sameNote(old, n graph.Note) bool {
	a, b := old.Entity, n.Entity
	if a.Type != b.Type || a.Name != b.Name || a.Fixed != b.Fixed || !slices.Equal(a.Aliases, b.Aliases) ||
		a.LastSeen.UTC().Truncate(24*time.Hour) != b.LastSeen.UTC().Truncate(24*time.Hour) {
		return false
	}
	edges := func(n graph.Note) []string {
		var out []string
		for _, r := range n.Relations {
			other, dir := r.To, "to"
			if other == n.Entity.ID {
				other, dir = r.From, "from"
			}
			if r.Curated { // the curator's: its direction and evidence count
				out = append(out, r.Type+" "+dir+" "+other+" curated "+strings.Join(r.Evidence, ","))
				continue
			}
			out = append(out, r.Type+" "+other)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(edges(old), edges(n))
}

// writeCuratedNotes keeps what the curator extracted in the vault, where
// the graph gets it back at start (ReadEntityNotes, graph.AddNotes): the
// journal derives only the extractor's names, so without the notes a
// rebuild would drop the curator's types and relations. The note of each
// entity it named, and of each end of a relation it stated, is proposed
// as the curator under the vault's policy, citing the records the
// curator cited, when it is missing or says something new; as with
// WriteEntityNotes, only when the policy applies entities/ on its own
// (a vault whose policy predates them keeps them in the index only).
func (h *Hearth) writeCuratedNotes(ctx context.Context, thread string, res curator.Result) (outs []ProposalOutcome) {
	g := h.entityGraph()
	if g == nil || h.cfg.Vault == nil || len(res.Entities)+len(res.Relations) == 0 {
		return nil
	}
	if ok, err := h.entityNotesApplied(); !ok {
		if err != nil {
			h.log.Warn("curator: entity notes not written", "err", err)
		}
		return nil
	}
	var ids []string
	sources := map[string][]string{} // entity id → the records cited about it
	touch := func(name string, src []string) {
		id := g.Resolve(name)
		if id == "" {
			return
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		for _, s := range src {
			if !slices.Contains(sources[id], s) {
				sources[id] = append(sources[id], s)
			}
		}
	}
	for _, e := range res.Entities {
		touch(e.Name, e.Sources)
	}
	for _, r := range res.Relations {
		touch(r.From, r.Sources)
		touch(r.To, r.Sources)
	}
	for _, id := range ids {
		n, ok := g.Note(id)
		if !ok {
			continue
		}
		p := graph.NotePath(n.Entity)
		current, err := h.cfg.Vault.Read(p)
		if err != nil {
			h.log.Warn("curator: entity note unreadable", "path", p, "err", err)
			continue
		}
		if current != nil {
			if old, err := graph.ParseNote(n.Entity.ID, current); err == nil && sameNote(old, n) {
				continue
			}
		}
		prop := vault.Proposal{Op: vault.OpCreate, Path: p, Content: string(graph.RenderNote(n)), Author: vault.AuthorCurator,
			Reason: fmt.Sprintf("the curator named %s, a %s", n.Entity.Name, n.Entity.Type)}
		if current != nil {
			prop.Op, prop.Base = vault.OpUpdate, vault.Hash(current)
		}
		for _, s := range sources[id] {
			prop.Sources = append(prop.Sources, vault.Source{Thread: thread, Turn: s})
		}
		out, err := h.Propose(ctx, prop)
		if err != nil {
			h.log.Warn("curator: entity note not proposed", "path", p, "err", err)
			out = ProposalOutcome{Path: p, Decision: DecisionRejected, Why: err.Error()}
		}
		outs = append(outs, out)
	}
	return outs
}

// NoteReader reads the vault's entity notes: Dir is the vault's root,
// Read a file of it.
type NoteReader interface {
	Dir() string
	Read(path string) ([]byte, error)
}

// ReadEntityNotes reads the vault's entity notes
// (entities/<type>/<slug>.md) that hold what the journal does not derive
// (a fixed type, a relation the curator stated), for the graph to merge
// at each load (graph.LiveOptions.Notes). A note that does not parse is
// passed over; no entities/ folder is no notes.
func ReadEntityNotes(ctx context.Context, v NoteReader) ([]graph.Note, error) {
	types, err := os.ReadDir(filepath.Join(v.Dir(), graph.EntityDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("entity notes: %w", err)
	}
	var out []graph.Note
	for _, t := range types {
		if !t.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(v.Dir(), graph.EntityDir, t.Name()))
		if err != nil {
			return out, fmt.Errorf("entity notes: %w", err)
		}
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			slug, ok := strings.CutSuffix(f.Name(), ".md")
			if !ok || !f.Type().IsRegular() {
				continue
			}
			b, err := v.Read(path.Join(graph.EntityDir, t.Name(), f.Name()))
			if err != nil || b == nil {
				continue
			}
			n, err := graph.ParseNote(slug, b)
			if err != nil {
				continue
			}
			if n.Entity.Fixed || slices.ContainsFunc(n.Relations, func(r graph.Relation) bool { return r.Curated }) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}
