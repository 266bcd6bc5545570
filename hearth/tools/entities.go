package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/graph"
)

// EntitiesFunc finds entities by name, alias or type.
type EntitiesFunc func(ctx context.Context, q graph.Query) ([]graph.Entity, error)

// RelatedFunc returns the entity name names and its neighbours.
type RelatedFunc func(ctx context.Context, name string, limit int) (graph.Entity, []graph.Neighbor, error)

const (
	defaultEntities = 10
	maxEntities     = 50
	// maxEvidenceShown bounds the evidence ids shown per relation.
	maxEvidenceShown = 5
)

// MemoryEntities is the memory_entities tool: the people, places and
// things memory knows of, by name, alias or type, with salience.
func MemoryEntities(find EntitiesFunc) Builtin {
	spec := builtinSpec("memory_entities",
		"Find the people, places, projects and things memory knows of (derived from the conversation), by name, alias or part of one, or by type. "+
			"One line each: name, type, id, other names, how often and when first and last mentioned, and salience (0-1, how important they seem). "+
			"Use memory_related on a name to see what it is linked to.",
		`{"type":"object","properties":{`+
			`"name":{"type":"string","description":"a name, alias or part of one; default any"},`+
			`"type":{"type":"string","description":"an entity type of the archetype, such as person, place, project or thing; default any"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"how many, default 10"}}}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Limit int    `json:"limit"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		q := graph.Query{Name: strings.TrimSpace(in.Name), Type: strings.TrimSpace(in.Type), Limit: in.Limit}
		if q.Limit <= 0 {
			q.Limit = defaultEntities
		}
		q.Limit = min(q.Limit, maxEntities)
		ents, err := find(ctx, q)
		if err != nil {
			return Result{}, fmt.Errorf("memory entities: %w", err)
		}
		if len(ents) == 0 {
			return Result{Text: "no entities match"}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d entities:\n", len(ents))
		for _, e := range ents {
			fmt.Fprintf(&b, "- %s (%s) id=%s", oneLine(e.Name, maxHitField), e.Type, e.ID)
			if len(e.Aliases) > 0 {
				fmt.Fprintf(&b, " aliases=%s", oneLine(strings.Join(e.Aliases, ", "), maxHitField))
			}
			fmt.Fprintf(&b, " mentions=%d first=%s last=%s salience=%.2f\n", e.Mentions,
				e.FirstSeen.UTC().Format(time.RFC3339), e.LastSeen.UTC().Format(time.RFC3339), e.Salience)
		}
		return Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
	}}
}

// MemoryRelated is the memory_related tool: an entity's neighbours with
// the relation's type, weight and the ids of the turns that are its
// evidence.
func MemoryRelated(related RelatedFunc) Builtin {
	spec := builtinSpec("memory_related",
		"Show what an entity (a person, place, project or thing memory knows of) is linked to: each related entity with the relation's type, its weight (0-1, how strongly) "+
			"and the ids of the turns that are its evidence (memory_search and conversation_history show turns by these ids).",
		`{"type":"object","properties":{`+
			`"name":{"type":"string","description":"the entity's name, alias or id"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"how many related entities, default 10"}},"required":["name"]}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Name  string `json:"name"`
			Limit int    `json:"limit"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		name := strings.TrimSpace(in.Name)
		if name == "" {
			return Result{Text: errors.New("name is required").Error(), IsError: true}, nil
		}
		limit := in.Limit
		if limit <= 0 {
			limit = defaultEntities
		}
		e, ns, err := related(ctx, name, min(limit, maxEntities))
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		if len(ns) == 0 {
			return Result{Text: fmt.Sprintf("%s (%s) is related to nothing memory knows of yet", e.Name, e.Type)}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s (%s, salience %.2f) is related to %d:\n", oneLine(e.Name, maxHitField), e.Type, e.Salience, len(ns))
		for _, n := range ns {
			ev := n.Relation.Evidence
			if len(ev) > maxEvidenceShown {
				ev = ev[len(ev)-maxEvidenceShown:] // the newest
			}
			fmt.Fprintf(&b, "- %s (%s) relation=%s weight=%.2f count=%d evidence=%s\n", oneLine(n.Entity.Name, maxHitField), n.Entity.Type,
				n.Relation.Type, n.Relation.Weight, n.Relation.Count, strings.Join(ev, ","))
		}
		return Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
	}}
}
