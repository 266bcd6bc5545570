// Package graph is mnemo's episodic, semantic and relational memory (seed
// 001): events derived from the journal (turns and tool calls, with their
// outcomes and causal parents), the entities named in them (type,
// aliases, first and last seen, mentions, salience) and the relations
// between entities, each with the ids of the events that are its
// evidence. A deterministic extractor (extract.go) finds names without a
// model, typed by the archetype's cues; the curator's typed entities join
// through AddEntity. The graph is derived: Save and Load keep it beside
// recall's index, and it is rebuilt from the journal when missing or
// stale.
package graph

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Event types.
const (
	EventUser       = "user_message"
	EventAgent      = "agent_response"
	EventToolResult = "tool_result"
)

// Outcomes of an event (seed 001).
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomePartial = "partial"
)

// Event is one thing that happened: a turn or a tool call's result.
type Event struct {
	ID      string
	Session string
	TS      time.Time
	Type    string
	Actor   string // user, agent, tool
	// Speaker names who spoke when the source names them (a dataset's
	// speakers); "" for the owner and the companion.
	Speaker string
	Outcome string // OutcomeSuccess, OutcomeFailure or ""
	Parent  string // the event that caused this one; "" when none
	Text    string
	// Calls are the tool call ids an agent event made; CallID is the call
	// a tool result answers (its causal parent is the event that made it).
	Calls  []string
	CallID string
}

// EventMeta is what the graph keeps of an event: no text (the journal has
// it).
type EventMeta struct {
	ID      string    `json:"id"`
	TS      time.Time `json:"ts"`
	Type    string    `json:"type"`
	Outcome string    `json:"outcome,omitempty"`
	Parent  string    `json:"parent,omitempty"`
}

