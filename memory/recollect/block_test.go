package recollect

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
)

// sections splits a memory block into its sections' texts by heading.
func sections(t *testing.T, block string, headings ...string) map[string]string {
	t.Helper()
	if block == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(block, indexer.InjectedSentinel+"\n")
	if !ok {
		t.Fatalf("block does not start with the sentinel: %q", block)
	}
	if len(headings) == 0 {
		headings = []string{toolsHeading, turnsHeading}
	}
	out := map[string]string{}
	for _, heading := range headings {
		if i := strings.Index(rest, heading); i >= 0 {
			out[heading] = rest[i:]
			rest = rest[:i]
		}
	}
	if rest != "" {
		t.Fatalf("block has text outside its sections: %q", rest)
	}
	return out
}

func TestRelevant(t *testing.T) {
	m := openMemory(t, nil, gardenDocs(8)...)
	tests := []struct {
		name         string
		turns, tools int
		exclude      []string
		wantTurns    []string // ids that must be in the turns section
		wantTools    []string
		wantNoTurns  bool // no turns section
		wantNoTools  bool
		wantTruncate bool // the allowances must leave some hits out
	}{
		{name: "both sections", turns: 3600, tools: 2400, wantTurns: []string{"turn00", "turn07"}, wantTools: []string{"tool00", "tool07"}},
		{name: "the window is left out", turns: 3600, tools: 2400, exclude: []string{"turn00", "tool01", "chunked"}, wantTurns: []string{"turn01"}, wantTools: []string{"tool00"}},
		{name: "small allowances fill what fits", turns: 120, tools: 60, wantTruncate: true},
		{name: "no allowance for tools, no tools section", turns: 3600, tools: 0, wantTurns: []string{"turn00"}, wantNoTools: true},
		{name: "no allowance for turns, no turns section", turns: 0, tools: 3600, wantTools: []string{"tool00"}, wantNoTurns: true},
		{name: "an allowance too small for any line omits the section", turns: 3600, tools: 30, wantTurns: []string{"turn00"}, wantNoTools: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exclude := map[string]bool{}
			for _, id := range tt.exclude {
				exclude[id] = true
			}
			block := m.Relevant(context.Background(), memory.ContextRequest{Query: "garden tomatoes", Exclude: exclude, Turns: tt.turns, Tools: tt.tools})
			secs := sections(t, block)
			turns, tools := secs[turnsHeading], secs[toolsHeading]
			if n := memory.EstimateTokens(turns); n > tt.turns {
				t.Errorf("turns section is %d tokens, over its allowance %d:\n%s", n, tt.turns, turns)
			}
			if n := memory.EstimateTokens(tools); n > tt.tools {
				t.Errorf("tools section is %d tokens, over its allowance %d:\n%s", n, tt.tools, tools)
			}
			if (turns == "") != tt.wantNoTurns || (tools == "") != tt.wantNoTools {
				t.Fatalf("sections: turns %v, tools %v; want turns %v, tools %v:\n%s", turns != "", tools != "", !tt.wantNoTurns, !tt.wantNoTools, block)
			}
			if strings.Contains(turns, "tool0") || strings.Contains(tools, "turn0") {
				t.Errorf("a section holds the other kind:\n%s", block)
			}
			for _, id := range tt.exclude {
				if strings.Contains(block, id) {
					t.Errorf("%s is in the window but was injected:\n%s", id, block)
				}
			}
			for _, id := range tt.wantTurns {
				if !strings.Contains(turns, "] user: "+id) {
					t.Errorf("turns section lacks %s:\n%s", id, turns)
				}
			}
			for _, id := range tt.wantTools {
				if !strings.Contains(tools, "] "+id+" tool weather") {
					t.Errorf("tools section lacks %s:\n%s", id, tools)
				}
			}
			if tt.wantTruncate {
				if turns == "" || tools == "" || strings.Count(turns, "\n- ") >= 9 || strings.Count(tools, "\n- ") >= 8 {
					t.Errorf("small allowances: want some of each kind, not all:\n%s", block)
				}
			}
		})
	}
}

