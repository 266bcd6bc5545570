package graph

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// EntityDir is the vault folder of entity notes: entities/<type>/<slug>.md.
const EntityDir = "entities"

// NotePath is the vault path of e's note.
func NotePath(e Entity) string { return EntityDir + "/" + e.Type + "/" + e.ID + ".md" }

// noteFront is an entity note's front matter.
type noteFront struct {
	Type      string    `yaml:"type"`
	Name      string    `yaml:"name"`
	Aliases   []string  `yaml:"aliases,omitempty"`
	FirstSeen time.Time `yaml:"first_seen"`
	LastSeen  time.Time `yaml:"last_seen"`
	Mentions  int       `yaml:"mentions"`
	Salience  float64   `yaml:"salience"`
	Evidence  []string  `yaml:"evidence,flow,omitempty"`
	// Fixed: the type was given (the curator's, a typed note's), not
	// voted by the extractor.
	Fixed     bool       `yaml:"fixed,omitempty"`
	Relations []noteEdge `yaml:"relations,omitempty"`
}

// noteEdge is a relation as its ends' notes list it: the other end in To
// when the note's entity is its From, in From when it is its To.
type noteEdge struct {
	Type     string   `yaml:"type"`
	To       string   `yaml:"to,omitempty"`   // the other entity's id
	From     string   `yaml:"from,omitempty"` // the other entity's id
	Weight   float64  `yaml:"weight"`
	Evidence []string `yaml:"evidence,flow"`
	// Curated: the curator stated it; loaded back at start (AddNotes).
	Curated bool `yaml:"curated,omitempty"`
}

// Note is an entity with the relations its note lists (those it is an
// end of, the other end in To).
type Note struct {
	Entity    Entity
	Relations []Relation
}

// RenderNote writes n as a Markdown note: front matter a program reads,
// and a body the owner reads.
func RenderNote(n Note) []byte {
	e := n.Entity
	f := noteFront{Type: e.Type, Name: e.Name, Aliases: e.Aliases, FirstSeen: e.FirstSeen.UTC(), LastSeen: e.LastSeen.UTC(), Mentions: e.Mentions, Salience: e.Salience, Evidence: e.Evidence, Fixed: e.Fixed}
	for _, r := range n.Relations {
		edge := noteEdge{Type: r.Type, To: r.To, Weight: roundTo(r.Weight, 3), Evidence: r.Evidence, Curated: r.Curated}
		if r.To == e.ID {
			edge.To, edge.From = "", r.From
		}
		f.Relations = append(f.Relations, edge)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(f) // plain values: cannot fail
	enc.Close()
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# %s\n\nA %s memory knows of: mentioned %d times, first %s, last %s; salience %.2f.\n",
		oneLine(e.Name), e.Type, e.Mentions, e.FirstSeen.UTC().Format(time.DateOnly), e.LastSeen.UTC().Format(time.DateOnly), e.Salience)
	if len(e.Aliases) > 0 {
		fmt.Fprintf(&b, "Also called: %s.\n", oneLine(strings.Join(e.Aliases, ", ")))
	}
	if len(f.Relations) > 0 {
		b.WriteString("\n## Related\n\n")
		for _, r := range f.Relations {
			other, by := r.To, ""
			if other == "" {
				other = r.From + " (from)"
			}
			if r.Curated {
				by = "; stated by the curator"
			}
			fmt.Fprintf(&b, "- %s %s (weight %.2f; evidence %s%s)\n", r.Type, other, r.Weight, strings.Join(r.Evidence, ", "), by)
		}
	}
	return b.Bytes()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func roundTo(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// maxNote bounds an entity note ParseNote reads.
const maxNote = 1 << 20

// ParseNote reads an entity note written by RenderNote or edited by the
// owner; id is its file's slug. Only the front matter counts.
func ParseNote(id string, b []byte) (Note, error) {
	if len(b) > maxNote {
		return Note{}, errors.New("entity note: too large")
	}
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return Note{}, errors.New("entity note: no front matter")
	}
	front, _, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return Note{}, errors.New("entity note: front matter not closed")
	}
	var f noteFront
	if err := yaml.Unmarshal(front, &f); err != nil {
		return Note{}, fmt.Errorf("entity note: %w", err)
	}
	if strings.TrimSpace(f.Name) == "" || !validType(f.Type) {
		return Note{}, errors.New("entity note: name and a valid type are required")
	}
	if f.Mentions < 0 || !(f.Salience >= 0 && f.Salience <= 1) {
		return Note{}, errors.New("entity note: mentions and salience out of range")
	}
	n := Note{Entity: Entity{ID: id, Type: f.Type, Name: f.Name, Aliases: f.Aliases, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen, Mentions: f.Mentions, Salience: f.Salience, Evidence: f.Evidence, Fixed: f.Fixed}}
	for _, r := range f.Relations {
		if !validType(r.Type) || (r.To == "") == (r.From == "") || !(r.Weight >= 0 && r.Weight <= 1) {
			return Note{}, fmt.Errorf("entity note: relation %q to %q is not valid", r.Type, r.To+r.From)
		}
		rel := Relation{From: id, To: r.To, Type: r.Type, Weight: r.Weight, Evidence: r.Evidence, Curated: r.Curated}
		if r.To == "" {
			rel.From, rel.To = r.From, id
		}
		n.Relations = append(n.Relations, rel)
	}
	return n, nil
}

