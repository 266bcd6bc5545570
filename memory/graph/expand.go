package graph

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// Expand returns the names of up to related neighbours of each entity
// query names, strongest first, leaving out the entities it names: what
// entity expansion adds to a recall query. None when it names none or
// related is 0.
func (g *Graph) Expand(query string, related int) []string {
	if related <= 0 {
		return nil
	}
	ids := g.Mentioned(query)
	var names []string
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range ids {
		for _, n := range g.Related(id, related) {
			if !seen[n.Entity.ID] {
				seen[n.Entity.ID] = true
				names = append(names, n.Entity.Name)
			}
		}
	}
	return names
}

// ExpandedQuery is query with the expansion's names after it, or "" when
// there are none.
func ExpandedQuery(query string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return query + " " + strings.Join(names, " ")
}

// fuseK is reciprocal rank fusion's constant.
const fuseK = 60

// Fuse merges the ranking of a query with the ranking of its expansion,
// the second counting weight (0 to 1) of the first: weighted reciprocal
// rank fusion over ids, ties in the first ranking's order. With weight 0
// or no expansion it is the first ranking.
func Fuse(primary, expanded []string, weight float64) []string {
	if weight <= 0 || len(expanded) == 0 {
		return primary
	}
	score := map[string]float64{}
	order := map[string]int{}
	add := func(ids []string, w float64) {
		for i, id := range ids {
			score[id] += w / float64(fuseK+i+1)
			if _, ok := order[id]; !ok {
				order[id] = len(order)
			}
		}
	}
	add(primary, 1)
	add(expanded, weight)
	out := make([]string, 0, len(order))
	for id := range order {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(score[b], score[a]), cmp.Compare(order[a], order[b]))
	})
	return out
}

// Score is the seed-001 score of a memory: recency decay, relevance (0
// to 1) and salience (0 to 1) weighted by s, then the outcome's boost.
func (s Strategy) Score(age time.Duration, relevance, salience float64, outcome string) float64 {
	hours := max(age.Hours(), 0)
	score := math.Exp(-hours/s.RecencyHours)*s.RecencyWeight + relevance*s.RelevanceWeight + salience*s.SalienceWeight
	switch outcome {
	case OutcomeSuccess:
		score *= s.SuccessBoost
	case OutcomeFailure:
		score *= s.FailureBoost
	}
	return score
}

// Allot splits a token budget by s's shares: recent turns, relevant
// memories, entities and relations.
func (s Shares) Allot(tokens int) (recent, semantic, entities, relations int) {
	part := func(p int) int { return tokens * p / 100 }
	return part(s.Recent), part(s.Semantic), part(s.Entities), part(s.Relations)
}
