package graph

import (
	"bytes"
	"errors"
	"fmt"
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
	Type      string     `yaml:"type"`
	Name      string     `yaml:"name"`
	Aliases   []string   `yaml:"aliases,omitempty"`
	FirstSeen time.Time  `yaml:"first_seen"`
	LastSeen  time.Time  `yaml:"last_seen"`
	Mentions  int        `yaml:"mentions"`
	Salience  float64    `yaml:"salience"`
	Evidence  []string   `yaml:"evidence,flow,omitempty"`
	Relations []noteEdge `yaml:"relations,omitempty"`
}

type noteEdge struct {
	Type     string   `yaml:"type"`
	To       string   `yaml:"to"` // the other entity's id
	Weight   float64  `yaml:"weight"`
	Evidence []string `yaml:"evidence,flow"`
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
	f := noteFront{Type: e.Type, Name: e.Name, Aliases: e.Aliases, FirstSeen: e.FirstSeen.UTC(), LastSeen: e.LastSeen.UTC(), Mentions: e.Mentions, Salience: e.Salience, Evidence: e.Evidence}
	for _, r := range n.Relations {
		other := r.To
		if other == e.ID {
			other = r.From
		}
		f.Relations = append(f.Relations, noteEdge{Type: r.Type, To: other, Weight: roundTo(r.Weight, 3), Evidence: r.Evidence})
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
			fmt.Fprintf(&b, "- %s %s (weight %.2f; evidence %s)\n", r.Type, r.To, r.Weight, strings.Join(r.Evidence, ", "))
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
	n := Note{Entity: Entity{ID: id, Type: f.Type, Name: f.Name, Aliases: f.Aliases, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen, Mentions: f.Mentions, Salience: f.Salience, Evidence: f.Evidence}}
	for _, r := range f.Relations {
		if !validType(r.Type) || r.To == "" || !(r.Weight >= 0 && r.Weight <= 1) {
			return Note{}, fmt.Errorf("entity note: relation %q to %q is not valid", r.Type, r.To)
		}
		n.Relations = append(n.Relations, Relation{From: id, To: r.To, Type: r.Type, Weight: r.Weight, Evidence: r.Evidence})
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
