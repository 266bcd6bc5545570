package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// TestModelChoices: the models a request may name are the conversation's
// (the preference over the configuration), the configuration's own, and
// every other provider with a key, at its default model; a named one is
// answered by its own provider (two stand-ins tell which), anything else
// is no choice.
func TestModelChoices(t *testing.T) {
	oai := llmtest.NewOpenAI(t, "sk-oai")
	anth := llmtest.NewAnthropic(t, "sk-ant")
	p, write, _ := newTestPreferences(t, map[string]string{
		"MNEMO_PROVIDER": "openai", "MNEMO_MODEL": "stand-in",
		"OPENAI_BASE_URL": oai.URL, "OPENAI_API_KEY": "sk-oai",
		"ANTHROPIC_BASE_URL": anth.BaseURL(), "ANTHROPIC_API_KEY": "sk-ant",
	})
	anthName := "anthropic/" + llm.DefaultAnthropicModel
	want := []string{"stand-in", "openai/stand-in", llm.DefaultAnthropicModel, anthName}
	if got := p.Choices(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Choices() = %q, want %q (no xAI: no key)", got, want)
	}
	ask := func(name string) (got string) {
		t.Helper()
		m, ok := p.Named(name)
		if !ok {
			t.Fatalf("Named(%q): no model", name)
		}
		res, err := m.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "who?"}}}, func(string) {})
		if err != nil {
			t.Fatalf("Named(%q).Stream: %v", name, err)
		}
		return res.Text
	}
	oai.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "openai here"}}})
	anth.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "anthropic here"}}})
	if got := ask(anthName); got != "anthropic here" || len(anth.Requests()) != 1 || len(oai.Requests()) != 0 {
		t.Fatalf("%s answered %q (anthropic saw %d requests, openai %d)", anthName, got, len(anth.Requests()), len(oai.Requests()))
	}
	if got := ask("stand-in"); got != "openai here" || len(oai.Requests()) != 1 || oai.Requests()[0].Model != "stand-in" {
		t.Fatalf("stand-in answered %q", got)
	}
	for _, name := range []string{"", "xai/" + llm.DefaultXAIModel, "openai/" + llm.DefaultAnthropicModel, "gpt-4o"} {
		if _, ok := p.Named(name); ok {
			t.Errorf("Named(%q) found a model; it is not configured", name)
		}
	}

	// A preference moves the conversation to anthropic: its model comes
	// first, the configuration's stays a choice.
	write(`{"provider": "anthropic", "model": "claude-pref"}`)
	want = []string{"claude-pref", "anthropic/claude-pref", "stand-in", "openai/stand-in", llm.DefaultAnthropicModel, anthName}
	if got := p.Choices(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("with a preference: Choices() = %q, want %q", got, want)
	}
}
