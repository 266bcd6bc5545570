package recollect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
	"github.com/mnemo/mnemo/memory/vault"
)

// textCounter counts the texts it embeds.
type textCounter struct {
	*recalltest.HashEmbedder
	texts atomic.Int64
}

func (e *textCounter) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	return e.HashEmbedder.Embed(ctx, texts)
}

// note is a knowledge note's file.
func note(id, status string, conf float64, body string) string {
	return fmt.Sprintf("---\nid: %s\ntitle: About the owner\ntype: person\nstatus: %s\ntags: [owner]\nconfidence: %g\n---\n%s", id, status, conf, body)
}

// writeNote writes the file p (slash-separated) of root.
func writeNote(t *testing.T, root, p, text string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// knowledgeMemory is a Memory over root whose recall is open on the
// embedded index in root/index/embedded, with emb, its notes reconciled.
func knowledgeMemory(t *testing.T, root string, emb recall.Embedder) *Memory {
	t.Helper()
	j, _ := openJournal(t)
	dim := 0
	if emb != nil {
		dim = emb.Dim()
	}
	ix, err := embedded.Open(filepath.Join(root, "index", "embedded"), embedded.Options{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	m := New(Options{Root: root, Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)})
	m.rs = newSystem(ix, emb, "embedded", m.o)
	m.rs.reconcileKnowledge(t.Context())
	return m
}

var (
	anaID  = vault.NewNoteID()
	oldID  = vault.NewNoteID()
	lowID  = vault.NewNoteID()
	anaMD  = note(anaID, "active", 0.9, "The owner is Ana.\n\n## Home\n\nAna moved to Lisbon in May.\n\n## Work\n\nAna writes compilers.\n")
	oldMD  = note(oldID, "superseded", 0.8, "## Home\n\nAna lives in Porto, near Lisbon's rival.\n")
	lowMD  = note(lowID, "active", 0.3, "## Guess\n\nAna may like Lisbon trams.\n")
	notesA = map[string]string{
		"knowledge/people/ana.md":     anaMD,
		"knowledge/people/ana-old.md": oldMD,
		"knowledge/people/guess.md":   lowMD,
		"knowledge/people/README.md":  "# People\n\nLisbon is not a note.\n",
	}
)

func TestKnowledgeSearch(t *testing.T) {
	root := t.TempDir()
	for p, text := range notesA {
		writeNote(t, root, p, text)
	}
	m := knowledgeMemory(t, root, nil) // lexical only: exact expectations
	tests := []struct {
		name string
		req  memory.SearchRequest
		want []string // paths § headings, in any order
	}{
		{"active only by default", memory.SearchRequest{Query: "Lisbon", K: 10, Kinds: []string{memory.KindKnowledge}},
			[]string{"knowledge/people/ana.md § Home", "knowledge/people/guess.md § Guess"}},
		{"all kinds find notes too", memory.SearchRequest{Query: "Lisbon", K: 10},
			[]string{"knowledge/people/ana.md § Home", "knowledge/people/guess.md § Guess"}},
		{"superseded when asked", memory.SearchRequest{Query: "Lisbon", K: 10, Statuses: []string{memory.StatusSuperseded}},
			[]string{"knowledge/people/ana-old.md § Home"}},
		{"confidence floor", memory.SearchRequest{Query: "Lisbon", K: 10, MinConfidence: 0.5},
			[]string{"knowledge/people/ana.md § Home"}},
		{"confidence floor met exactly", memory.SearchRequest{Query: "Lisbon", K: 10, MinConfidence: 0.9},
			[]string{"knowledge/people/ana.md § Home"}},
		{"turns only leave notes out", memory.SearchRequest{Query: "Lisbon", K: 10, Kinds: []string{memory.KindTurn}}, nil},
		{"text before the first heading", memory.SearchRequest{Query: "owner Ana", K: 1, Kinds: []string{memory.KindKnowledge}},
			[]string{"knowledge/people/ana.md § "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := m.Search(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				if h.Kind != memory.KindKnowledge || !strings.HasPrefix(h.ID, "note:") || h.Status == "" || (h.Confidence != 0.9 && h.Confidence != 0.3 && h.Confidence != 0.8) || h.TS.IsZero() {
					t.Errorf("hit %+v: want a knowledge hit with its note's id, status, confidence and a time (the file's, for a note without dates)", h)
				}
				got = append(got, h.Path+" § "+h.Heading)
			}
			slices.Sort(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKnowledgeSearchValidates(t *testing.T) {
	m := knowledgeMemory(t, t.TempDir(), nil)
	for _, req := range []memory.SearchRequest{
		{Query: "x", Statuses: []string{"archived"}},
		{Query: "x", MinConfidence: 1.5},
	} {
		if _, err := m.Search(t.Context(), req); err == nil {
			t.Errorf("%+v: want an error", req)
		}
	}
}

// TestKnowledgeInStep: a note written, edited and removed is found, found
// as edited, and no longer found; a restart embeds only what changed while
// hearth was stopped.
func TestKnowledgeInStep(t *testing.T) {
	root := t.TempDir()
	emb := &textCounter{HashEmbedder: recalltest.NewHashEmbedder(32)}
	m := knowledgeMemory(t, root, emb)
	// find is the ids of the hits for q whose text says q (the vector
	// side finds every note a little).
	find := func(m *Memory, q string) []string {
		t.Helper()
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: q, K: 10, Kinds: []string{memory.KindKnowledge}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			if strings.Contains(h.Text, q) {
				out = append(out, h.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	const p = "knowledge/people/ana.md"
	writeNote(t, root, p, anaMD)
	if err := m.Knowledge(t.Context(), []string{p, "audit/ledger.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if got := find(m, "compilers"); !slices.Equal(got, []string{noteDocID(anaID, 2)}) {
		t.Fatalf("after a write: %q", got)
	}
	before := emb.texts.Load()
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if n := emb.texts.Load() - before; n != 0 {
		t.Errorf("an unchanged note embedded %d texts again", n)
	}

	// Edited: one section fewer; the old third section is gone.
	writeNote(t, root, p, note(anaID, "active", 0.9, "## Home\n\nAna moved to Lisbon.\n"))
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if got := find(m, "compilers"); len(got) != 0 {
		t.Errorf("an edited note still finds its old text: %q", got)
	}
	if got := find(m, "Lisbon"); !slices.Equal(got, []string{noteDocID(anaID, 0)}) {
		t.Errorf("after an edit: %q", got)
	}

	// Deprecated: out of a default search.
	writeNote(t, root, p, note(anaID, "deprecated", 0.9, "## Home\n\nAna moved to Lisbon.\n"))
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if got := find(m, "Lisbon"); len(got) != 0 {
		t.Errorf("a deprecated note is found by default: %q", got)
	}

	// Removed.
	writeNote(t, root, p, anaMD)
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, filepath.FromSlash(p)))
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if got := find(m, "Lisbon"); len(got) != 0 {
		t.Errorf("a removed note is found: %q", got)
	}

	// Stopped: two notes written, one of them then changed by hand, and
	// another removed, while no recall runs.
	writeNote(t, root, p, anaMD)
	writeNote(t, root, "knowledge/people/guess.md", lowMD)
	if err := m.Knowledge(t.Context(), []string{p, "knowledge/people/guess.md"}); err != nil {
		t.Fatal(err)
	}
	m.rs.index.Close()
	writeNote(t, root, p, note(anaID, "active", 0.9, "## Home\n\nAna moved to Madeira.\n"))
	os.Remove(filepath.Join(root, "knowledge", "people", "guess.md"))
	writeNote(t, root, "summaries/daily/2026-11-25.md", note(vault.NewNoteID(), "active", 1, "## Day\n\nPlanned a trip to Madeira.\n"))
	before = emb.texts.Load()
	m2 := knowledgeMemory(t, root, emb)
	if n := emb.texts.Load() - before; n != 2 {
		t.Errorf("a restart embedded %d texts, want 2 (the changed note's one section and the new summary's)", n)
	}
	if got := find(m2, "Madeira"); len(got) != 2 {
		t.Errorf("after a restart, Madeira finds %q, want the edited note and the summary", got)
	}
	if got := find(m2, "trams"); len(got) != 0 {
		t.Errorf("a note removed while stopped is found: %q", got)
	}
}

// TestKnowledgeIndexReset: an index reset (a new embedder) indexes every
// note again, though the seen-file says they were indexed.
func TestKnowledgeIndexReset(t *testing.T) {
	root := t.TempDir()
	writeNote(t, root, "knowledge/people/ana.md", anaMD)
	m := knowledgeMemory(t, root, nil)
	if err := m.rs.index.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.rs.index.Close()
	m2 := knowledgeMemory(t, root, nil)
	hits, err := m2.Search(t.Context(), memory.SearchRequest{Query: "compilers", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Path != "knowledge/people/ana.md" || hits[0].Heading != "Work" {
		t.Errorf("after a reset: %+v", hits)
	}
}

// TestKnowledgeMalformed: a note that does not parse is out of recall, and
// back once fixed.
func TestKnowledgeMalformed(t *testing.T) {
	root := t.TempDir()
	const p = "knowledge/people/ana.md"
	writeNote(t, root, p, "no front matter\n## Work\nAna writes compilers\n")
	m := knowledgeMemory(t, root, nil)
	search := func() int {
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "compilers", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if n := search(); n != 0 {
		t.Errorf("a malformed note gives %d hits", n)
	}
	writeNote(t, root, p, anaMD)
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if n := search(); n != 1 {
		t.Errorf("a fixed note gives %d hits, want 1", n)
	}
}

func TestNoteSections(t *testing.T) {
	tests := []struct {
		body string
		want []string // headings
	}{
		{"", nil},
		{"just text\n", []string{""}},
		{"# A\nx\n## B ##\ny\n", []string{"A", "B"}},
		{"intro\n### C\n", []string{"", "C"}},
		{"#nospace\n####### seven\n", []string{""}},
		{"```\n# not a heading\n```\n# D\n", []string{"", "D"}},
		{"~~~~\n# in\n~~~\n# still in\n~~~~\n# E\n", []string{"", "E"}},
		{"   # F\r\nbody\r\n", []string{"F"}},
	}
	for _, tc := range tests {
		var got []string
		for _, s := range noteSections(tc.body) {
			got = append(got, s.Heading)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: headings %q, want %q", tc.body, got, tc.want)
		}
	}
}

func FuzzNoteSections(f *testing.F) {
	for _, s := range []string{"", "# A\nx\n## B\ny", "```\n# x\n```\n# y\n", "~~~\n", "   ###   \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var b strings.Builder
		for i, s := range noteSections(body) {
			if s.Text == "" {
				t.Fatalf("section %d is empty", i)
			}
			first, _, _ := strings.Cut(s.Text, "\n")
			if h, ok := heading(strings.TrimRight(first, "\r")); i > 0 && (!ok || h != s.Heading) {
				t.Fatalf("section %d opens with %q, not its heading %q", i, first, s.Heading)
			}
			b.WriteString(s.Text)
		}
		if b.String() != body {
			t.Fatalf("sections join to %q, not the body %q", b.String(), body)
		}
	})
}

// TestRelevantKnowledgeFirst: the injected block puts the sections of
// active notes first, each named by its file and heading, within the
// knowledge allowance; what the notes leave of it goes to older turns; a
// superseded note is never injected.
func TestRelevantKnowledgeFirst(t *testing.T) {
	root := t.TempDir()
	writeNote(t, root, "knowledge/projects/garden.md", note(vault.NewNoteID(), "active", 0.9,
		"## Beds\n\nThe owner grows garden tomatoes in two raised beds.\n"))
	writeNote(t, root, "knowledge/projects/garden-old.md", note(vault.NewNoteID(), "superseded", 0.9,
		"## Beds\n\nThe owner grows garden tomatoes in pots.\n"))
	m := knowledgeMemory(t, root, nil)
	if err := m.rs.index.Upsert(t.Context(), gardenDocs(8), nil); err != nil {
		t.Fatal(err)
	}
	headings := []string{toolsHeading, turnsHeading, knowledgeHeading}
	tests := []struct {
		name                    string
		knowledge, turns, tools int
		wantNotes, wantTurns    bool
		maxTurns                int // tokens the turns section may use
	}{
		{name: "notes first, then turns", knowledge: 400, turns: 3600, tools: 0, wantNotes: true, wantTurns: true, maxTurns: 3600 + 400},
		{name: "turns take what the notes leave", knowledge: 3600, turns: 0, wantNotes: true, wantTurns: true, maxTurns: 3600},
		{name: "no knowledge share, no notes", knowledge: 0, turns: 3600, wantTurns: true, maxTurns: 3600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			injected := map[string]bool{}
			block := m.Relevant(t.Context(), memory.ContextRequest{Query: "garden tomatoes", Knowledge: tc.knowledge, Turns: tc.turns, Tools: tc.tools, Injected: injected})
			secs := sections(t, block, headings...)
			notes, turns := secs[knowledgeHeading], secs[turnsHeading]
			if (notes != "") != tc.wantNotes || (turns != "") != tc.wantTurns {
				t.Fatalf("notes %v, turns %v; want %v, %v:\n%s", notes != "", turns != "", tc.wantNotes, tc.wantTurns, block)
			}
			if tc.wantNotes {
				if !strings.HasPrefix(block, indexer.InjectedSentinel+"\n"+knowledgeHeading) {
					t.Errorf("the notes are not first:\n%s", block)
				}
				if !strings.Contains(notes, "- [knowledge/projects/garden.md § Beds] The owner grows garden tomatoes in two raised beds.\n") {
					t.Errorf("notes section does not name the note by file and heading:\n%s", notes)
				}
				if n := memory.EstimateTokens(notes); n > tc.knowledge {
					t.Errorf("notes section is %d tokens, over %d", n, tc.knowledge)
				}
			}
			if strings.Contains(block, "pots") || strings.Contains(block, "garden-old") {
				t.Errorf("a superseded note is injected:\n%s", block)
			}
			if n := memory.EstimateTokens(notes) + memory.EstimateTokens(turns); n > tc.knowledge+tc.turns {
				t.Errorf("notes and turns use %d tokens, over their %d", n, tc.knowledge+tc.turns)
			}
			shown := 0
			for id := range injected {
				if strings.HasPrefix(id, "note:") {
					shown++
				}
			}
			if tc.wantNotes && shown != 1 {
				t.Errorf("injected = %v, want the one note section shown", injected)
			}
		})
	}
}

// TestToolCatalogNotInjected: the generated tool catalog is found by a
// search but never injected as something the companion knows.
func TestToolCatalogNotInjected(t *testing.T) {
	root := t.TempDir()
	writeNote(t, root, vault.ToolCatalogFile, note(vault.NewNoteID(), "active", 1,
		"## garden_planner\n\nPlans garden tomatoes in raised beds.\n"))
	writeNote(t, root, "knowledge/projects/garden.md", note(vault.NewNoteID(), "active", 0.9,
		"## Beds\n\nThe owner grows garden tomatoes in two raised beds.\n"))
	m := knowledgeMemory(t, root, nil)
	hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "garden tomatoes raised beds", K: 5, Kinds: []string{memory.KindKnowledge}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(hits, func(h memory.Hit) bool { return h.Path == vault.ToolCatalogFile }) {
		t.Fatalf("search hits %+v: want the catalog among them", hits)
	}
	block := m.Relevant(t.Context(), memory.ContextRequest{Query: "garden tomatoes raised beds", Knowledge: 2000, Injected: map[string]bool{}})
	if !strings.Contains(block, "knowledge/projects/garden.md") {
		t.Fatalf("the note is not injected:\n%s", block)
	}
	if strings.Contains(block, vault.ToolCatalogFile) || strings.Contains(block, "garden_planner") {
		t.Errorf("the tool catalog is injected:\n%s", block)
	}
}

// TestKnowledgeSeenLog: a write records the note it indexed by a line
// appended to the seen log, not by rewriting the seen file; a restart
// replays the log (nothing embedded again), ignores a torn line and lines
// of another generation, and the log is folded into the file once it
// passes minSeenLog lines.
func TestKnowledgeSeenLog(t *testing.T) {
	root := t.TempDir()
	for p, text := range notesA {
		writeNote(t, root, p, text)
	}
	emb := &textCounter{HashEmbedder: recalltest.NewHashEmbedder(32)}
	m := knowledgeMemory(t, root, emb)
	seen := filepath.Join(root, "index", KnowledgeSeenFile)
	log := filepath.Join(root, "index", knowledgeSeenLog)
	file, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	const p = "knowledge/people/ana.md"
	writeNote(t, root, p, note(anaID, "active", 0.9, "## Home\n\nAna moved to Madeira.\n"))
	os.Remove(filepath.Join(root, "knowledge/people/guess.md"))
	if err := m.Knowledge(t.Context(), []string{p, "knowledge/people/guess.md"}); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(seen); string(now) != string(file) {
		t.Error("a write rewrote the seen file")
	}
	lines, err := os.ReadFile(log)
	if err != nil || strings.Count(string(lines), "\n") != 2 {
		t.Fatalf("seen log: %q, %v", lines, err)
	}

	restart := func(step string) *Memory {
		t.Helper()
		m.rs.index.Close()
		before := emb.texts.Load()
		m = knowledgeMemory(t, root, emb)
		if n := emb.texts.Load() - before; n != 0 {
			t.Errorf("%s: a restart embedded %d texts again", step, n)
		}
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "Madeira", K: 10, Kinds: []string{memory.KindKnowledge}})
		if err != nil || len(hits) == 0 || hits[0].Path != p {
			t.Errorf("%s: Madeira finds %+v, %v", step, hits, err)
		}
		return m
	}
	restart("with the log")

	// A line of another generation (a crash between writing the file
	// whole and removing the log) says ana.md was dropped; a torn line
	// ends the log.
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "{\"gen\":\"other\",\"path\":%q,\"id\":\"\",\"sha256\":\"\",\"docs\":0}\n{\"gen\":", p)
	f.Close()
	restart("with a stale and a torn line")

	// The torn line has the next write fold the log into the file.
	writeNote(t, root, p, note(anaID, "active", 0.9, "## Home\n\nAna moved to Madeira for good.\n"))
	if err := m.Knowledge(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("the log after a torn line was not folded: %v", err)
	}
	restart("after folding")

	// Past minSeenLog lines, the log is folded.
	for i := range minSeenLog + 1 {
		writeNote(t, root, p, note(anaID, "active", 0.9, fmt.Sprintf("## Home\n\nAna moved to Madeira (%d).\n", i)))
		if err := m.Knowledge(t.Context(), []string{p}); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(log); err == nil && strings.Count(string(b), "\n") > minSeenLog {
		t.Errorf("the log holds %d lines", strings.Count(string(b), "\n"))
	}
	restart("after many writes")
}
