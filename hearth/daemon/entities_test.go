package daemon

import (
	"io"
	"log/slog"
	"testing"

	"github.com/mnemo/mnemo/memory/graph"
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
