package graph

import (
	"slices"
	"testing"
)

// Forget drops the forgotten events' evidence at once: what only they
// named leaves, the rest loses their mentions and evidence; and the
// result names the same entities and relations as a rebuild without
// them.
func TestForget(t *testing.T) {
	a := companion(t)
	g := build(a, events())
	g.Forget([]string{"e2", "e4"}) // Project Atlas and Porto are named only there
	for _, id := range []string{"project-atlas", "porto"} {
		if e, ok := g.Entity(id); ok {
			t.Errorf("%s still known: %+v", id, e)
		}
		if g.Resolve(id) != "" {
			t.Errorf("%s still resolves", id)
		}
	}
	for _, e := range g.Entities() {
		for _, ev := range e.Evidence {
			if ev == "e2" || ev == "e4" {
				t.Errorf("%s keeps evidence %s", e.ID, ev)
			}
		}
	}
	for _, r := range g.Relations() {
		if slices.Contains(r.Evidence, "e2") || slices.Contains(r.Evidence, "e4") || r.To == "porto" || r.From == "porto" {
			t.Errorf("relation %+v keeps what was forgotten", r)
		}
	}
	if _, ok := g.Event("e4"); ok {
		t.Error("event e4 still kept")
	}
	var rest []Event
	for _, e := range events() {
		if e.ID != "e2" && e.ID != "e4" {
			rest = append(rest, e)
		}
	}
	want := build(a, rest)
	ids := func(g *Graph) (es, rs []string) {
		for _, e := range g.Entities() {
			es = append(es, e.ID)
		}
		for _, r := range g.Relations() {
			rs = append(rs, r.From+" "+r.Type+" "+r.To)
		}
		return es, rs
	}
	ge, gr := ids(g)
	we, wr := ids(want)
	if !slices.Equal(ge, we) || !slices.Equal(gr, wr) {
		t.Errorf("after Forget: entities %q relations %q; a rebuild: %q %q", ge, gr, we, wr)
	}
	if e, _ := g.Entity("ana-lima"); e.Mentions != 2 {
		t.Errorf("Ana's mentions %d, want 2 (e1, e5)", e.Mentions)
	}
}
