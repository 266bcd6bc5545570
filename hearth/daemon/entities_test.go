package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// TestTypedEntities: the active knowledge notes whose type is an entity
// type of the archetype (the curator's notes about people, projects) are
// typed entities named by their titles; others are not.
func TestTypedEntities(t *testing.T) {
	arch := archetype(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if arch.Name != "companion" {
		t.Fatalf("without a vault archetype: %q, want the shipped companion", arch.Name)
	}
	notes := []vault.NoteInfo{
		{Title: "Ana Lima", Type: "person", Status: vault.Active},
		{Title: "mnemo", Type: "project", Status: vault.Active},
		{Title: "Old friend", Type: "person", Status: vault.Deprecated},
		{Title: "Tea", Type: "preference", Status: vault.Active},
		{Title: "Broken", Type: "person", Status: vault.Active, Err: "does not parse"},
		{Title: " ", Type: "person", Status: vault.Active},
	}
	got := typedEntities(arch, notes)
	want := []string{"person:Ana Lima", "project:mnemo"}
	if len(got) != len(want) {
		t.Fatalf("typedEntities = %+v, want %q", got, want)
	}
	for i, e := range got {
		if e.Type+":"+e.Name != want[i] {
			t.Errorf("%d: %s:%s, want %s", i, e.Type, e.Name, want[i])
		}
	}
	// A typed entity keeps its type against the extractor's cues.
	g := graph.New(arch)
	g.AddEntity(got[1])
	g.Add(graph.Event{ID: "e1", Type: graph.EventUser, Text: "I met mnemo in Lisbon. Mnemo again."})
	if e := g.Find(graph.Query{Name: "mnemo"}); len(e) != 1 || e[0].Type != "project" {
		t.Errorf("mnemo after a mention = %+v, want a project", e)
	}
}

// TestStartEntitiesReadsCuratedNotes: the daemon's graph, rebuilt from a
// journal that never names them that way, gets the curator's entities
// and relations back from the vault's entity notes.
func TestStartEntitiesReadsCuratedNotes(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	root, err := memory.Open(ctx, t.TempDir(), data.Defaults(), log)
	if err != nil {
		t.Fatal(err)
	}
	vlt, err := vault.Open(ctx, root.Dir(), data.Vault(), log)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(root.ThreadsDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	r, err := j.Append(ctx, journal.Record{Role: memory.RoleUser, Text: "I had lunch with Ana Lima in Lisbon.", Mode: memory.ModeText})
	if err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{
		"entities/person/ana-lima.md": "---\ntype: person\nname: Ana Lima\naliases: [Ana]\nmentions: 1\nsalience: 0.5\nfixed: true\nrelations:\n  - {type: lives_in, to: lisbon, weight: 0.283, evidence: [" + r.ID + "], curated: true}\n---\n",
		"entities/place/lisbon.md":    "---\ntype: place\nname: Lisbon\nmentions: 1\nsalience: 0.5\nfixed: true\nrelations:\n  - {type: lives_in, from: ana-lima, weight: 0.283, evidence: [" + r.ID + "], curated: true}\n---\n",
	} {
		full := filepath.Join(root.Dir(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var core atomic.Pointer[hearth.Hearth]
	live, stop := startEntities(ctx, root, j, vlt, &core, log)
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g := live.Graph()
		if id := g.Resolve("Ana"); id != "" {
			rel := g.Related(id, 10)
			i := slices.IndexFunc(rel, func(n graph.Neighbor) bool { return n.Relation.Type == "lives_in" })
			if i < 0 || rel[i].Entity.ID != "lisbon" || !slices.Equal(rel[i].Relation.Evidence, []string{r.ID}) {
				t.Fatalf("Ana's relations: %+v", rel)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the graph never knew Ana")
		}
		runtime.Gosched()
	}
}
