package recollect

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMemoryBlockGolden: the injected block as the model reads it, in
// its tiers: notes by file and heading, then older turns, then tool
// results; the turns using what the notes left of their allowance.
// `go test ./memory/recollect -run Golden -update` rewrites it.
func TestMemoryBlockGolden(t *testing.T) {
	ts := time.Date(2026, 11, 20, 18, 30, 0, 0, time.UTC)
	note := func(id, path, text string) recall.Hit {
		return recall.Hit{Doc: recall.Doc{ID: id, Kind: recall.KindKnowledge, Role: "active", Channel: path, Text: text, TS: ts, Salience: 0.9}}
	}
	turn := func(id, role, text string) recall.Hit {
		return recall.Hit{Doc: recall.Doc{ID: id, Kind: recall.KindTurn, Role: role, Text: text, TS: ts}}
	}
	notes := []recall.Hit{
		note("note:01A#1", "knowledge/people/owner.md", "## Home\n\nThe owner moved to Lisbon in May 2026, with Ana."),
		note("note:01B#0", "knowledge/projects/kayak.md", "The owner is building a cedar strip kayak."),
	}
	turns := []recall.Hit{
		turn("01T1", "user", "We found a flat near the river in Lisbon."),
		turn("01T2", "agent", "Congratulations on the flat! Is it close to Ana's work?"),
	}
	tools := []recall.Hit{{Doc: recall.Doc{ID: "01X1", Kind: recall.KindTool, Role: "tool", Channel: "weather", Text: "tool weather (Lisbon this week)\nsunny, 24°C", TS: ts}}}
	// Both notes fit in 100 tokens, leaving ~30; 40 tokens alone would
	// hold one turn, not two.
	req := memory.ContextRequest{Query: "where do I live now?", Knowledge: 100, Turns: 40, Tools: 60}
	got := memoryBlock(req, notes, turns, tools)
	path := filepath.Join("testdata", "memory-block.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("memory block:\n%s\nwant:\n%s", got, want)
	}
}
