package graph

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.yaml.in/yaml/v3"
)

// ArchetypeFile is where the vault keeps the archetype in use.
const ArchetypeFile = "config/archetype.yml"

// Archetype customises memory for a domain (seed 001): which entity and
// relation types exist, how the deterministic extractor types a name,
// what the curator is told to extract, and the context strategy. It is a
// file in the vault; switching archetype is editing it.
type Archetype struct {
	Name        string       `yaml:"name"`
	Description string       `yaml:"description"`
	EntityTypes []EntityType `yaml:"entity_types"`
	// DefaultType is the type of a name no cue types; default the first
	// entity type.
	DefaultType string `yaml:"default_type"`
	// SpeakerType is the type of whoever speaks (the owner, the
	// companion, a named speaker); default DefaultType.
	SpeakerType   string         `yaml:"speaker_type"`
	RelationTypes []RelationType `yaml:"relation_types"`
	// CoOccurrence is the relation between names mentioned in one event;
	// default the first relation type.
	CoOccurrence string `yaml:"co_occurrence"`
	// Mentions is the relation from a speaker to a name they mention;
	// "" records none.
	Mentions   string     `yaml:"mentions"`
	Extraction Extraction `yaml:"extraction"`
	Context    Strategy   `yaml:"context"`
}

// EntityType is one entity type and the words that, just before a name,
// say a name is of it ("with Ana" → person, "in Lisbon" → place).
type EntityType struct {
	Name string   `yaml:"name"`
	Cues []string `yaml:"cues"`
}

// RelationType is one relation type.
type RelationType struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// Extraction is what a model-based extractor (the curator) is told.
type Extraction struct {
	Prompt string `yaml:"prompt"`
}

// Strategy is the context strategy: the seed-001 score's weights and the
// budget shares of the injected context.
type Strategy struct {
	RecencyWeight   float64 `yaml:"recency_weight"`
	RelevanceWeight float64 `yaml:"relevance_weight"`
	SalienceWeight  float64 `yaml:"salience_weight"`
	// RecencyHours is the recency decay's time constant: exp(-age/h).
	RecencyHours float64 `yaml:"recency_hours"`
	// SuccessBoost and FailureBoost multiply the score of an event that
	// succeeded or failed (seed 001: 1.2 and 0.8).
	SuccessBoost float64   `yaml:"success_boost"`
	FailureBoost float64   `yaml:"failure_boost"`
	Expansion    Expansion `yaml:"expansion"`
	Budget       Shares    `yaml:"budget"`
}

// Expansion is entity expansion of a recall query: the names of up to
// Related neighbours of each entity the query names are searched too, at
// Weight of the query's own ranking; Related 0 turns it off.
type Expansion struct {
	Related int     `yaml:"related"`
	Weight  float64 `yaml:"weight"`
}

// Shares split the context budget, in per cent, between recent turns,
// relevant memories, entities and relations.
type Shares struct {
	Recent    int `yaml:"recent"`
	Semantic  int `yaml:"semantic"`
	Entities  int `yaml:"entities"`
	Relations int `yaml:"relations"`
}

// ParseArchetype reads and checks an archetype file; absent strategy
// fields take the companion defaults.
func ParseArchetype(b []byte) (Archetype, error) {
	var a Archetype
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		return Archetype{}, fmt.Errorf("archetype: %w", err)
	}
	a.fill()
	if err := a.Validate(); err != nil {
		return Archetype{}, err
	}
	return a, nil
}

// fill sets absent fields to their defaults.
func (a *Archetype) fill() {
	if a.DefaultType == "" && len(a.EntityTypes) > 0 {
		a.DefaultType = a.EntityTypes[0].Name
	}
	if a.SpeakerType == "" {
		a.SpeakerType = a.DefaultType
	}
	if a.CoOccurrence == "" && len(a.RelationTypes) > 0 {
		a.CoOccurrence = a.RelationTypes[0].Name
	}
	c := &a.Context
	if c.RecencyWeight == 0 && c.RelevanceWeight == 0 && c.SalienceWeight == 0 {
		c.RecencyWeight, c.RelevanceWeight, c.SalienceWeight = 0.3, 0.5, 0.2
	}
	if c.RecencyHours == 0 {
		c.RecencyHours = 24
	}
	if c.SuccessBoost == 0 {
		c.SuccessBoost = 1.2
	}
	if c.FailureBoost == 0 {
		c.FailureBoost = 0.8
	}
	if c.Expansion.Weight == 0 {
		c.Expansion.Weight = 0.5
	}
	if c.Budget == (Shares{}) {
		c.Budget = Shares{Recent: 15, Semantic: 40, Entities: 25, Relations: 20}
	}
}

