package main_test

import (
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// The entity graph against the real hearth: after a turn naming Ana Lima
// and Lisbon, a turn naming Ana injects her entity and its relations into
// the model's context, and the agent's memory_entities and memory_related
// find her, typed and related, with the first turn as evidence.
func TestEntitiesOverTheWire(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, t.TempDir(), openaiEnv(model))
	c := mustDial(t, d.Addr)

	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Lovely."}}})
	if err := c.Send(&ipc.Message{Content: "I had lunch with Ana Lima in Lisbon."}); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, m := range collect(t, c) {
		if ts, ok := m.(*ipc.TurnStored); ok && ts.Turn.Role == "user" {
			first = ts.Turn.ID
		}
	}
	if first == "" {
		t.Fatal("the user turn was not stored")
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "t1", Name: "memory_entities", Arguments: `{"name":"ana"}`},
			{ID: "t2", Name: "memory_related", Arguments: `{"name":"Ana"}`},
		}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	if err := c.Send(&ipc.Message{Content: "How is Ana doing?"}); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, m := range collect(t, c) {
		if r, ok := m.(*ipc.ToolResult); ok {
			results[r.ID] = r.Result + r.Error
		}
	}
	for id, want := range map[string]string{
		"t1": "- Ana Lima (person) id=ana-lima aliases=Ana mentions=2",
		"t2": "- Lisbon (place) relation=mentioned_with weight=0.28 count=1 evidence=" + first,
	} {
		if !strings.Contains(results[id], want) {
			t.Errorf("tool %s result %q, want it to contain %q", id, results[id], want)
		}
	}
	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests, want 2 or more", len(reqs))
	}
	var system string
	for _, m := range reqs[1].Messages {
		if m.Role == "system" {
			system += m.Content
		}
	}
	if !strings.Contains(system, "- Ana Lima (person, also Ana;") || !strings.Contains(system, "related: Lisbon (place, mentioned_with 0.28)") {
		t.Errorf("the second turn's context lacks Ana's entity lines:\n%s", system)
	}
}
