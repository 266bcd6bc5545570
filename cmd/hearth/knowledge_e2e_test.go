package main_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/vault"
)

// searchOnce sends one search and returns its hits.
func searchOnce(t *testing.T, c *ipc.Conn, s *ipc.Search) []ipc.SearchHit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Ref = "k"
	if err := c.Send(s); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("search %q: %v", s.Query, err)
		}
		switch m := m.(type) {
		case *ipc.SearchResults:
			if m.Ref == "k" {
				return m.Results
			}
		case *ipc.Error:
			t.Fatalf("search %q: %+v", s.Query, m)
		}
	}
}

// TestKnowledgeInRecall: a note the owner wrote while hearth was stopped is
// found once recall is ready; a note the agent writes is found as soon as
// its write is applied, by its file and heading; a superseded note only
// when asked for.
func TestKnowledgeInRecall(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	note := func(p, status, body string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		text := "---\nid: " + vault.NewNoteID() + "\ntitle: Home\ntype: person\nstatus: " + status + "\nconfidence: 0.8\n---\n" + body
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	note("knowledge/people/home.md", "active", "## Where\n\nThe owner lives in Porto, by the Douro.\n")
	note("knowledge/people/old-home.md", "superseded", "## Where\n\nThe owner lived in Braga, far from the Douro.\n")
	d := startDaemon(t, root, openaiEnv(model), vectorsArgs()...)
	c := mustDial(t, d.Addr)
	indexUntil(t, c, "recall ready", func(ix *ipc.IndexHealth) bool { return ix.Ready })

	// With word vectors other notes (the tool catalog) may follow as weak
	// semantic matches: the note comes first, the superseded one never.
	hits := searchOnce(t, c, &ipc.Search{Query: "Douro", Kinds: []string{ipc.KindKnowledge}})
	if len(hits) == 0 || hits[0].Path != "knowledge/people/home.md" || hits[0].Heading != "Where" || hits[0].Status != "active" || hits[0].Confidence != 0.8 {
		t.Fatalf("hits for Douro: %+v, want the active note first, by file and heading", hits)
	}
	for _, h := range hits {
		if h.Path == "knowledge/people/old-home.md" || h.Status != "active" {
			t.Fatalf("hits for Douro: %+v, want active notes only", hits)
		}
	}
	hits = searchOnce(t, c, &ipc.Search{Query: "Douro", Kinds: []string{ipc.KindKnowledge}, Statuses: []string{"superseded"}})
	if len(hits) == 0 || hits[0].Path != "knowledge/people/old-home.md" {
		t.Fatalf("superseded hits for Douro: %+v", hits)
	}
	for _, h := range hits {
		if h.Status != "superseded" {
			t.Fatalf("superseded hits for Douro: %+v, want superseded notes only", hits)
		}
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/projects/kayak.md","title":"Kayak","type":"project","content":"The owner is building a cedar kayak this winter.","why":"the owner told me"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	c.Send(&ipc.Message{Content: "remember that I am building a cedar kayak this winter", Ref: "m1"})
	for _, m := range collect(t, c) {
		if r, ok := m.(*ipc.ToolResult); ok && r.Name == "memory_propose" && r.Error != "" {
			t.Fatalf("memory_propose: %+v", r)
		}
	}
	// The write is indexed before it is applied: no waiting.
	hits = searchOnce(t, c, &ipc.Search{Query: "cedar kayak", Kinds: []string{ipc.KindKnowledge}})
	if len(hits) == 0 || hits[0].Path != "knowledge/projects/kayak.md" {
		t.Fatalf("hits for the agent's note: %+v", hits)
	}
}