// Validate reports what is wrong with a, for the owner who wrote it.
func (a Archetype) Validate() error {
	var errs []error
	if a.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if len(a.EntityTypes) == 0 {
		errs = append(errs, errors.New("entity_types: at least one is required"))
	}
	if len(a.RelationTypes) == 0 {
		errs = append(errs, errors.New("relation_types: at least one is required"))
	}
	var ents, rels []string
	for _, t := range a.EntityTypes {
		if !validType(t.Name) {
			errs = append(errs, fmt.Errorf("entity type %q: want lower-case letters, digits, _ or -", t.Name))
		}
		if slices.Contains(ents, t.Name) {
			errs = append(errs, fmt.Errorf("entity type %q is listed twice", t.Name))
		}
		ents = append(ents, t.Name)
	}
	for _, t := range a.RelationTypes {
		if !validType(t.Name) {
			errs = append(errs, fmt.Errorf("relation type %q: want lower-case letters, digits, _ or -", t.Name))
		}
		rels = append(rels, t.Name)
	}
	for _, f := range []struct{ key, v string }{{"default_type", a.DefaultType}, {"speaker_type", a.SpeakerType}} {
		if f.v != "" && !slices.Contains(ents, f.v) {
			errs = append(errs, fmt.Errorf("%s %q is not an entity type", f.key, f.v))
		}
	}
	for _, f := range []struct{ key, v string }{{"co_occurrence", a.CoOccurrence}, {"mentions", a.Mentions}} {
		if f.v != "" && !slices.Contains(rels, f.v) {
			errs = append(errs, fmt.Errorf("%s %q is not a relation type", f.key, f.v))
		}
	}
	c := a.Context
	for _, w := range []struct {
		key string
		v   float64
	}{{"recency_weight", c.RecencyWeight}, {"relevance_weight", c.RelevanceWeight}, {"salience_weight", c.SalienceWeight}, {"expansion.weight", c.Expansion.Weight}} {
		if !(w.v >= 0 && w.v <= 1) {
			errs = append(errs, fmt.Errorf("context.%s %v: want 0 to 1", w.key, w.v))
		}
	}
	for _, w := range []struct {
		key string
		v   float64
	}{{"recency_hours", c.RecencyHours}, {"success_boost", c.SuccessBoost}, {"failure_boost", c.FailureBoost}} {
		if !(w.v > 0) || math.IsInf(w.v, 0) {
			errs = append(errs, fmt.Errorf("context.%s %v: want a positive number", w.key, w.v))
		}
	}
	if c.Expansion.Related < 0 || c.Expansion.Related > 20 {
		errs = append(errs, fmt.Errorf("context.expansion.related %d: want 0 to 20", c.Expansion.Related))
	}
	b := c.Budget
	if b.Recent < 0 || b.Semantic < 0 || b.Entities < 0 || b.Relations < 0 || b.Recent+b.Semantic+b.Entities+b.Relations != 100 {
		errs = append(errs, fmt.Errorf("context.budget %d+%d+%d+%d: want shares of 0 or more that add up to 100", b.Recent, b.Semantic, b.Entities, b.Relations))
	}
	if len(errs) > 0 {
		return fmt.Errorf("archetype: %w", errors.Join(errs...))
	}
	return nil
}

func validType(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// typeOf is the entity type a cue word gives, or "".
func (a Archetype) typeOf(before string) string {
	if before == "" {
		return ""
	}
	for _, t := range a.EntityTypes {
		if slices.Contains(t.Cues, before) {
			return t.Name
		}
	}
	return ""
}

func (a Archetype) hasEntityType(name string) bool {
	return slices.ContainsFunc(a.EntityTypes, func(t EntityType) bool { return t.Name == name })
}

func (a Archetype) hasRelationType(name string) bool {
	return slices.ContainsFunc(a.RelationTypes, func(t RelationType) bool { return t.Name == name })
}
