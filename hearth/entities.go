package hearth

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
)

// Entities is the derived entity graph (memory/graph): the people, places
// and things the journal names and how they relate, typed by the vault's
// archetype.
type Entities interface {
	// Graph is the current graph; it may be empty while it first loads.
	Graph() *graph.Graph
	// Observe is told every committed record, tombstones included; it
	// must not block.
	Observe(r journal.Record)
}

// entityGraph is the graph, nil without one.
func (h *Hearth) entityGraph() *graph.Graph {
	if h.cfg.Entities == nil {
		return nil
	}
	return h.cfg.Entities.Graph()
}

func (h *Hearth) observeEntities(r journal.Record) {
	if h.cfg.Entities != nil {
		h.cfg.Entities.Observe(r)
	}
}

// FindEntities finds entities by name, alias or type (memory_entities).
func (h *Hearth) FindEntities(q graph.Query) ([]graph.Entity, error) {
	g := h.entityGraph()
	if g == nil {
		return nil, &Problem{Code: CodeUnavailable, Message: "entity memory is not available on this hearth"}
	}
	return g.Find(q), nil
}

// RelatedEntities returns the entity name names and its neighbours, each
// with the relation's type, weight and evidence (memory_related); a name
// that names no entity is a bad request.
func (h *Hearth) RelatedEntities(name string, limit int) (graph.Entity, []graph.Neighbor, error) {
	g := h.entityGraph()
	if g == nil {
		return graph.Entity{}, nil, &Problem{Code: CodeUnavailable, Message: "entity memory is not available on this hearth"}
	}
	id := g.Resolve(name)
	if id == "" {
		found := g.Find(graph.Query{Name: name, Limit: 1})
		if len(found) == 0 {
			return graph.Entity{}, nil, &Problem{Code: CodeBadRequest, Message: fmt.Sprintf("no entity is called %q", name)}
		}
		id = found[0].ID
	}
	e, _ := g.Entity(id)
	return e, g.Related(id, limit), nil
}

// expandSearch is entity expansion of a search: when req.Query names
// entities, the names of related ones are searched too, and that ranking
// is fused into hits at the archetype's expansion weight (weighted
// reciprocal rank fusion), at most req.K. Without a graph, entities in
// the query or related ones, hits are returned as they are.
func (h *Hearth) expandSearch(ctx context.Context, req memory.SearchRequest, hits []memory.Hit) []memory.Hit {
	g := h.entityGraph()
	if g == nil {
		return hits
	}
	x := g.Archetype().Context.Expansion
	q := graph.ExpandedQuery(req.Query, g.Expand(req.Query, x.Related))
	if q == "" {
		return hits
	}
	more := req
	more.Query = q
	expanded, err := h.cfg.Memory.Search(ctx, more)
	if err != nil {
		h.log.Warn("search: entity expansion failed; the query's own results stand", "err", err)
		return hits
	}
	byID := make(map[string]memory.Hit, len(hits)+len(expanded))
	ids := func(hs []memory.Hit) []string {
		out := make([]string, len(hs))
		for i, hit := range hs {
			out[i] = hit.ID
			if _, ok := byID[hit.ID]; !ok {
				byID[hit.ID] = hit
			}
		}
		return out
	}
	primary := ids(hits)
	fused := graph.Fuse(primary, ids(expanded), x.Weight)
	out := make([]memory.Hit, 0, min(len(fused), req.K))
	for _, id := range fused[:min(len(fused), req.K)] {
		out = append(out, byID[id])
	}
	return out
}

// entityContext is the block of entities query names and their relations
// (seed 001's entity and relation shares), and req with what it used
// taken from its allowances. The archetype's budget shares split req's
// allowances (relevant memories: knowledge, older turns, tool results)
// between relevant memories, entities and relations; what the block does
// not use stays with the memories. Entities and neighbours are ranked by
// the archetype's score: recency of last mention, relevance (1 for a
// named entity, the relation's weight for a neighbour) and salience.
func (h *Hearth) entityContext(req memory.ContextRequest) (string, memory.ContextRequest) {
	g := h.entityGraph()
	if g == nil || req.Query == "" {
		return "", req
	}
	ids := g.Mentioned(req.Query)
	if len(ids) == 0 {
		return "", req
	}
	a := g.Archetype()
	sh := a.Context.Budget
	parts := sh.Semantic + sh.Entities + sh.Relations
	pool := req.Turns + req.Tools + req.Knowledge
	if parts <= 0 || pool <= 0 {
		return "", req
	}
	entTok, relTok := pool*sh.Entities/parts, pool*sh.Relations/parts
	now := time.Now()
	score := func(e graph.Entity, relevance float64) float64 {
		return a.Context.Score(now.Sub(e.LastSeen), relevance, e.Salience, "")
	}
	var named []graph.Entity
	for _, id := range ids {
		if e, ok := g.Entity(id); ok {
			named = append(named, e)
		}
	}
	slices.SortStableFunc(named, func(x, y graph.Entity) int { return cmp.Compare(score(y, 1), score(x, 1)) })

	var b strings.Builder
	b.WriteString("People, places and things this message names, as memory knows them (salience 0–1; related: relation, weight):")
	used, usedRel := estimateTokens(b.String()), 0
	shown := 0
	for _, e := range named {
		line := fmt.Sprintf("\n- %s (%s", e.Name, e.Type)
		if len(e.Aliases) > 0 {
			line += ", also " + strings.Join(e.Aliases, ", ")
		}
		line += fmt.Sprintf("; mentioned %d times, last %s; salience %.2f)", e.Mentions, e.LastSeen.UTC().Format(time.DateOnly), e.Salience)
		if used+estimateTokens(line) > entTok {
			break
		}
		used += estimateTokens(line)
		b.WriteString(line)
		shown++
		ns := g.Related(e.ID, 10)
		slices.SortStableFunc(ns, func(x, y graph.Neighbor) int {
			return cmp.Compare(score(y.Entity, y.Relation.Weight), score(x.Entity, x.Relation.Weight))
		})
		var rel []string
		for _, n := range ns {
			s := fmt.Sprintf("%s (%s, %s %.2f)", n.Entity.Name, n.Entity.Type, n.Relation.Type, n.Relation.Weight)
			if usedRel+estimateTokens(s)+2 > relTok {
				break
			}
			usedRel += estimateTokens(s) + 2
			rel = append(rel, s)
		}
		if len(rel) > 0 {
			b.WriteString("\n  related: " + strings.Join(rel, ", "))
		}
	}
	if shown == 0 {
		return "", req
	}
	spent := used + usedRel
	left := max(pool-spent, 0)
	req.Turns = req.Turns * left / pool
	req.Tools = req.Tools * left / pool
	req.Knowledge = req.Knowledge * left / pool
	return b.String(), req
}

// joinBlocks joins the non-empty injected blocks.
func joinBlocks(blocks ...string) string {
	var out []string
	for _, b := range blocks {
		if b != "" {
			out = append(out, b)
		}
	}
	return strings.Join(out, "\n\n")
}
