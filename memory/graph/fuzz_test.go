package graph

import (
	"os"
	"testing"
)

func FuzzParseArchetype(f *testing.F) {
	if b, err := os.ReadFile("../../data/vault/config/archetype.yml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseArchetype(b)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("parsed archetype does not validate: %v", err)
		}
		g := New(a)
		g.Add(Event{ID: "e", Type: EventUser, Text: "Ana met Rui in Lisbon"})
		_ = g.Expand("ana", a.Context.Expansion.Related)
	})
}

func FuzzParseNote(f *testing.F) {
	f.Add([]byte("---\ntype: person\nname: Ana\nmentions: 2\nsalience: 0.5\nrelations:\n  - {type: knows, to: rui, weight: 0.5, evidence: [e1]}\n---\n# Ana\n"))
	f.Add([]byte("---\ntype: place\nname: Lisbon\nmentions: 1\nsalience: 0.5\nfixed: true\nrelations:\n  - {type: lives_in, from: ana-lima, weight: 0.3, evidence: [e1], curated: true}\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseNote("x", b)
		if err != nil {
			return
		}
		back, err := ParseNote("x", RenderNote(n))
		if err != nil {
			t.Fatalf("a parsed note does not parse once rendered: %v", err)
		}
		if back.Entity.Type != n.Entity.Type || back.Entity.Fixed != n.Entity.Fixed || len(back.Relations) != len(n.Relations) {
			t.Fatalf("round trip changed the note: %+v → %+v", n, back)
		}
		for i, r := range n.Relations {
			if b := back.Relations[i]; b.From != r.From || b.To != r.To || b.Type != r.Type || b.Curated != r.Curated {
				t.Fatalf("round trip changed relation %d: %+v → %+v", i, r, b)
			}
		}
	})
}

func FuzzExtract(f *testing.F) {
	f.Add("I had lunch with Ana Lima in Lisbon.")
	f.Add("'s ’s ... A")
	f.Fuzz(func(t *testing.T, s string) {
		for _, sp := range Extract(s) {
			if sp.Name == "" {
				t.Fatalf("empty span from %q", s)
			}
		}
		g := New(Archetype{Name: "x", EntityTypes: []EntityType{{Name: "a"}}, RelationTypes: []RelationType{{Name: "r"}}})
		g.Add(Event{ID: "e", Text: s, Type: EventUser})
		_ = g.Mentioned(s)
	})
}
