package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/mnemo/mnemo/memory/journal"
)

// Scanner reads the journal from a record on: journal.Journal.ScanAfter.
type Scanner interface {
	ScanAfter(ctx context.Context, id string, fn func(journal.Record) error) error
}

// LiveOptions configure a Live graph.
type LiveOptions struct {
	IndexDir  string // where IndexFile is kept
	Archetype Archetype
	Journal   Scanner
	Session   string // the session events are of
	// SaveEvery saves the index after this many new events (default
	// 1,000: what is not saved is caught up from the journal at the next
	// start); Run saves what is left on the way out.
	SaveEvery int
	// Loaded, when set, is called each time the graph is loaded or
	// rebuilt and caught up, with its number of entities.
	Loaded func(entities int)
	// Saved, when set, is called after each save while Run runs (not
	// the last, on the way out): where the vault's entity notes are
	// brought up to date.
	Saved func(ctx context.Context)
	// Typed, when set, gives typed entities from outside the journal (the
	// curator's notes about people, places and projects in the vault):
	// merged with their type fixed at each load and after each save.
	Typed func(ctx context.Context) ([]Entity, error)
	// Notes, when set, gives the vault's entity notes: what the curator
	// stated there (typed entities, relations) is merged (AddNotes) at
	// each load and after each save, so a rebuild keeps it.
	Notes func(ctx context.Context) ([]Note, error)
	Log   *slog.Logger
}

// Live is the graph of a running hearth: loaded from its index, caught up
// with the journal from the index's last event (or rebuilt from the whole
// journal when the index is missing or stale), then fed every committed
// record. Until Run has caught up, queries see an empty or partial graph
// and records told are held back. A tombstone (a forget) rebuilds it from
// the journal, which no longer has the forgotten records.
type Live struct {
	o   LiveOptions
	log *slog.Logger

	mu      sync.Mutex
	g       *Graph
	ready   bool
	held    []journal.Record
	unsaved int
	rebuild chan struct{}
	save    chan struct{}
}

// NewLive returns a Live graph; Run loads and feeds it.
func NewLive(o LiveOptions) *Live {
	if o.SaveEvery <= 0 {
		o.SaveEvery = 1000
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Live{o: o, log: log, g: New(o.Archetype), rebuild: make(chan struct{}, 1), save: make(chan struct{}, 1)}
}

// Graph is the current graph.
func (l *Live) Graph() *Graph {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.g
}

func (l *Live) path() string { return filepath.Join(l.o.IndexDir, IndexFile) }

// Run loads or rebuilds the graph, then saves it as it grows and rebuilds
// it after a forget, until ctx is done; it saves once more on the way out.
func (l *Live) Run(ctx context.Context) error {
	if err := l.load(ctx, false); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return l.Save()
		case <-l.save:
			if err := l.Save(); err != nil {
				l.log.Warn("entity graph: save failed", "err", err)
			} else if l.o.Saved != nil {
				l.o.Saved(ctx)
			}
			l.addTyped(ctx, l.Graph())
		case <-l.rebuild:
			if err := l.load(ctx, true); err != nil {
				return err
			}
		}
	}
}

// load loads the saved graph (unless fresh) and catches it up with the
// journal, or builds it from the whole journal; then it takes the
// records held back meanwhile.
func (l *Live) load(ctx context.Context, fresh bool) error {
	l.mu.Lock()
	l.ready = false
	l.mu.Unlock()
	var g *Graph
	var err error
	if !fresh {
		g, err = Load(l.path(), l.o.Archetype)
	}
	if fresh || err != nil {
		if err != nil && !errors.Is(err, ErrStale) {
			l.log.Warn("entity graph: index unreadable, rebuilding", "err", err)
		}
		g = New(l.o.Archetype)
	}
	from, _ := g.Last()
	again := false
	err = l.o.Journal.ScanAfter(ctx, from, func(r journal.Record) error {
		if r.IsTombstone() {
			again = from != "" // the saved graph may hold what it forgets
			return nil
		}
		if ev, ok := FromRecord(r, l.o.Session); ok {
			g.Add(ev)
		}
		return nil
	})
	if err != nil {
		// Records told from now on are counted, not held without bound;
		// this partial graph is never saved (Run returns).
		l.mu.Lock()
		l.held, l.ready = nil, true
		l.mu.Unlock()
		return fmt.Errorf("entity graph: read journal: %w", err)
	}
	if again {
		return l.load(ctx, true)
	}
	l.addTyped(ctx, g)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.g = g
	for _, r := range l.held {
		l.addLocked(r)
	}
	l.held = nil
	l.ready = true
	l.log.Info("entity graph ready", "entities", len(g.entities), "relations", len(g.relations))
	if l.o.Loaded != nil {
		l.o.Loaded(len(g.entities))
	}
	return nil
}

// addTyped merges the typed entities and the entity notes' curated
// entities and relations into g; AddEntity and AddNotes are idempotent.
func (l *Live) addTyped(ctx context.Context, g *Graph) {
	if l.o.Typed != nil {
		ents, err := l.o.Typed(ctx)
		if err != nil {
			l.log.Warn("entity graph: typed entities unavailable", "err", err)
		}
		for _, e := range ents {
			g.AddEntity(e)
		}
	}
	if l.o.Notes != nil {
		notes, err := l.o.Notes(ctx)
		if err != nil {
			l.log.Warn("entity graph: entity notes unavailable", "err", err)
		}
		g.AddNotes(notes)
	}
}

// Observe is told every committed record; it never blocks on I/O.
func (l *Live) Observe(r journal.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		l.held = append(l.held, r)
		return
	}
	l.addLocked(r)
}

func (l *Live) addLocked(r journal.Record) {
	if r.IsTombstone() {
		signal(l.rebuild)
		return
	}
	if last, _ := l.g.Last(); last != "" && r.ID <= last {
		return // already read from the journal
	}
	ev, ok := FromRecord(r, l.o.Session)
	if !ok {
		return
	}
	l.g.Add(ev)
	if l.unsaved++; l.unsaved >= l.o.SaveEvery {
		l.unsaved = 0
		signal(l.save)
	}
}

// Forget rebuilds the graph from the journal: what the forgotten records
// said leaves it, and the index on disk is rewritten.
func (l *Live) Forget() { signal(l.rebuild) }

// Save writes the graph's index.
func (l *Live) Save() error {
	g := l.Graph()
	if err := g.Save(l.path()); err != nil {
		return err
	}
	return nil
}

// Remove deletes the saved index (purge): the next Run rebuilds it.
func (l *Live) Remove() error {
	if err := os.Remove(l.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("entity graph: %w", err)
	}
	return nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