// Notes are the notes of g's entities, each with its relations.
func (g *Graph) Notes() []Note {
	ents := g.Entities()
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Note, 0, len(ents))
	for _, e := range ents {
		n := Note{Entity: e}
		for _, rel := range g.adj[e.ID] {
			r := *rel
			r.Evidence = append([]string(nil), r.Evidence...)
			n.Relations = append(n.Relations, r)
		}
		sortRelations(n.Relations)
		out = append(out, n)
	}
	return out
}

// Note is the note of entity id, with its relations.
func (g *Graph) Note(id string) (Note, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e := g.entities[id]
	if e == nil {
		return Note{}, false
	}
	n := Note{Entity: g.copyEntity(e)}
	for _, rel := range g.adj[id] {
		r := *rel
		r.Evidence = slices.Clone(r.Evidence)
		n.Relations = append(n.Relations, r)
	}
	sortRelations(n.Relations)
	return n, true
}

// AddNotes merges what entity notes hold that the journal does not
// derive: the entities whose type is fixed (the curator's), with their
// type and aliases but no mentions (the journal counts those), and the
// relations the curator stated, with their evidence; types the archetype
// does not have are passed over. It is idempotent (a
// relation listed by both its ends' notes, or merged again, is merged
// once): a graph rebuilt from the journal gets the curator's work back.
func (g *Graph) AddNotes(ns []Note) {
	for _, n := range ns {
		if e := n.Entity; e.Fixed && g.arch.hasEntityType(e.Type) {
			g.AddEntity(Entity{Name: e.Name, Type: e.Type, Aliases: e.Aliases, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, Evidence: e.Evidence})
		}
	}
	byID := make(map[string]string, len(ns)) // a note's slug → its entity's name
	for _, n := range ns {
		byID[n.Entity.ID] = n.Entity.Name
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	resolve := func(id string) string {
		if g.entities[id] != nil {
			return id
		}
		if name, ok := byID[id]; ok {
			return g.alias[Normalize(name)]
		}
		return ""
	}
	for _, n := range ns {
		for _, r := range n.Relations {
			if !r.Curated || !g.arch.hasRelationType(r.Type) {
				continue
			}
			from, to := resolve(r.From), resolve(r.To)
			if from == "" || to == "" || from == to {
				continue
			}
			k := relKey(from, r.Type, to)
			cur := g.relations[k]
			if cur == nil {
				cur = &Relation{From: from, To: to, Type: r.Type}
				g.relations[k] = cur
				g.adj[from] = append(g.adj[from], cur)
				g.adj[to] = append(g.adj[to], cur)
			}
			cur.Curated = true
			for _, ev := range r.Evidence {
				if ev != "" && !slices.Contains(cur.Evidence, ev) {
					cur.Evidence = append(cur.Evidence, ev)
				}
			}
			if len(cur.Evidence) > MaxEvidence {
				cur.Evidence = slices.Delete(cur.Evidence, 0, len(cur.Evidence)-MaxEvidence)
			}
			cur.Count = max(cur.Count, len(cur.Evidence), 1)
			cur.Weight = 1 - math.Exp(-float64(cur.Count)/3)
		}
	}
}
