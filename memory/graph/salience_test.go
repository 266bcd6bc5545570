package graph

import (
	"fmt"
	"math/rand/v2"
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
