package hearth_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
)

// liveEntities is an Entities over one graph, fed as records commit.
type liveEntities struct{ g *graph.Graph }

func (e liveEntities) Graph() *graph.Graph { return e.g }
func (e liveEntities) Observe(r journal.Record) {
	if ev, ok := graph.FromRecord(r, hearth.MainConversation); ok {
		e.g.Add(ev)
	}
}

// TestWriteEntityNotes: the entities named often enough get a readable
// note in entities/<type>/, applied by policy with their turns as
// sources; a second pass with nothing new proposes nothing; a new
// relation updates the note; a policy that does not auto-apply
// entities/ gets no proposals.
func TestWriteEntityNotes(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	ctx := t.Context()
	b, err := fs.ReadFile(data.Vault(), graph.ArchetypeFile)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := graph.ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	ents := liveEntities{graph.New(arch)}
	say := func(text string) journal.Record {
		t.Helper()
		r, err := j.Append(ctx, journal.Record{Role: "user", Text: text, Mode: "text"})
		if err != nil {
			t.Fatal(err)
		}
		ents.Observe(r)
		return r
	}
	first := say("I had lunch with Ana Lima in Lisbon.")
	say("Ana says the weather is lovely.")
	say("Ana sent me a photo.")
	h := runCore(t, hearth.Config{Journal: j, Vault: v, Entities: ents, ShutdownGrace: 5 * time.Second})

	got, err := h.WriteEntityNotes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != (hearth.EntityNotes{Applied: 1}) {
		t.Fatalf("first pass %+v, want one note applied (Ana; Lisbon is named once)", got)
	}
	note, err := v.Read("entities/person/ana-lima.md")
	if err != nil || note == nil {
		t.Fatalf("no note for Ana: %v", err)
	}
	for _, want := range []string{"name: Ana Lima", "type: person", "evidence: [" + first.ID, "to: lisbon", "# Ana Lima"} {
		if !strings.Contains(string(note), want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if got, err := h.WriteEntityNotes(ctx); err != nil || got != (hearth.EntityNotes{Unchanged: 1}) {
		t.Errorf("second pass %+v %v, want the note unchanged", got, err)
	}
	say("Ana moved to Porto.")
	if got, err := h.WriteEntityNotes(ctx); err != nil || got != (hearth.EntityNotes{Applied: 1}) {
		t.Errorf("after a new relation %+v %v, want one update", got, err)
	}
	if note, _ := v.Read("entities/person/ana-lima.md"); !strings.Contains(string(note), "to: porto") {
		t.Errorf("updated note lacks Porto:\n%s", note)
	}

	// The owner takes entities/ out of auto_apply: nothing is proposed.
	policy := filepath.Join(dir, "config", "memory.policy.yml")
	pb, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(strings.Replace(string(pb), "    - entities/\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	say("Ana and Rui flew to Rome.")
	if got, err := h.WriteEntityNotes(ctx); err != nil || got != (hearth.EntityNotes{}) {
		t.Errorf("without entities/ in auto_apply %+v %v, want nothing proposed", got, err)
	}
}
