package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// typedEntities are the active notes whose type is an entity type of
// arch, as entities named by their titles.
func typedEntities(arch graph.Archetype, notes []vault.NoteInfo) []graph.Entity {
	var out []graph.Entity
	for _, n := range notes {
		if n.Err != "" || n.Status != vault.Active || strings.TrimSpace(n.Title) == "" {
			continue
		}
		if !slices.ContainsFunc(arch.EntityTypes, func(t graph.EntityType) bool { return t.Name == n.Type }) {
			continue
		}
		out = append(out, graph.Entity{Name: n.Title, Type: n.Type, FirstSeen: n.UpdatedAt, LastSeen: n.UpdatedAt})
	}
	return out
}

// archetype is the vault's archetype (config/archetype.yml), else the
// companion archetype hearth ships: an unreadable or invalid file is
// logged and the default used.
func archetype(rootDir string, log *slog.Logger) graph.Archetype {
	b, err := os.ReadFile(filepath.Join(rootDir, filepath.FromSlash(graph.ArchetypeFile)))
	if err == nil {
		a, perr := graph.ParseArchetype(b)
		if perr == nil {
			return a
		}
		log.Warn("the vault's archetype is not valid: using the default companion archetype", "file", graph.ArchetypeFile, "err", perr)
	} else if !errors.Is(err, fs.ErrNotExist) {
		log.Warn("the vault's archetype is unreadable: using the default companion archetype", "err", err)
	}
	b, err = fs.ReadFile(data.Vault(), graph.ArchetypeFile)
	if err != nil {
		panic("data: the companion archetype is missing: " + err.Error())
	}
	a, err := graph.ParseArchetype(b)
	if err != nil {
		panic("data: the companion archetype does not parse: " + err.Error())
	}
	return a
}

// startEntities loads the entity graph of root in the background (its
// index under the root's index directory, caught up with j or rebuilt
// from it); stop ends it and waits until it has saved.
//
// After each periodic save the vault's entity notes are brought up to
// date through core, once it is set (see hearth.WriteEntityNotes).
//
// The knowledge notes (the curator's and the owner's) whose type is an
// entity type of the archetype join the graph as typed entities: a
// person note titled "Ana Lima" makes Ana Lima a person. The entity
// notes' curated entities and relations (what the curator extracted,
// which the journal does not derive) join them at each load.
func startEntities(ctx context.Context, root *memory.Root, j *journal.Journal, vlt *vault.Vault, core *atomic.Pointer[hearth.Hearth], log *slog.Logger) (live *graph.Live, stop func()) {
	arch := archetype(root.Dir(), log)
	live = graph.NewLive(graph.LiveOptions{
		IndexDir:  root.IndexDir(),
		Archetype: arch,
		Typed: func(ctx context.Context) ([]graph.Entity, error) {
			if vlt == nil {
				return nil, nil
			}
			notes, err := vlt.List(ctx, vault.ListFilter{Prefix: vault.KnowledgeDir + "/"})
			if err != nil {
				return nil, err
			}
			return typedEntities(arch, notes), nil
		},
		Notes: func(ctx context.Context) ([]graph.Note, error) {
			if vlt == nil {
				return nil, nil
			}
			return hearth.ReadEntityNotes(ctx, vlt)
		},
		Journal: j,
		Session: hearth.MainConversation,
		Saved: func(ctx context.Context) {
			h := core.Load()
			if h == nil {
				return
			}
			res, err := h.WriteEntityNotes(ctx)
			if err != nil {
				log.Warn("entity notes: not brought up to date", "err", err)
				return
			}
			if res.Applied+res.Queued+res.Rejected > 0 {
				log.Info("entity notes written", "applied", res.Applied, "queued", res.Queued, "rejected", res.Rejected)
			}
		},
		Log: log,
	})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := live.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("entity graph stopped", "err", err)
		}
	}()
	return live, func() {
		cancel()
		<-done
	}
}
