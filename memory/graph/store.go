package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// IndexFile is the graph's file under the memory root's index directory.
const IndexFile = "graph.json"

// indexVersion changes when the file's form or the extractor does: a
// graph saved by another version is stale and rebuilt.
const indexVersion = 2

// ErrStale says a saved graph is missing, of another version, or of
// another archetype: rebuild it from the journal.
var ErrStale = errors.New("graph index missing or stale")

type snapshot struct {
	Version   int               `json:"version"`
	Archetype string            `json:"archetype"` // the archetype's hash
	Last      string            `json:"last"`
	Count     int               `json:"count"`
	Now       time.Time         `json:"now"`
	LastUser  string            `json:"last_user,omitempty"`
	Calls     map[string]string `json:"calls,omitempty"`
	Alias     map[string]string `json:"alias"`
	Entities  []*Entity         `json:"entities"`
	Relations []*Relation       `json:"relations"`
	Events    []EventMeta       `json:"events"` // oldest first
}

// Hash identifies an archetype's content: a graph built with another is
// stale.
func (a Archetype) Hash() string {
	b, _ := json.Marshal(a)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Save writes g to path atomically (a temporary file, fsync'd, renamed).
func (g *Graph) Save(path string) error {
	g.mu.Lock()
	for _, e := range g.entities {
		if !e.Fixed { // a Fixed one's Salience is the curator's floor
			e.Salience = g.salienceOf(e)
		}
	}
	s := snapshot{Version: indexVersion, Archetype: g.arch.Hash(), Last: g.last, Count: g.count, Now: g.now,
		LastUser: g.lastUser, Calls: g.calls, Alias: g.alias}
	for _, id := range g.order {
		s.Events = append(s.Events, g.events[id])
	}
	for _, e := range g.entities {
		s.Entities = append(s.Entities, e)
	}
	for _, r := range g.relations {
		s.Relations = append(s.Relations, r)
	}
	b, err := json.Marshal(s)
	g.mu.Unlock()
	if err != nil {
		return fmt.Errorf("graph: encode: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".graph-*")
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("graph: write: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("graph: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	return nil
}

// Load reads the graph saved at path for arch; ErrStale when there is
// none, or it was built by another version or archetype.
func Load(path string, arch Archetype) (*Graph, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrStale
	}
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStale, err)
	}
	g := New(arch)
	if s.Version != indexVersion || s.Archetype != g.arch.Hash() {
		return nil, ErrStale
	}
	g.last, g.count, g.now, g.lastUser = s.Last, s.Count, s.Now, s.LastUser
	if s.Calls != nil {
		g.calls = s.Calls
	}
	if s.Alias != nil {
		g.alias = s.Alias
	}
	for _, e := range s.Events {
		g.keepEvent(e)
	}
	for _, e := range s.Entities {
		if e != nil && e.ID != "" {
			g.entities[e.ID] = e
		}
	}
	for _, r := range s.Relations {
		if r == nil || g.entities[r.From] == nil || g.entities[r.To] == nil {
			continue
		}
		k := relKey(r.From, r.Type, r.To)
		g.relations[k] = r
		g.adj[r.From] = append(g.adj[r.From], r)
		g.adj[r.To] = append(g.adj[r.To], r)
	}
	g.recount()
	return g, nil
}
