package hearth

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recollect"
)

// graphEntities is an Entities over one graph, fed as records commit.
type graphEntities struct{ g *graph.Graph }

func (e graphEntities) Graph() *graph.Graph { return e.g }
func (e graphEntities) Observe(r journal.Record) {
	if ev, ok := graph.FromRecord(r, MainConversation); ok {
		e.g.Add(ev)
	}
}

func companionArchetype(t *testing.T) graph.Archetype {
	t.Helper()
	b, err := fs.ReadFile(data.Vault(), graph.ArchetypeFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := graph.ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// entityHearth is a core over a journal holding texts (user turns), with
// memory searching it by keywords (recall not started) and, when
// withEntities, the entity graph of the turns.
func entityHearth(t *testing.T, withEntities bool, texts ...string) (*Hearth, []journal.Record) {
	t.Helper()
	dir := t.TempDir()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	ents := graphEntities{graph.New(companionArchetype(t))}
	var recs []journal.Record
	for _, s := range texts {
		r, err := j.Append(context.Background(), journal.Record{Role: memory.RoleUser, Text: s, Mode: memory.ModeText})
		if err != nil {
			t.Fatal(err)
		}
		ents.Observe(r)
		recs = append(recs, r)
	}
	cfg := Config{Memory: recollect.New(recollect.Options{Root: dir, Journal: j, Session: MainConversation})}
	if withEntities {
		cfg.Entities = ents
	}
	return &Hearth{cfg: cfg, log: slog.New(slog.DiscardHandler)}, recs
}

var entityTurns = []string{
	"I had lunch with Ana Lima in Lisbon.",                  // 0
	"Rui cooked dinner for Ana and me.",                     // 1
	"The bakery in Lisbon is called Manteigaria, go early.", // 2
	"My bike needs new brakes.",                             // 3
}

// TestSearchEntityExpansion: a search naming Ana also searches the names
// of what Ana is related to (Lisbon, Rui) at a lower weight, so a turn
// about Lisbon that never names her is found after those that do; without
// the graph it is not found at all.
func TestSearchEntityExpansion(t *testing.T) {
	tests := []struct {
		name     string
		entities bool
		query    string
		want     []int // entityTurns, in order
	}{
		{"off", false, "what did ana say", []int{1, 0}},
		{"on", true, "what did ana say", []int{1, 0, 2}},
		{"on, no entity named", true, "brakes", []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, recs := entityHearth(t, tt.entities, entityTurns...)
			hits, err := h.Search(context.Background(), memory.SearchRequest{Query: tt.query, K: 5})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, hit := range hits {
				got = append(got, slices.IndexFunc(recs, func(r journal.Record) bool { return r.ID == hit.ID }))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Search(%q) = turns %v, want %v", tt.query, got, tt.want)
			}
		})
	}
}

// TestEntityContext: a turn naming Ana injects her entity and its
// relations, ranked by the archetype's score, within the archetype's
// entity and relation shares, and what it spends is taken from the
// memories' allowances; a turn naming nobody changes nothing.
func TestEntityContext(t *testing.T) {
	h, _ := entityHearth(t, true, entityTurns...)
	req := memory.ContextRequest{Query: "How is Ana doing?", Turns: 1000, Tools: 1000, Knowledge: 1000}
	block, got := h.entityContext(req)
	for _, want := range []string{"- Ana Lima (person, also Ana;", "related: Lisbon (place, mentioned_with 0.28), Rui (person, mentioned_with 0.28)"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	spent := estimateTokens(block)
	if sum := got.Turns + got.Tools + got.Knowledge; sum > 3000-spent+3 || sum < 3000-spent-3*2-3 || got.Turns != got.Tools {
		t.Errorf("allowances after the block (%d tokens): %+v", spent, got)
	}
	// The shares bound the block: at a tiny pool it does not fit.
	if block, _ := h.entityContext(memory.ContextRequest{Query: "Ana?", Turns: 10, Tools: 10, Knowledge: 10}); block != "" {
		t.Errorf("a 30-token pool took a block:\n%s", block)
	}
	if block, after := h.entityContext(memory.ContextRequest{Query: "how are the brakes", Turns: 1000}); block != "" || after.Turns != 1000 {
		t.Errorf("nobody named: block %q, allowance %d", block, after.Turns)
	}
	off, _ := entityHearth(t, false, entityTurns...)
	if block, _ := off.entityContext(req); block != "" {
		t.Errorf("no graph, block %q", block)
	}
}

// TestEntityTools: memory_entities and memory_related over the core.
func TestEntityTools(t *testing.T) {
	h, recs := entityHearth(t, true, entityTurns...)
	find := tools.MemoryEntities(func(_ context.Context, q graph.Query) ([]graph.Entity, error) { return h.FindEntities(q) })
	related := tools.MemoryRelated(func(_ context.Context, name string, limit int) (graph.Entity, []graph.Neighbor, error) {
		return h.RelatedEntities(name, limit)
	})
	tests := []struct {
		name    string
		tool    tools.Builtin
		args    string
		isError bool
		want    []string
	}{
		{"by name", find, `{"name":"ana"}`, false, []string{"1 entities:", "- Ana Lima (person) id=ana-lima aliases=Ana mentions=2", "salience="}},
		{"by type", find, `{"type":"place"}`, false, []string{"- Lisbon (place) id=lisbon"}},
		{"none", find, `{"name":"zed"}`, false, []string{"no entities match"}},
		{"related", related, `{"name":"Ana"}`, false, []string{"Ana Lima (person, salience", "- Lisbon (place) relation=mentioned_with weight=0.28 count=1 evidence=" + recs[0].ID, "- Rui (person) relation=mentioned_with"}},
		{"related unknown", related, `{"name":"zed"}`, true, []string{`no entity is called "zed"`}},
		{"related no name", related, `{}`, true, []string{"name is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.tool.Run(context.Background(), json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError {
				t.Errorf("IsError = %v, want %v: %s", res.IsError, tt.isError, res.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result lacks %q:\n%s", w, res.Text)
				}
			}
		})
	}
	off, _ := entityHearth(t, false, entityTurns...)
	if _, err := off.FindEntities(graph.Query{}); err == nil {
		t.Error("FindEntities without a graph: no error")
	}
}
