package curator

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo/mnemo/memory/graph"
)

// Extraction is what the archetype (config/archetype.yml) tells the
// curator to extract: its instructions and the entity and relation types
// its reply may use. Zero: no extraction (the reply's entities and
// relations are refused).
type Extraction struct {
	Archetype     string
	Prompt        string
	EntityTypes   []string
	RelationTypes []string
}

// ExtractionOf is the extraction a's file asks for.
func ExtractionOf(a graph.Archetype) Extraction {
	x := Extraction{Archetype: a.Name, Prompt: strings.TrimSpace(a.Extraction.Prompt)}
	for _, t := range a.EntityTypes {
		x.EntityTypes = append(x.EntityTypes, t.Name)
	}
	for _, t := range a.RelationTypes {
		x.RelationTypes = append(x.RelationTypes, t.Name)
	}
	return x
}

// SystemPrompt is the curator's system prompt: the vault's prompt, then
// the archetype's extraction instructions and types, so that another
// archetype (a file edit) changes what the curator is told, no code.
func SystemPrompt(base string, a graph.Archetype) string {
	x := ExtractionOf(a)
	var b strings.Builder
	b.WriteString(strings.TrimSpace(base))
	b.WriteString("\n\n## Entities and relations")
	if x.Archetype != "" {
		fmt.Fprintf(&b, " (archetype %q)", x.Archetype)
	}
	b.WriteString("\n\n")
	if x.Prompt != "" {
		b.WriteString(x.Prompt)
		b.WriteString("\n\n")
	}
	b.WriteString("Entity types:\n")
	for _, t := range a.EntityTypes {
		fmt.Fprintf(&b, "- %s\n", t.Name)
	}
	b.WriteString("\nRelation types:\n")
	for _, t := range a.RelationTypes {
		if d := strings.TrimSpace(t.Description); d != "" {
			fmt.Fprintf(&b, "- %s: %s\n", t.Name, d)
		} else {
			fmt.Fprintf(&b, "- %s\n", t.Name)
		}
	}
	b.WriteString("\nList them in `entities` (name, type, other names, the ids of the records that name them) and `relations` (from and to by name, type, the ids of the records that say so); use only these types, and leave both empty when the turn names none.\n")
	return b.String()
}

// SchemaWith is Schema with the archetype's entities and relations: each
// type an enum of x's types, so a strict provider holds the model to
// them; Decode checks them again.
func SchemaWith(x Extraction) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(Schema, &s); err != nil {
		panic(err) // Schema is a constant
	}
	ids := map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "ids of the records that name it, as shown"}
	strs := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	s["required"] = []string{"ops", "questions", "entities", "relations"}
	props := s["properties"].(map[string]any)
	props["entities"] = map[string]any{
		"type": "array", "description": "the people, places and things the turn names",
		"items": map[string]any{
			"type": "object", "additionalProperties": false,
			"required": []string{"name", "type", "aliases", "sources"},
			"properties": map[string]any{
				"name":    map[string]any{"type": "string"},
				"type":    map[string]any{"type": "string", "enum": x.EntityTypes},
				"aliases": strs,
				"sources": ids,
			},
		},
	}
	props["relations"] = map[string]any{
		"type": "array", "description": "how the entities named relate, by the turn",
		"items": map[string]any{
			"type": "object", "additionalProperties": false,
			"required": []string{"from", "to", "type", "sources"},
			"properties": map[string]any{
				"from":    map[string]any{"type": "string", "description": "an entity's name"},
				"to":      map[string]any{"type": "string", "description": "an entity's name"},
				"type":    map[string]any{"type": "string", "enum": x.RelationTypes},
				"sources": ids,
			},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Entity is an entity a curator's reply names, typed by the archetype.
type Entity struct {
	Name    string
	Type    string
	Aliases []string
	Sources []string // record ids
}

// Relation is a relation a curator's reply states between two entities.
type Relation struct {
	From, To, Type string
	Sources        []string
}

type wireEntity struct {
	Name    *string  `json:"name"`
	Type    *string  `json:"type"`
	Aliases []string `json:"aliases"`
	Sources []string `json:"sources"`
}

type wireRelation struct {
	From    *string  `json:"from"`
	To      *string  `json:"to"`
	Type    *string  `json:"type"`
	Sources []string `json:"sources"`
}

// maxEntities bounds the entities (and the relations) of one reply.
const maxEntities = 64

// entities decodes and checks a reply's entities and relations against
// the archetype's types and the records shown; each refused one is a
// Rejection (op "entity" or "relation", Index from base).
func (d *decoder) entities(rawEnts, rawRels []json.RawMessage, base int, res *Result) {
	x := d.in.Extraction
	if len(rawEnts) > maxEntities {
		rawEnts = rawEnts[:maxEntities]
	}
	if len(rawRels) > maxEntities {
		rawRels = rawRels[:maxEntities]
	}
	named := map[string]bool{}
	for i, raw := range rawEnts {
		var w wireEntity
		e, err := func() (Entity, error) {
			if err := strict(raw, &w); err != nil {
				return Entity{}, fmt.Errorf("breaks the schema: %v", err)
			}
			e := Entity{Name: strings.Join(strings.Fields(deref(w.Name)), " "), Type: strings.TrimSpace(deref(w.Type))}
			if e.Name == "" || len(e.Name) > 100 {
				return e, errors.New("an entity needs a name (at most 100 bytes)")
			}
			if !slices.Contains(x.EntityTypes, e.Type) {
				return e, fmt.Errorf("type %q is not one of the archetype's entity types (%s)", e.Type, strings.Join(x.EntityTypes, ", "))
			}
			for _, a := range w.Aliases {
				if a = strings.Join(strings.Fields(a), " "); a != "" && a != e.Name && len(a) <= 100 && !slices.Contains(e.Aliases, a) {
					e.Aliases = append(e.Aliases, a)
				}
			}
			src, err := d.sources(w.Sources)
			if err != nil {
				return e, err
			}
			for _, s := range src {
				e.Sources = append(e.Sources, s.Turn)
			}
			return e, nil
		}()
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: base + i, Op: "entity", Path: e.Name, Why: err.Error()})
			continue
		}
		named[graph.Normalize(e.Name)] = true
		for _, a := range e.Aliases {
			named[graph.Normalize(a)] = true
		}
		res.Entities = append(res.Entities, e)
	}
	base += len(rawEnts)
	for i, raw := range rawRels {
		var w wireRelation
		r, err := func() (Relation, error) {
			if err := strict(raw, &w); err != nil {
				return Relation{}, fmt.Errorf("breaks the schema: %v", err)
			}
			r := Relation{From: strings.Join(strings.Fields(deref(w.From)), " "), To: strings.Join(strings.Fields(deref(w.To)), " "), Type: strings.TrimSpace(deref(w.Type))}
			if !slices.Contains(x.RelationTypes, r.Type) {
				return r, fmt.Errorf("type %q is not one of the archetype's relation types (%s)", r.Type, strings.Join(x.RelationTypes, ", "))
			}
			if !named[graph.Normalize(r.From)] || !named[graph.Normalize(r.To)] || graph.Normalize(r.From) == graph.Normalize(r.To) {
				return r, errors.New("a relation is between two entities the reply names")
			}
			src, err := d.sources(w.Sources)
			if err != nil {
				return r, err
			}
			for _, s := range src {
				r.Sources = append(r.Sources, s.Turn)
			}
			return r, nil
		}()
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: base + i, Op: "relation", Path: r.From + " → " + r.To, Why: err.Error()})
			continue
		}
		res.Relations = append(res.Relations, r)
	}
}
