package graph

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// synthetic returns n user turns over about a year, each naming two or
// three of people entities (Zipf: a few often, most rarely), so that the
// graph is of the size a long journal gives.
func synthetic(n, people int, seed uint64) []Event {
	r := rand.New(rand.NewPCG(seed, seed))
	z := rand.NewZipf(r, 1.2, 1, uint64(people-1))
	evs := make([]Event, n)
	for i := range evs {
		text := "Yesterday I met"
		for range 2 + r.IntN(2) {
			text += fmt.Sprintf(" Person%d and", z.Uint64())
		}
		text += " then Place" + fmt.Sprint(z.Uint64()%500) + " again."
		evs[i] = Event{ID: fmt.Sprintf("e%09d", i), Type: EventUser, Actor: "user",
			TS: t0.Add(time.Duration(i) * 5 * time.Minute), Text: text}
	}
	return evs
}

// BenchmarkRelated is one entity expansion's graph lookup on a graph of
// 100,000 turns: what /v1/query pays per entity its query names.
func BenchmarkRelated(b *testing.B) {
	g := build(companion(b), synthetic(100_000, 20_000, 1))
	ids := []string{"person1", "person17", "person420", "place3"}
	b.Logf("%d entities, %d relations", len(g.entities), len(g.relations))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if len(g.Related(ids[i%len(ids)], 10)) == 0 {
			b.Fatal("no neighbours")
		}
	}
}

// fullSalience is what every entity's salience is, recomputed from the
// whole graph: the reference the salience read must equal.
func fullSalience(g *Graph) map[string]float64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	maxM := 0
	for _, e := range g.entities {
		maxM = max(maxM, e.Mentions)
	}
	out := map[string]float64{}
	for id, e := range g.entities {
		s := g.salience(e, maxM)
		if e.Fixed {
			s = max(s, e.Salience)
		}
		out[id] = s
	}
	return out
}

// fullRelated is Related by sorting every neighbour on fullSalience.
func fullRelated(g *Graph, id string, limit int) []Neighbor {
	sal := fullSalience(g)
	g.mu.RLock()
	defer g.mu.RUnlock()
	var all []Neighbor
	for _, r := range g.adj[id] {
		other := r.To
		if other == id {
			other = r.From
		}
		e := g.entities[other]
		if e == nil {
			continue
		}
		c := *e
		c.Aliases, c.Evidence, c.Votes, c.Salience = slices.Clone(e.Aliases), slices.Clone(e.Evidence), nil, sal[other]
		rc := *r
		rc.Evidence = slices.Clone(r.Evidence)
		all = append(all, Neighbor{Entity: c, Relation: rc})
	}
	slices.SortFunc(all, func(a, b Neighbor) int {
		return cmp.Or(cmp.Compare(b.Relation.Weight, a.Relation.Weight), cmp.Compare(b.Entity.Salience, a.Entity.Salience),
			cmp.Compare(a.Entity.ID, b.Entity.ID), cmp.Compare(a.Relation.Type, b.Relation.Type), cmp.Compare(a.Relation.From, b.Relation.From))
	})
	return all[:min(len(all), limit)]
}

// TestSalienceEqualsFullRecompute changes a graph step by step (turns,
// curator entities and relations, forgets, a save and load) and checks
// after each that every read's salience, and Related's order, equal a
// recompute from the whole graph.
func TestSalienceEqualsFullRecompute(t *testing.T) {
	a := companion(t)
	path := filepath.Join(t.TempDir(), IndexFile)
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 99))
		evs := synthetic(600, 40, seed)
		g := New(a)
		var added []string
		check := func(step string) {
			t.Helper()
			want := fullSalience(g)
			got := map[string]float64{}
			for _, e := range g.Entities() {
				got[e.ID] = e.Salience
			}
			if !maps.Equal(got, want) {
				t.Fatalf("seed %d, %s: Entities' salience differs from a full recompute:\n got %v\nwant %v", seed, step, got, want)
			}
			for id, s := range want {
				if e, _ := g.Entity(id); e.Salience != s {
					t.Fatalf("seed %d, %s: Entity(%s).Salience = %v, want %v", seed, step, id, e.Salience, s)
				}
			}
			for _, e := range g.Find(Query{Name: "person", Limit: 5}) {
				if e.Salience != want[e.ID] {
					t.Fatalf("seed %d, %s: Find's %s salience = %v, want %v", seed, step, e.ID, e.Salience, want[e.ID])
				}
			}
			for _, id := range []string{"person1", "person2", "person7", "ana", "place3"} {
				for _, limit := range []int{1, 3, 10} {
					if got, want := g.Related(id, limit), fullRelated(g, id, limit); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
						t.Fatalf("seed %d, %s: Related(%s, %d) =\n%+v\nwant\n%+v", seed, step, id, limit, got, want)
					}
				}
			}
		}
		for i, ev := range evs {
			g.Add(ev)
			added = append(added, ev.ID)
			switch {
			case i%97 == 0:
				check(fmt.Sprintf("after event %d", i))
			case i%131 == 0:
				g.AddEntity(Entity{Name: "Ana", Type: "person", Aliases: []string{"Person1"}, Mentions: r.IntN(400), Salience: r.Float64()})
				g.AddEntity(Entity{Name: fmt.Sprintf("Person%d", r.IntN(40)), Type: "person", Mentions: -r.IntN(3), Salience: r.Float64() / 2})
				g.AddRelation("Ana", fmt.Sprintf("Person%d", r.IntN(40)), "knows", []string{ev.ID})
				check(fmt.Sprintf("after curator entities at %d", i))
			case i%173 == 0:
				var gone []string
				for range 20 {
					gone = append(gone, added[r.IntN(len(added))])
				}
				g.Forget(gone)
				check(fmt.Sprintf("after forgetting at %d", i))
			}
		}
		check("at the end")
		if err := g.Save(path); err != nil {
			t.Fatal(err)
		}
		before := g.Entities()
		if g, err := Load(path, a); err != nil {
			t.Fatal(err)
		} else if after := g.Entities(); !reflect.DeepEqual(after, before) {
			t.Fatalf("seed %d: entities differ after a save and load", seed)
		}
		g.Add(Event{ID: "z", Type: EventUser, TS: t0.Add(400 * 24 * time.Hour), Text: "Much later, Person3 again."})
		check("after a late event")
	}
}

// TestReadsConcurrentWithWrites reads the graph (Related, Find, Entity,
// Entities) while turns are added and forgotten: for -race.
func TestReadsConcurrentWithWrites(t *testing.T) {
	g := New(companion(t))
	evs := synthetic(400, 30, 5)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				g.Related("person1", 5)
				g.Find(Query{Name: "person2"})
				g.Entity("person3")
				g.Entities()
			}
		})
	}
	for i, ev := range evs {
		g.Add(ev)
		if i%50 == 49 {
			g.Forget([]string{evs[i-10].ID})
		}
	}
	close(done)
	wg.Wait()
	if want := fullSalience(g); len(want) == 0 {
		t.Fatal("no entities")
	}
}
