package recallbench

import (
	"math"
	"slices"
)

// Metrics are one query's scores at one cutoff k, with binary relevance.
type Metrics struct {
	Recall float64 `json:"recall"` // |gold ∩ top-k| / |gold|
	Hit    float64 `json:"hit"`    // 1 if any gold is in the top k
	All    float64 `json:"all"`    // 1 if every gold is in the top k
	NDCG   float64 `json:"ndcg"`   // DCG of the top k over the ideal DCG
}

// Score scores ranked (best first, without repeats) against the gold ids
// at cutoff k. It is zero when gold is empty or k < 1.
func Score(ranked, gold []string, k int) Metrics {
	gold = dedupe(gold)
	if len(gold) == 0 || k < 1 {
		return Metrics{}
	}
	top := ranked[:min(k, len(ranked))]
	var hits int
	var dcg float64
	for i, id := range top {
		if slices.Contains(gold, id) {
			hits++
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	var ideal float64
	for i := range min(len(gold), k) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	m := Metrics{
		Recall: float64(hits) / float64(len(gold)),
		NDCG:   dcg / ideal,
	}
	if hits > 0 {
		m.Hit = 1
	}
	if hits == len(gold) {
		m.All = 1
	}
	return m
}

// Collapse maps ranked ids to their groups (sessions) in first-seen order:
// the rank of a session is the rank of its best document.
func Collapse(ranked []string, group func(id string) string) []string {
	out := make([]string, 0, len(ranked))
	seen := make(map[string]bool, len(ranked))
	for _, id := range ranked {
		g := group(id)
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// dedupe returns ids without repeats, first occurrence kept. It returns
// ids itself when there are none.
func dedupe(ids []string) []string {
	for i := range ids {
		if slices.Contains(ids[:i], ids[i]) {
			return Collapse(ids, func(id string) string { return id })
		}
	}
	return ids
}
