package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// TestPurgeIndexRebuilds: vault_purge of the index layer drops the recall
// index and rebuilds it in the background from the journal and the
// notes: health says rebuilding until it is done, then recall is ready
// again, having indexed everything once more, and finds the turns and
// the note. The agent's write on the way is a decision record in the
// journal, after its commit.
func TestPurgeIndexRebuilds(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model), vectorsArgs()...)
	c := mustDial(t, d.Addr)
	for _, said := range []string{
		"We planted tomatoes and basil in the raised garden bed in May.",
		"My sister Ana is moving to Lisbon next spring.",
	} {
		c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: said})
	}
	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/projects/kayak.md","title":"Kayak","type":"project","content":"The owner is building a cedar kayak this winter.","why":"the owner told me"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	c.Send(&ipc.Message{Content: "remember that I am building a cedar kayak this winter", Ref: "m1"})
	var decided *ipc.ProposalDecided
	for _, m := range collect(t, c) {
		if p, ok := m.(*ipc.ProposalDecided); ok {
			decided = p
		}
	}
	if decided == nil || decided.Decision != "applied" || decided.Commit == "" {
		t.Fatalf("the agent's note: %+v, want applied and committed", decided)
	}
	before := indexUntil(t, c, "recall ready", func(ix *ipc.IndexHealth) bool { return ix.Ready && ix.Indexed >= 3 })

	if p, ok := await(t, c, &ipc.VaultPurge{Layer: "index", Ref: "p1"}, "p1").(*ipc.VaultPurged); !ok || p.Layer != "index" {
		t.Fatalf("vault_purge index: %+v", p)
	}
	after := indexUntil(t, c, "the index rebuilt", func(ix *ipc.IndexHealth) bool {
		return ix.Ready && !ix.Rebuilding && ix.Indexed >= 2*before.Indexed
	})
	if after.Unavailable || after.Failures != 0 {
		t.Errorf("health after the rebuild: %+v", after)
	}
	if hits := searchOnce(t, c, &ipc.Search{Query: "tomatoes basil"}); len(hits) == 0 || !strings.Contains(hits[0].Turn.Content, "tomatoes") {
		t.Errorf("hits for the garden after the rebuild: %+v", hits)
	}
	if hits := searchOnce(t, c, &ipc.Search{Query: "cedar kayak", Kinds: []string{ipc.KindKnowledge}}); len(hits) == 0 || hits[0].Path != "knowledge/projects/kayak.md" {
		t.Errorf("hits for the note after the rebuild: %+v", hits)
	}

	shards, _ := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	var journaled string
	for _, s := range shards {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"kind":"decision"`) {
				journaled += l + "\n"
			}
		}
	}
	if strings.Count(journaled, "\n") != 1 || !strings.Contains(journaled, `"proposal":"`+decided.ID+`"`) || !strings.Contains(journaled, `"commit":"`+decided.Commit+`"`) || !strings.Contains(journaled, `"by":"policy"`) {
		t.Errorf("decision records in the journal:\n%s\nwant the one of %s", journaled, decided.ID)
	}
}
