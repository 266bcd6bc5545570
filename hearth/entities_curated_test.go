package hearth_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/graph"
)

// stateModel is a curator's model that states, about the first record it
// is shown, an entity the extractor cannot type (Manteigaria, a place,
// also "the bakery") and a relation it never derives (Ana Lima lives_in
// Lisbon), citing that record.
type stateModel struct {
	mu   sync.Mutex
	cite string
}

func (m *stateModel) Name() string  { return "stand-in" }
func (m *stateModel) Model() string { return "curator" }
func (m *stateModel) Stream(_ context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	id := shownID.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
	if id == nil {
		return llm.Response{Text: `{"ops":[],"questions":[],"entities":[],"relations":[]}`}, nil
	}
	m.mu.Lock()
	m.cite = id[1]
	m.mu.Unlock()
	return llm.Response{Text: fmt.Sprintf(`{"ops":[],"questions":[],"entities":[
		{"name":"Ana Lima","type":"person","aliases":["Ana"],"sources":[%[1]q]},
		{"name":"Lisbon","type":"place","aliases":[],"sources":[%[1]q]},
		{"name":"Manteigaria","type":"place","aliases":["the bakery"],"sources":[%[1]q]}],
		"relations":[{"from":"Ana Lima","to":"Lisbon","type":"lives_in","sources":[%[1]q]}]}`, id[1])}, nil
}

// startLive runs a Live graph over j (its index in indexDir) until the
// test ends and waits until it has loaded.
func startLive(t *testing.T, o graph.LiveOptions) *graph.Live {
	t.Helper()
	loaded := make(chan struct{}, 1)
	o.Loaded = func(int) {
		select {
		case loaded <- struct{}{}:
		default:
		}
	}
	o.Session = hearth.MainConversation
	live := graph.NewLive(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- live.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("live graph: %v", err)
		}
	})
	select {
	case <-loaded:
	case <-time.After(30 * time.Second):
		t.Fatal("the entity graph did not load")
	}
	return live
}

// TestCuratedEntitiesSurviveRestart: what the curator extracts (a typed
// entity with an alias, a relation the journal never derives) is kept in
// the vault's entity notes through Propose, and a hearth started again
// over the same vault and journal finds it through memory_entities and
// memory_related, its type and evidence intact, whether the graph's
// index was kept or is rebuilt from the journal (lost, stale, a forget).
// Without the notes, a rebuild from the journal has none of it.
func TestCuratedEntitiesSurviveRestart(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	b, err := fs.ReadFile(data.Vault(), graph.ArchetypeFile)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := graph.ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	index := t.TempDir()
	model := &stateModel{}
	curated := make(chan hearth.Curated, 4)
	{ // the first run
		live := startLive(t, graph.LiveOptions{IndexDir: index, Archetype: arch, Journal: j})
		ctx, cancel := context.WithCancel(context.Background())
		h, err := hearth.New(hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second, Entities: live,
			Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: model, Observe: func(c hearth.Curated) { curated <- c }}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); h.Run(ctx) }()
		sendAwait(t, h, "Dinner at Manteigaria with Ana Lima tonight.")
		var c hearth.Curated
		select {
		case c = <-curated:
		case <-time.After(30 * time.Second):
			t.Fatalf("not curated; health %+v", h.CuratorHealth())
		}
		if len(c.Entities) != 3 || len(c.Relations) != 1 {
			t.Fatalf("curated %+v", c)
		}
		if len(c.EntityNotes) != 3 || slices.ContainsFunc(c.EntityNotes, func(o hearth.ProposalOutcome) bool { return o.Decision != hearth.DecisionApplied }) {
			t.Fatalf("entity notes: %+v", c.EntityNotes)
		}
		if _, rel, err := h.RelatedEntities("Ana", 10); err != nil || !slices.ContainsFunc(rel, func(n graph.Neighbor) bool { return n.Relation.Type == "lives_in" }) {
			t.Fatalf("before the restart: %+v %v", rel, err)
		}
		cancel()
		<-done
		if err := live.Save(); err != nil {
			t.Fatal(err)
		}
	}
	b, err = v.Read("entities/place/manteigaria.md")
	if err != nil || !strings.Contains(string(b), "fixed: true") {
		t.Fatalf("entities/place/manteigaria.md: %v\n%s", err, b)
	}
	model.mu.Lock()
	cite := model.cite
	model.mu.Unlock()

	for _, tc := range []struct {
		name      string
		index     string // the graph's index directory
		notes     bool   // the graph reads the entity notes back
		wantFound bool
	}{
		{"index kept", index, true, true},
		{"rebuilt from the journal", t.TempDir(), true, true},
		{"rebuilt without the notes", t.TempDir(), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := graph.LiveOptions{IndexDir: tc.index, Archetype: arch, Journal: j}
			if tc.notes {
				o.Notes = func(ctx context.Context) ([]graph.Note, error) { return hearth.ReadEntityNotes(ctx, v) }
			}
			if tc.index == index { // its own copy: the index is rewritten on the way out
				o.IndexDir = t.TempDir()
				b, err := os.ReadFile(filepath.Join(index, graph.IndexFile))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(o.IndexDir, graph.IndexFile), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			live := startLive(t, o)
			h, err := hearth.New(hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, Entities: live})
			if err != nil {
				t.Fatal(err)
			}
			found, err := h.FindEntities(graph.Query{Name: "the bakery"})
			if err != nil {
				t.Fatal(err)
			}
			gotBakery := len(found) == 1 && found[0].Name == "Manteigaria" && found[0].Type == "place" && found[0].Fixed
			ana, rel, err := h.RelatedEntities("Ana", 10)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rel, func(n graph.Neighbor) bool { return n.Relation.Type == "lives_in" })
			gotRel := i >= 0 && rel[i].Entity.Name == "Lisbon" && rel[i].Relation.From == ana.ID &&
				slices.Equal(rel[i].Relation.Evidence, []string{cite}) && rel[i].Relation.Count == 1
			if gotBakery != tc.wantFound || gotRel != tc.wantFound {
				t.Errorf("the bakery: %+v; Ana's relations: %+v; want found %v", found, rel, tc.wantFound)
			}
		})
	}
}
