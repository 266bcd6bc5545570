package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func companion(t testing.TB) Archetype {
	t.Helper()
	b, err := os.ReadFile("../../data/vault/config/archetype.yml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestExtract(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"I had lunch with Ana Lima in Lisbon.", []string{"Ana Lima", "Lisbon"}},
		{"The Louvre was closed, so we went to Café Central.", []string{"Louvre", "Café Central"}},
		{"What did Caroline's sister say?", []string{"Caroline"}},
		{"Hey Mel! How are you?", []string{"Mel"}},
		{"i think so. maybe tomorrow", nil},
		{"On Monday I met Dr. Rao.", []string{"Rao"}},
		{"we love New York, Paris and Tokyo", []string{"New York", "Paris", "Tokyo"}},
		{"You're right, Ana. Don't worry, I'll call Rui.", []string{"Ana", "Rui"}},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range Extract(tt.text) {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Extract(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestNormalizeSlug(t *testing.T) {
	tests := []struct{ in, norm, slug string }{
		{"Dr. Ana  Lima", "dr ana lima", "dr-ana-lima"},
		{"São Paulo", "são paulo", "são-paulo"},
		{"!!!", "", "entity"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.norm {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.norm)
		}
		if got := Slug(tt.in); got != tt.slug {
			t.Errorf("Slug(%q) = %q, want %q", tt.in, got, tt.slug)
		}
	}
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func events() []Event {
	return []Event{
		{ID: "e1", TS: t0, Type: EventUser, Actor: "user", Text: "I had lunch with Ana Lima in Lisbon."},
		{ID: "e2", TS: t0.Add(time.Minute), Type: EventAgent, Actor: "agent", Text: "How is Ana doing? Is she still building Project Atlas?", Calls: []string{"c1"}},
		{ID: "e3", TS: t0.Add(2 * time.Minute), Type: EventToolResult, Actor: "tool", CallID: "c1", Outcome: OutcomeFailure, Text: "error"},
		{ID: "e4", TS: t0.Add(time.Hour), Type: EventUser, Actor: "user", Text: "Ana moved to Porto with Rui."},
		{ID: "e5", TS: t0.Add(48 * time.Hour), Type: EventUser, Actor: "user", Speaker: "Mel", Text: "Rui and Ana visited Lisbon again."},
	}
}

func build(a Archetype, evs []Event) *Graph {
	g := New(a)
	for _, e := range evs {
		g.Add(e)
	}
	return g
}

func TestGraph(t *testing.T) {
	g := build(companion(t), events())
	ents := map[string]Entity{}
	for _, e := range g.Entities() {
		ents[e.ID] = e
	}
	tests := []struct {
		id, typ  string
		mentions int
		aliases  []string
	}{
		{"ana-lima", "person", 4, []string{"Ana"}},
		{"lisbon", "place", 2, nil},
		{"porto", "place", 1, nil},
		{"rui", "person", 2, nil},
		{"mel", "person", 1, nil},
		{"project-atlas", "project", 1, nil},
	}
	for _, tt := range tests {
		e, ok := ents[tt.id]
		if !ok {
			t.Errorf("no entity %s among %v", tt.id, slices.Collect(func(y func(string) bool) {
				for k := range ents {
					y(k)
				}
			}))
			continue
		}
		if e.Type != tt.typ || e.Mentions != tt.mentions || !slices.Equal(e.Aliases, tt.aliases) {
			t.Errorf("%s: type %s mentions %d aliases %q, want %s %d %q", tt.id, e.Type, e.Mentions, e.Aliases, tt.typ, tt.mentions, tt.aliases)
		}
		if e.Salience <= 0 || e.Salience > 1 {
			t.Errorf("%s: salience %v", tt.id, e.Salience)
		}
	}
	if ents["ana-lima"].Salience <= ents["porto"].Salience {
		t.Errorf("Ana (4 mentions, recent) is not more salient than Porto (1): %v <= %v", ents["ana-lima"].Salience, ents["porto"].Salience)
	}
	if e, _ := g.Event("e2"); e.Parent != "e1" {
		t.Errorf("reply's parent = %q, want e1", e.Parent)
	}
	if e, _ := g.Event("e3"); e.Parent != "e2" || e.Outcome != OutcomeFailure {
		t.Errorf("tool result = %+v, want parent e2, failure", e)
	}
	rel := g.Related("ana-lima", 10)
	var got []string
	for _, n := range rel {
		got = append(got, n.Relation.Type+":"+n.Entity.ID)
	}
	want := []string{"mentioned_with:lisbon", "mentioned_with:rui", "talks_about:mel", "mentioned_with:porto", "mentioned_with:project-atlas"}
	if !slices.Equal(got, want) {
		t.Errorf("Related(ana-lima) = %q, want %q", got, want)
	}
	if ev := rel[0].Relation.Evidence; !slices.Equal(ev, []string{"e1", "e5"}) {
		t.Errorf("Ana–Lisbon evidence = %q, want e1 e5", ev)
	}
}

func TestFind(t *testing.T) {
	g := build(companion(t), events())
	tests := []struct {
		q    Query
		want []string
	}{
		{Query{Name: "ana"}, []string{"ana-lima"}},
		{Query{Name: "Ana Lima"}, []string{"ana-lima"}},
		{Query{Name: "lis"}, []string{"lisbon"}},
		{Query{Type: "place"}, []string{"lisbon", "porto"}},
		{Query{Name: "nobody"}, nil},
		{Query{Type: "person", Limit: 1}, []string{"ana-lima"}},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range g.Find(tt.q) {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Find(%+v) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	g := build(companion(t), events())
	tests := []struct {
		query   string
		related int
		want    []string
	}{
		{"where does ana live now?", 2, []string{"Lisbon", "Rui"}},
		{"Rui and Ana", 1, []string{"Lisbon"}},
		{"what about the weather", 3, nil},
		{"where does ana live now?", 0, nil},
	}
	for _, tt := range tests {
		got := g.Expand(tt.query, tt.related)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Expand(%q, %d) = %q, want %q", tt.query, tt.related, got, tt.want)
		}
	}
	if q := ExpandedQuery("where is ana", []string{"Lisbon", "Rui"}); q != "where is ana Lisbon Rui" {
		t.Errorf("ExpandedQuery = %q", q)
	}
	if q := ExpandedQuery("x", nil); q != "" {
		t.Errorf("ExpandedQuery without names = %q, want empty", q)
	}
}

func TestFuse(t *testing.T) {
	tests := []struct {
		name              string
		primary, expanded []string
		weight            float64
		want              []string
	}{
		{"no expansion", []string{"a", "b"}, nil, 0.5, []string{"a", "b"}},
		{"weight 0", []string{"a", "b"}, []string{"c"}, 0, []string{"a", "b"}},
		{"agreement lifts", []string{"a", "b", "c"}, []string{"c", "b"}, 0.5, []string{"b", "c", "a"}},
		{"new ids after", []string{"a", "b"}, []string{"z"}, 0.5, []string{"a", "b", "z"}},
	}
	for _, tt := range tests {
		if got := Fuse(tt.primary, tt.expanded, tt.weight); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Fuse = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestScore(t *testing.T) {
	s := companion(t).Context
	tests := []struct {
		name     string
		age      time.Duration
		rel, sal float64
		outcome  string
		want     float64
	}{
		{"fresh", 0, 1, 1, "", 0.3 + 0.5 + 0.2},
		{"a day old", 24 * time.Hour, 0, 0, "", 0.3 * 0.36787944117144233},
		{"success", 0, 0, 0, OutcomeSuccess, 0.3 * 1.2},
		{"failure", 0, 1, 0, OutcomeFailure, 0.8 * 0.8},
	}
	for _, tt := range tests {
		if got := s.Score(tt.age, tt.rel, tt.sal, tt.outcome); got-tt.want > 1e-9 || tt.want-got > 1e-9 {
			t.Errorf("%s: Score = %v, want %v", tt.name, got, tt.want)
		}
	}
	r, sem, e, rel := s.Budget.Allot(1000)
	if r != 150 || sem != 400 || e != 250 || rel != 200 {
		t.Errorf("Allot(1000) = %d %d %d %d", r, sem, e, rel)
	}
}

// TestRebuildEqualsIncremental builds the graph in one go and in two
// halves with a save and load between: the same entities and relations.
func TestRebuildEqualsIncremental(t *testing.T) {
	a := companion(t)
	evs := events()
	whole := build(a, evs)
	path := filepath.Join(t.TempDir(), IndexFile)
	for cut := range len(evs) + 1 {
		if err := build(a, evs[:cut]).Save(path); err != nil {
			t.Fatal(err)
		}
		g, err := Load(path, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[cut:] {
			g.Add(e)
		}
		if got, want := g.Entities(), whole.Entities(); !reflect.DeepEqual(got, want) {
			t.Errorf("cut %d: entities differ:\n%+v\n%+v", cut, got, want)
		}
		if got, want := g.Relations(), whole.Relations(); !reflect.DeepEqual(got, want) {
			t.Errorf("cut %d: relations differ", cut)
		}
		if got, want := g.Related("ana-lima", 10), whole.Related("ana-lima", 10); !reflect.DeepEqual(got, want) {
			t.Errorf("cut %d: Related differ", cut)
		}
		if gl, gc := g.Last(); gl != "e5" || gc != len(evs) {
			t.Errorf("cut %d: Last = %s %d", cut, gl, gc)
		}
	}
}

func TestLoadStale(t *testing.T) {
	a := companion(t)
	dir := t.TempDir()
	path := filepath.Join(dir, IndexFile)
	if _, err := Load(path, a); err != ErrStale {
		t.Errorf("missing: %v, want ErrStale", err)
	}
	if err := build(a, events()).Save(path); err != nil {
		t.Fatal(err)
	}
	other := a
	other.Context.Expansion.Related = 5
	if _, err := Load(path, other); err != ErrStale {
		t.Errorf("another archetype: %v, want ErrStale", err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, a); err == nil {
		t.Error("corrupt index loaded")
	}
}

func TestNoteRoundTrip(t *testing.T) {
	g := build(companion(t), events())
	for _, n := range g.Notes() {
		b := RenderNote(n)
		back, err := ParseNote(n.Entity.ID, b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", n.Entity.ID, err, b)
		}
		want := n.Entity
		want.Salience = back.Entity.Salience // rounded in the note
		if back.Entity.Name != want.Name || back.Entity.Type != want.Type || back.Entity.Mentions != want.Mentions ||
			!slices.Equal(back.Entity.Aliases, want.Aliases) || !back.Entity.LastSeen.Equal(want.LastSeen) {
			t.Errorf("%s: round trip %+v, want %+v", n.Entity.ID, back.Entity, want)
		}
		if len(back.Relations) != len(n.Relations) {
			t.Errorf("%s: %d relations back, want %d", n.Entity.ID, len(back.Relations), len(n.Relations))
		}
	}
	if p := NotePath(Entity{ID: "ana-lima", Type: "person"}); p != "entities/person/ana-lima.md" {
		t.Errorf("NotePath = %s", p)
	}
}

// TestArchetypeSwitch: the same conversation under two archetypes gives
// different entity types and budget shares, with no code change.
func TestArchetypeSwitch(t *testing.T) {
	research, err := ParseArchetype([]byte(`
name: research
entity_types:
  - name: source
  - name: author
    cues: [by, with]
  - name: topic
    cues: [in, about, on]
relation_types:
  - name: related_to
context:
  budget: {recent: 10, semantic: 60, entities: 20, relations: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	comp := companion(t)
	gc, gr := build(comp, events()), build(research, events())
	typ := func(g *Graph, id string) string {
		for _, e := range g.Find(Query{Name: id}) {
			return e.Type
		}
		return ""
	}
	if c, r := typ(gc, "Lisbon"), typ(gr, "Lisbon"); c != "place" || r != "topic" {
		t.Errorf("Lisbon: companion %q research %q, want place and topic", c, r)
	}
	if c, r := typ(gc, "Ana Lima"), typ(gr, "Ana Lima"); c != "person" || r != "author" {
		t.Errorf("Ana Lima: companion %q research %q, want person and author", c, r)
	}
	if comp.Context.Budget == research.Context.Budget {
		t.Error("the two archetypes share budget shares")
	}
	if r := gr.Relations(); len(r) == 0 || r[0].Type != "related_to" {
		t.Errorf("research relations %+v, want related_to", r)
	}
}

func TestParseArchetypeErrors(t *testing.T) {
	tests := []struct{ name, yml string }{
		{"empty", ``},
		{"no name", "entity_types: [{name: a}]\nrelation_types: [{name: r}]"},
		{"bad type", "name: x\nentity_types: [{name: A B}]\nrelation_types: [{name: r}]"},
		{"unknown field", "name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]\ncolour: red"},
		{"shares", "name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]\ncontext: {budget: {recent: 50, semantic: 60}}"},
		{"weight", "name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]\ncontext: {relevance_weight: 2}"},
		{"default type", "name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]\ndefault_type: b"},
		{"mentions", "name: x\nentity_types: [{name: a}]\nrelation_types: [{name: r}]\nmentions: q"},
	}
	for _, tt := range tests {
		if _, err := ParseArchetype([]byte(tt.yml)); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// TestEventsBounded: past MaxEvents by a quarter the oldest quarter of
// the events is dropped, the same after a save and load.
func TestEventsBounded(t *testing.T) {
	g := New(companion(t))
	g.maxEvents = 100
	n := g.maxEvents + g.maxEvents/4 + 1
	for i := range n {
		g.Add(Event{ID: fmt.Sprintf("e%07d", i), Type: EventToolResult, Outcome: OutcomeSuccess})
	}
	if len(g.events) != g.maxEvents || len(g.order) != g.maxEvents {
		t.Fatalf("%d events, %d in order; want %d", len(g.events), len(g.order), g.maxEvents)
	}
	if _, ok := g.Event("e0000000"); ok {
		t.Error("the oldest event is kept")
	}
	if _, ok := g.Event(fmt.Sprintf("e%07d", n-1)); !ok {
		t.Error("the newest event is dropped")
	}
	path := filepath.Join(t.TempDir(), IndexFile)
	if err := g.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, companion(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.order, g.order) {
		t.Error("the events' order differs after a load")
	}
}

// BenchmarkAdd is the cost of deriving one turn, the rebuild's cost per
// journal record.
func BenchmarkAdd(b *testing.B) {
	g := New(companion(b))
	texts := []string{
		"I had lunch with Ana Lima in Lisbon, and then we walked to the Castelo.",
		"Rui says the Porto office moves to Braga next month; Marta is not happy.",
		"ok, thanks! remind me tomorrow about the dentist",
	}
	for i := 0; b.Loop(); i++ {
		g.Add(Event{ID: fmt.Sprintf("e%09d", i), Type: EventUser, TS: t0.Add(time.Duration(i) * time.Second), Text: texts[i%len(texts)] + fmt.Sprintf(" Person%d", i%5000)})
	}
}