// Entity is a named thing memory knows about.
type Entity struct {
	ID        string    `json:"id"` // the slug of its name
	Type      string    `json:"type"`
	Name      string    `json:"name"`
	Aliases   []string  `json:"aliases,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Mentions  int       `json:"mentions"`
	// Salience is computed when read (see Graph.salienceOf); what the
	// graph keeps is, for a Fixed entity, the curator's floor.
	Salience float64 `json:"salience"`
	// Evidence is the ids of the newest events that mention it, oldest
	// first, at most MaxEvidence.
	Evidence []string `json:"evidence,omitempty"`
	// Votes counts the types the mentions' cues gave; the most voted is
	// Type, ties to the archetype's order. A curator's type is fixed.
	Votes map[string]int `json:"votes,omitempty"`
	Fixed bool           `json:"fixed,omitempty"`
}

// Relation links two entities.
type Relation struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Type   string  `json:"type"`
	Count  int     `json:"count"`
	Weight float64 `json:"weight"`
	// Evidence is the ids of the newest events that support it, oldest
	// first, at most MaxEvidence.
	Evidence []string `json:"evidence"`
	// Curated says the curator stated it (AddRelation): the journal does
	// not derive it, so its entity notes carry it across a rebuild.
	Curated bool `json:"curated,omitempty"`
}

// MaxEvidence bounds the event ids a relation keeps.
const MaxEvidence = 16

// Graph is the derived memory. It is safe for concurrent use.
type Graph struct {
	mu        sync.RWMutex
	arch      Archetype
	entities  map[string]*Entity
	alias     map[string]string // normalised name or alias → entity id
	relations map[string]*Relation
	adj       map[string][]*Relation // entity id → the relations it is an end of
	events    map[string]EventMeta
	order     []string // events' ids, oldest first
	maxEvents int
	calls     map[string]string // open tool call id → the agent event that made it
	lastUser  string
	last      string // the id of the newest event added
	now       time.Time
	count     int
	// maxM is the most mentions any entity has: salience's frequency
	// scale, kept as mentions grow and recounted when they shrink.
	maxM int
}

// New returns an empty graph typed by arch.
func New(arch Archetype) *Graph {
	arch.fill()
	return &Graph{
		arch:      arch,
		entities:  map[string]*Entity{},
		alias:     map[string]string{},
		relations: map[string]*Relation{},
		adj:       map[string][]*Relation{},
		events:    map[string]EventMeta{},
		calls:     map[string]string{},
		maxEvents: MaxEvents,
	}
}

// Archetype is the archetype g types entities with.
func (g *Graph) Archetype() Archetype { return g.arch }

// Last is the id of the newest event added and the number of events.
func (g *Graph) Last() (string, int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.last, g.count
}

// maxOpenCalls bounds the tool calls waiting for their result.
const maxOpenCalls = 256

// Add derives what ev says: its causal parent (a reply's is the user turn
// before it, a tool result's the reply that called it), its names as
// entities, and relations between them.
func (g *Graph) Add(ev Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev.Parent == "" {
		switch ev.Type {
		case EventAgent:
			ev.Parent = g.lastUser
		case EventToolResult:
			ev.Parent = g.calls[ev.CallID]
		}
	}
	if ev.CallID != "" {
		delete(g.calls, ev.CallID)
	}
	switch ev.Type {
	case EventUser:
		g.lastUser = ev.ID
	case EventAgent:
		for _, c := range ev.Calls {
			if len(g.calls) < maxOpenCalls {
				g.calls[c] = ev.ID
			}
		}
	}
	g.last = ev.ID
	g.count++
	if ev.TS.After(g.now) {
		g.now = ev.TS
	}
	var ids []string
	if ev.Speaker != "" {
		if id := g.mention(ev.Speaker, g.arch.SpeakerType, ev.TS, ev.ID); id != "" {
			ids = append(ids, id)
		}
	}
	speakers := len(ids)
	for _, s := range Extract(ev.Text) {
		typ := g.arch.typeOf(s.Before)
		if id := g.mention(s.Name, typ, ev.TS, ev.ID); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if ev.Outcome != "" || ev.Parent != "" || len(ids) > 0 {
		g.keepEvent(EventMeta{ID: ev.ID, TS: ev.TS, Type: ev.Type, Outcome: ev.Outcome, Parent: ev.Parent})
	}
	if g.arch.Mentions != "" {
		for _, sp := range ids[:speakers] {
			for _, id := range ids[speakers:] {
				if id != sp {
					g.relate(sp, id, g.arch.Mentions, ev.ID, false)
				}
			}
		}
	}
	named := ids[speakers:]
	for i, a := range named {
		for _, b := range named[i+1:] {
			g.relate(a, b, g.arch.CoOccurrence, ev.ID, true)
		}
	}
}

// MaxEvents bounds the events the graph keeps (the journal has them
// all): past it by a quarter, the oldest quarter is dropped.
const MaxEvents = 100_000

func (g *Graph) keepEvent(e EventMeta) {
	if _, ok := g.events[e.ID]; !ok {
		g.order = append(g.order, e.ID)
	}
	g.events[e.ID] = e
	if len(g.order) > g.maxEvents+g.maxEvents/4 {
		drop := len(g.order) - g.maxEvents
		for _, id := range g.order[:drop] {
			delete(g.events, id)
		}
		g.order = slices.Clone(g.order[drop:])
	}
}

// mention counts a mention of name, creating its entity; typ is the type
// its cue gave ("" none). It returns the entity's id, "" for a name too
// short to be one.
func (g *Graph) mention(name, typ string, ts time.Time, event string) string {
	key := Normalize(name)
	if len([]rune(key)) < 2 {
		return ""
	}
	id, ok := g.alias[key]
	var e *Entity
	if ok {
		e = g.entities[id]
	} else {
		id = Slug(key)
		if e = g.entities[id]; e == nil {
			e = &Entity{ID: id, Name: name, FirstSeen: ts, LastSeen: ts, Votes: map[string]int{}}
			g.entities[id] = e
			if typ == g.arch.SpeakerType || (typ == "" && g.arch.DefaultType == g.arch.SpeakerType) {
				// "Ana" names "Ana Lima" when nothing else has that name.
				if f := strings.Fields(key); len(f) > 1 && !stop[f[0]] {
					if _, taken := g.alias[f[0]]; !taken {
						g.alias[f[0]] = id
						e.Aliases = append(e.Aliases, strings.Fields(name)[0])
					}
				}
			}
		}
		g.alias[key] = id
	}
	e.Mentions++
	g.maxM = max(g.maxM, e.Mentions)
	e.Evidence = addEvidence(e.Evidence, event)
	if ts.Before(e.FirstSeen) || e.FirstSeen.IsZero() {
		e.FirstSeen = ts
	}
	if ts.After(e.LastSeen) {
		e.LastSeen = ts
	}
	if typ != "" {
		if e.Votes == nil {
			e.Votes = map[string]int{}
		}
		e.Votes[typ]++
	}
	if !e.Fixed {
		e.Type = g.vote(e.Votes)
	}
	return id
}

// vote is the most voted type, ties to the archetype's order; the default
// type when none.
func (g *Graph) vote(votes map[string]int) string {
	best, n := g.arch.DefaultType, 0
	for _, t := range g.arch.EntityTypes {
		if v := votes[t.Name]; v > n {
			best, n = t.Name, v
		}
	}
	return best
}

func relKey(from, typ, to string) string { return from + "\x00" + typ + "\x00" + to }

// relate records one piece of evidence for a relation; a symmetric one is
// kept from the smaller id to the larger.
func (g *Graph) relate(from, to, typ, evidence string, symmetric bool) *Relation {
	if symmetric && to < from {
		from, to = to, from
	}
	k := relKey(from, typ, to)
	r := g.relations[k]
	if r == nil {
		r = &Relation{From: from, To: to, Type: typ}
		g.relations[k] = r
		g.adj[from] = append(g.adj[from], r)
		g.adj[to] = append(g.adj[to], r)
	}
	r.Count++
	r.Weight = 1 - math.Exp(-float64(r.Count)/3)
	r.Evidence = addEvidence(r.Evidence, evidence)
	return r
}

// addEvidence appends event to ids unless it is the last, keeping the
// newest MaxEvidence.
func addEvidence(ids []string, event string) []string {
	if event == "" {
		return ids
	}
	if n := len(ids); n > 0 && ids[n-1] == event {
		return ids
	}
	ids = append(ids, event)
	if len(ids) > MaxEvidence {
		ids = slices.Delete(ids, 0, len(ids)-MaxEvidence)
	}
	return ids
}

// AddEntity merges a typed entity from the curator: its type is fixed,
// its aliases name it, its evidence (the records the curator cited)
// joins the entity's, so that a forget of them reaches its note.
func (g *Graph) AddEntity(e Entity) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := Normalize(e.Name)
	if key == "" {
		return
	}
	id, ok := g.alias[key]
	if !ok {
		id = Slug(key)
	}
	cur := g.entities[id]
	if cur == nil {
		cur = &Entity{ID: id, Name: e.Name, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, Votes: map[string]int{}}
		g.entities[id] = cur
	}
	g.alias[key] = id
	if e.Type != "" {
		cur.Type, cur.Fixed = e.Type, true
	}
	for _, a := range e.Aliases {
		if k := Normalize(a); k != "" && !slices.Contains(cur.Aliases, a) {
			if _, taken := g.alias[k]; !taken {
				g.alias[k] = id
				cur.Aliases = append(cur.Aliases, a)
			}
		}
	}
	for _, ev := range e.Evidence {
		if ev != "" && !slices.Contains(cur.Evidence, ev) {
			cur.Evidence = addEvidence(cur.Evidence, ev)
		}
	}
	cur.Mentions += e.Mentions
	if e.Mentions >= 0 {
		g.maxM = max(g.maxM, cur.Mentions)
	} else {
		g.recount()
	}
	if cur.Salience < e.Salience {
		cur.Salience = e.Salience
	}
}

// salience is an entity's importance, 0 to 1: how often it is mentioned
// (log-scaled against the most mentioned) and how recently (a 30-day
// decay from the newest event).
func (g *Graph) salience(e *Entity, maxMentions int) float64 {
	freq := 0.0
	if maxMentions > 0 {
		freq = math.Log1p(float64(e.Mentions)) / math.Log1p(float64(maxMentions))
	}
	rec := 1.0
	if !g.now.IsZero() && !e.LastSeen.IsZero() {
		rec = math.Exp(-g.now.Sub(e.LastSeen).Hours() / (30 * 24))
	}
	return math.Round((0.6*freq+0.4*rec)*1000) / 1000
}

// salienceOf is e's salience now, computed when read: it depends on the
// newest event and the most mentioned entity, which move with every
// event, so keeping every entity's current would cost a pass over all of
// them per event or per read. A Fixed entity's is never below the
// curator's (its Salience field). g.mu is held, read or write.
func (g *Graph) salienceOf(e *Entity) float64 {
	s := g.salience(e, g.maxM)
	if e.Fixed && e.Salience > s {
		return e.Salience
	}
	return s
}

// recount sets maxM from every entity, after mentions went down; g.mu is
// held.
func (g *Graph) recount() {
	g.maxM = 0
	for _, e := range g.entities {
		g.maxM = max(g.maxM, e.Mentions)
	}
}

// Entities is a copy of every entity, salience fresh, by id.
func (g *Graph) Entities() []Entity {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Entity, 0, len(g.entities))
	for _, e := range g.entities {
		out = append(out, g.copyEntity(e))
	}
	slices.SortFunc(out, func(a, b Entity) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Relations is a copy of every relation, by from, type and to.
func (g *Graph) Relations() []Relation {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Relation, 0, len(g.relations))
	for _, r := range g.relations {
		c := *r
		c.Evidence = slices.Clone(r.Evidence)
		out = append(out, c)
	}
	sortRelations(out)
	return out
}

func sortRelations(rs []Relation) {
	slices.SortFunc(rs, func(a, b Relation) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Type, b.Type), cmp.Compare(a.To, b.To))
	})
}

// Entity is entity id, salience fresh.
func (g *Graph) Entity(id string) (Entity, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e := g.entities[id]
	if e == nil {
		return Entity{}, false
	}
	return g.copyEntity(e), true
}

// Event is what g keeps of event id.
func (g *Graph) Event(id string) (EventMeta, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.events[id]
	return e, ok
}

// copyEntity is a copy of e, salience fresh; g.mu is held.
func (g *Graph) copyEntity(e *Entity) Entity {
	c := *e
	c.Salience = g.salienceOf(e)
	c.Aliases = slices.Clone(e.Aliases)
	c.Evidence = slices.Clone(e.Evidence)
	c.Votes = nil
	return c
}

// Query asks Find for entities.
type Query struct {
	Name  string // a name or alias, or part of one; "" any
	Type  string // "" any
	Limit int    // default 10
}

// Find returns the entities whose name or an alias matches q.Name (exact
// first, then those it begins, then those containing it), of q.Type,
// each group by salience.
func (g *Graph) Find(q Query) []Entity {
	if q.Limit <= 0 {
		q.Limit = 10
	}
	key := Normalize(q.Name)
	g.mu.RLock()
	defer g.mu.RUnlock()
	type match struct {
		e    *Entity
		rank int
		sal  float64
	}
	var ms []match
	for _, e := range g.entities {
		if q.Type != "" && e.Type != q.Type {
			continue
		}
		rank := 3
		if key != "" {
			rank = 0
			for _, n := range append([]string{e.Name}, e.Aliases...) {
				k := Normalize(n)
				r := 0
				switch {
				case k == key:
					r = 3
				case strings.HasPrefix(k, key+" ") || strings.HasPrefix(k, key):
					r = 2
				case strings.Contains(k, key):
					r = 1
				}
				rank = max(rank, r)
			}
			if rank == 0 {
				continue
			}
		}
		ms = append(ms, match{e, rank, g.salienceOf(e)})
	}
	slices.SortFunc(ms, func(a, b match) int {
		return cmp.Or(cmp.Compare(b.rank, a.rank), cmp.Compare(b.sal, a.sal), cmp.Compare(a.e.ID, b.e.ID))
	})
	out := make([]Entity, 0, min(len(ms), q.Limit))
	for _, m := range ms[:min(len(ms), q.Limit)] {
		out = append(out, g.copyEntity(m.e))
	}
	return out
}

// Neighbor is an entity related to another, through one relation.
type Neighbor struct {
	Entity   Entity
	Relation Relation
}

// Related returns the neighbours of entity id, strongest relation first
// (weight, then the neighbour's salience), at most limit (default 10).
func (g *Graph) Related(id string, limit int) []Neighbor {
	if limit <= 0 {
		limit = 10
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	// Keep the best limit in order while walking the neighbours (a
	// well-known entity has thousands); a neighbour whose relation is
	// weaker than the last kept's is passed over before its salience is
	// computed.
	var top []near
	for _, r := range g.adj[id] {
		other := r.To
		if other == id {
			other = r.From
		}
		e := g.entities[other]
		if e == nil {
			continue
		}
		full := len(top) == limit
		if full && r.Weight < top[limit-1].r.Weight {
			continue
		}
		n := near{e, r, g.salienceOf(e)}
		if full && n.compare(top[limit-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, n, near.compare)
		if full {
			top = top[:limit-1]
		}
		top = slices.Insert(top, i, n)
	}
	out := make([]Neighbor, 0, len(top))
	for _, n := range top {
		c := *n.r
		c.Evidence = slices.Clone(n.r.Evidence)
		out = append(out, Neighbor{Entity: g.copyEntity(n.e), Relation: c})
	}
	return out
}

// near is a neighbour Related ranks.
type near struct {
	e   *Entity
	r   *Relation
	sal float64
}

// compare orders neighbours strongest first: the relation's weight, the
// neighbour's salience, then its id, the relation's type and direction.
func (a near) compare(b near) int {
	if c := cmp.Compare(b.r.Weight, a.r.Weight); c != 0 {
		return c
	}
	if c := cmp.Compare(b.sal, a.sal); c != 0 {
		return c
	}
	if c := cmp.Compare(a.e.ID, b.e.ID); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.r.Type, b.r.Type), cmp.Compare(a.r.From, b.r.From))
}

// Resolve returns the id of the entity name or an alias names, or "".
func (g *Graph) Resolve(name string) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.alias[Normalize(name)]
}

// Mentioned returns the ids of the entities text names, by name or alias,
// in the order they first appear; a lower-case mention counts ("ana"),
// a single stop word does not.
func (g *Graph) Mentioned(text string) []string {
	words := strings.Fields(Normalize(text))
	g.mu.RLock()
	defer g.mu.RUnlock()
	var ids []string
	for i := 0; i < len(words); {
		n := 0
		for l := min(maxSpanWords, len(words)-i); l >= 1; l-- {
			if l == 1 && stop[words[i]] {
				continue
			}
			if id, ok := g.alias[strings.Join(words[i:i+l], " ")]; ok {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
				n = l
				break
			}
		}
		i += max(n, 1)
	}
	return ids
}