func TestRelevantNothingRelevant(t *testing.T) {
	m := openMemory(t, nil, gardenDocs(2)...)
	for _, req := range []memory.ContextRequest{
		{Query: "quantum chromodynamics", Turns: 3600, Tools: 2400},
		{Query: "garden tomatoes", Turns: 3600, Tools: 2400, Exclude: map[string]bool{"turn00": true, "turn01": true, "tool00": true, "tool01": true, "chunked": true}},
		{Query: "garden tomatoes"},
	} {
		if block := m.Relevant(context.Background(), req); block != "" {
			t.Errorf("Relevant(%+v) = %q, want no block", req, block)
		}
	}
}

// TestRelevantSession: the block that opens a session has its own
// headings, and every block tells Injected which records it showed (a
// chunk by its record's id), so that later blocks leave them out.
func TestRelevantSession(t *testing.T) {
	m := openMemory(t, nil, gardenDocs(2)...)
	for _, tc := range []struct {
		session      bool
		turns, tools string
	}{
		{false, turnsHeading, toolsHeading},
		{true, sessionTurnsHeading, sessionToolsHeading},
	} {
		injected := map[string]bool{}
		block := m.Relevant(context.Background(), memory.ContextRequest{Query: "garden tomatoes", Turns: 3600, Tools: 2400, Session: tc.session, Injected: injected})
		secs := sections(t, block, tc.tools, tc.turns)
		if secs[tc.turns] == "" || secs[tc.tools] == "" {
			t.Fatalf("session %v: block = %q, want both sections under their headings", tc.session, block)
		}
		for _, id := range []string{"turn00", "turn01", "tool00", "tool01", "chunked"} {
			if !injected[id] {
				t.Errorf("session %v: Injected = %v, lacks %s", tc.session, injected, id)
			}
		}
		if len(injected) != 5 {
			t.Errorf("session %v: Injected = %v, want the 5 records shown", tc.session, injected)
		}
		if again := m.Relevant(context.Background(), memory.ContextRequest{Query: "garden tomatoes", Turns: 3600, Tools: 2400, Exclude: injected}); again != "" {
			t.Errorf("session %v: a block leaving out what was injected = %q, want none", tc.session, again)
		}
	}
}

// countingEmbedder embeds every text as [1, 0] and counts its calls.
type countingEmbedder struct{ calls atomic.Int32 }

func (*countingEmbedder) Name() string { return "counting:2" }
func (*countingEmbedder) Dim() int     { return 2 }
func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

// TestRelevantEmbedsOnce: the turn and tool searches of one block share
// one embedding of the query (with a remote embedder, one request per turn
// rather than two).
func TestRelevantEmbedsOnce(t *testing.T) {
	docs := gardenDocs(3)
	ix, err := embedded.Open(filepath.Join(t.TempDir(), "index"), embedded.Options{Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	vecs := make([][]float32, len(docs))
	for i := range vecs {
		vecs[i] = []float32{1, 0}
	}
	if err := ix.Upsert(context.Background(), docs, vecs); err != nil {
		t.Fatal(err)
	}
	emb := &countingEmbedder{}
	m := New(Options{Session: session, Log: testLog(t)})
	m.rs = newSystem(ix, emb, "embedded", m.o)
	block := m.Relevant(context.Background(), memory.ContextRequest{Query: "tomatoes in the garden", Turns: 500, Tools: 500})
	secs := sections(t, block)
	if secs[turnsHeading] == "" || secs[toolsHeading] == "" {
		t.Fatalf("block = %q, want both sections", block)
	}
	if n := emb.calls.Load(); n != 1 {
		t.Errorf("embedder called %d times for one block, want 1", n)
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\n\tc", 10, "a b c"},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"}, // never splits a rune
	} {
		if got := oneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestKindsAgreeWithRecall(t *testing.T) {
	if memory.KindTurn != recall.KindTurn || memory.KindTool != recall.KindTool || memory.KindKnowledge != recall.KindKnowledge {
		t.Errorf("memory kinds %q, %q; recall kinds %q, %q", memory.KindTurn, memory.KindTool, recall.KindTurn, recall.KindTool)
	}
}
