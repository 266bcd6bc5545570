package hearth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
)

// archModel is a curator's model that records the system prompt and
// schema of each call and names the first record it was shown as an
// entity of type typ.
type archModel struct {
	mu      sync.Mutex
	systems []string
	schemas []string
	typ     string
}

func (m *archModel) Name() string  { return "stand-in" }
func (m *archModel) Model() string { return "curator" }
func (m *archModel) Stream(_ context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.systems = append(m.systems, req.Messages[0].Content)
	m.schemas = append(m.schemas, string(req.Output.Schema))
	id := shownID.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
	ents := "[]"
	if id != nil {
		ents = fmt.Sprintf(`[{"name":"Maharana","type":%q,"aliases":[],"sources":[%q]}]`, m.typ, id[1])
	}
	return llm.Response{Text: `{"ops":[],"questions":[],"entities":` + ents + `,"relations":[]}`}, nil
}

// TestCuratorToldTheArchetype: the curator's system prompt carries the
// vault's archetype's extraction prompt and types, and its schema their
// enums; editing config/archetype.yml (another archetype, no code)
// changes both at the next turn, and what it extracts is checked against
// the types in force and joins the entity graph.
func TestCuratorToldTheArchetype(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	model := &archModel{typ: "author"}
	curated := make(chan hearth.Curated, 4)
	g := graph.New(graph.Archetype{Name: "x", EntityTypes: []graph.EntityType{{Name: "person"}}, RelationTypes: []graph.RelationType{{Name: "knows"}}})
	h := runCore(t, hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second, Entities: staticGraph{g},
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: model, Observe: func(c hearth.Curated) { curated <- c }}})
	turn := func(text string) hearth.Curated {
		t.Helper()
		sendAwait(t, h, text)
		select {
		case c := <-curated:
			return c
		case <-time.After(30 * time.Second):
			t.Fatalf("not curated; health %+v", h.CuratorHealth())
		}
		return hearth.Curated{}
	}
	c := turn("I read the LoCoMo paper by Maharana.")
	if len(c.Entities) != 0 || len(c.Rejected) != 1 || !strings.Contains(c.Rejected[0].Why, `"author" is not one of the archetype's entity types`) {
		t.Errorf("under companion: entities %+v rejected %+v", c.Entities, c.Rejected)
	}
	research, err := os.ReadFile("curator/testdata/prompt/research.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config", "archetype.yml"), research, 0o600); err != nil {
		t.Fatal(err)
	}
	c = turn("Maharana wrote it in 2024.")
	if len(c.Entities) != 1 || c.Entities[0].Type != "author" || len(c.Rejected) != 0 {
		t.Errorf("under research: entities %+v rejected %+v", c.Entities, c.Rejected)
	}
	if e := g.Find(graph.Query{Name: "Maharana"}); len(e) != 1 || e[0].Type != "author" {
		t.Errorf("the graph has %+v", e)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	for i, want := range []struct{ prompt, types string }{
		{`archetype "companion"`, `"enum":["person","place","project","thing"]`},
		{`archetype "research"`, `"enum":["author","paper","topic"]`},
	} {
		if !strings.Contains(model.systems[i], want.prompt) || !strings.Contains(model.schemas[i], want.types) {
			t.Errorf("call %d: system prompt or schema lacks %q / %q:\n%s\n%s", i, want.prompt, want.types, model.systems[i], model.schemas[i])
		}
	}
	if !strings.Contains(model.systems[1], "Name the papers, their authors") {
		t.Errorf("the research archetype's extraction prompt is not in:\n%s", model.systems[1])
	}
}

// staticGraph is a hearth.Entities over one graph.
type staticGraph struct{ g *graph.Graph }

func (s staticGraph) Graph() *graph.Graph  { return s.g }
func (staticGraph) Observe(journal.Record) {}
