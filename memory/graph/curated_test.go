package graph

import (
	"slices"
	"testing"
	"time"
)

// curatedGraph is a graph of one turn with what a curator said of it:
// Ana Lima (a person, also Ana) lives_in Lisbon (a place), evidence e1.
func curatedGraph(t *testing.T, a Archetype) *Graph {
	t.Helper()
	g := New(a)
	g.Add(Event{ID: "e1", TS: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC), Type: EventUser, Text: "I had lunch with Ana Lima in Lisbon."})
	g.AddEntity(Entity{Name: "Ana Lima", Type: "person", Aliases: []string{"Ana"}})
	g.AddEntity(Entity{Name: "Lisbon", Type: "place"})
	// The turn never names it; the curator cites it (its evidence, which
	// a forget of e1 finds in its note).
	g.AddEntity(Entity{Name: "Manteigaria", Type: "place", Evidence: []string{"e1"}})
	if !g.AddRelation("Ana", "Lisbon", "lives_in", []string{"e1"}) {
		t.Fatal("AddRelation refused")
	}
	return g
}

// notesOf renders and parses back the notes of ids, as the vault keeps
// them.
func notesOf(t *testing.T, g *Graph, ids ...string) []Note {
	t.Helper()
	var out []Note
	for _, id := range ids {
		n, ok := g.Note(id)
		if !ok {
			t.Fatalf("no note for %s", id)
		}
		back, err := ParseNote(id, RenderNote(n))
		if err != nil {
			t.Fatalf("%s: %v\n%s", id, err, RenderNote(n))
		}
		out = append(out, back)
	}
	return out
}

// TestAddNotes: a graph rebuilt from the journal gets the curator's
// entities (type fixed, aliases) and relations (direction, evidence,
// count) back from their notes, once however often they are merged and
// whichever end's note lists them; types the archetype does not have are
// passed over.
func TestAddNotes(t *testing.T) {
	a := companion(t)
	notes := notesOf(t, curatedGraph(t, a), "ana-lima", "lisbon", "manteigaria")
	for _, n := range notes[:2] {
		if !n.Entity.Fixed || len(n.Relations) == 0 {
			t.Fatalf("note %+v lost what the curator said", n)
		}
	}
	if r := notes[1].Relations; !slices.ContainsFunc(r, func(r Relation) bool {
		return r.Type == "lives_in" && r.From == "ana-lima" && r.To == "lisbon" && r.Curated
	}) {
		t.Fatalf("Lisbon's note has the relation the wrong way: %+v", r)
	}
	foreign := Note{Entity: Entity{ID: "maharana", Type: "author", Name: "Maharana", Fixed: true},
		Relations: []Relation{{From: "maharana", To: "lisbon", Type: "wrote", Evidence: []string{"e1"}, Curated: true}}}
	for _, tc := range []struct {
		name   string
		merges [][]Note
	}{
		{"once", [][]Note{notes}},
		{"twice", [][]Note{notes, notes}},
		{"each end alone", [][]Note{notes[:1], notes[1:2], notes[2:]}},
		{"with a foreign archetype's note", [][]Note{append(slices.Clone(notes), foreign)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(a)
			g.Add(Event{ID: "e1", TS: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC), Type: EventUser, Text: "I had lunch with Ana Lima in Lisbon."})
			for _, ns := range tc.merges {
				g.AddNotes(ns)
			}
			ana, ok := g.Entity(g.Resolve("Ana"))
			if !ok || ana.ID != "ana-lima" || ana.Type != "person" || !ana.Fixed || ana.Mentions != 1 {
				t.Errorf("Ana: %+v", ana)
			}
			var lives []Relation
			for _, r := range g.Relations() {
				if r.Type == "lives_in" {
					lives = append(lives, r)
				}
			}
			if len(lives) != 1 || lives[0].From != "ana-lima" || lives[0].To != "lisbon" || lives[0].Count != 1 ||
				!slices.Equal(lives[0].Evidence, []string{"e1"}) || !lives[0].Curated {
				t.Errorf("lives_in: %+v", lives)
			}
			if m, ok := g.Entity("manteigaria"); !ok || m.Type != "place" || !m.Fixed || !slices.Equal(m.Evidence, []string{"e1"}) {
				t.Errorf("Manteigaria: %+v", m)
			}
			if _, ok := g.Entity("maharana"); ok || len(g.Find(Query{Type: "author"})) != 0 {
				t.Error("a type the archetype does not have joined the graph")
			}
		})
	}
}
