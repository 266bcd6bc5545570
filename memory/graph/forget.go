package graph

import (
	"math"
	"slices"
)

// Forget drops the events ids from g at once: their metadata, and every
// entity's and relation's evidence that names them, with one mention (or
// one count) less for each. An entity left with no mentions or no
// evidence leaves, with its aliases and relations; a relation left with
// no count or no evidence leaves. It is the quick part of a forget: a
// rebuild from the journal (which no longer has them) gives the exact
// counts later.
func (g *Graph) Forget(ids []string) {
	if len(ids) == 0 {
		return
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		delete(g.events, id)
	}
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return gone[id] })
	drop := func(ev []string) ([]string, int) {
		n := len(ev)
		ev = slices.DeleteFunc(ev, func(id string) bool { return gone[id] })
		return ev, n - len(ev)
	}
	for k, r := range g.relations {
		ev, n := drop(r.Evidence)
		if n == 0 {
			continue
		}
		r.Evidence, r.Count = ev, r.Count-n
		if r.Count <= 0 || len(ev) == 0 {
			g.dropRelation(k)
			continue
		}
		r.Weight = 1 - math.Exp(-float64(r.Count)/3)
	}
	for id, e := range g.entities {
		ev, n := drop(e.Evidence)
		if n == 0 {
			continue
		}
		e.Evidence, e.Mentions = ev, e.Mentions-n
		if e.Mentions > 0 && len(ev) > 0 {
			continue
		}
		for _, r := range slices.Clone(g.adj[id]) {
			g.dropRelation(relKey(r.From, r.Type, r.To))
		}
		delete(g.adj, id)
		for a, to := range g.alias {
			if to == id {
				delete(g.alias, a)
			}
		}
		delete(g.entities, id)
	}
	g.recount()
}

// dropRelation removes the relation k; g.mu is held.
func (g *Graph) dropRelation(k string) {
	r := g.relations[k]
	if r == nil {
		return
	}
	delete(g.relations, k)
	for _, end := range []string{r.From, r.To} {
		g.adj[end] = slices.DeleteFunc(g.adj[end], func(x *Relation) bool { return x == r })
	}
}

// DropEvents drops the events ids from the current graph at once (see
// Graph.Forget) and rebuilds it from the journal in the background.
func (l *Live) DropEvents(ids []string) {
	l.Graph().Forget(ids)
	signal(l.rebuild)
}

// AddRelation records a relation the curator stated between two named
// entities (by name or alias), typed by the archetype, with the events
// that are its evidence. It reports whether both ends are known.
func (g *Graph) AddRelation(from, to, typ string, evidence []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, b := g.alias[Normalize(from)], g.alias[Normalize(to)]
	if a == "" || b == "" || a == b || typ == "" {
		return false
	}
	if len(evidence) == 0 {
		evidence = []string{""}
	}
	for _, ev := range evidence {
		g.relate(a, b, typ, ev, false).Curated = true
	}
	return true
}
