package curator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mnemo/mnemo/memory/journal"
)

// FlushSchemaName names the flush pass's schema on the wire.
const FlushSchemaName = "memory_flush"

// FlushSchema is the flush pass's reply: Schema's ops and questions, and
// the thread summary that takes the flushed records' place in the
// context window.
var FlushSchema = flushSchema()

func flushSchema() json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(Schema, &s); err != nil {
		panic(err) // Schema is a constant
	}
	s["required"] = []string{"summary", "ops", "questions"}
	s["properties"].(map[string]any)["summary"] = map[string]any{
		"type":        "string",
		"description": "the conversation so far, up to the last record shown: the summary given, carried forward, and what the new records add; plain Markdown",
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// FlushPromptPath is the flush pass's prompt in the vault.
const FlushPromptPath = "prompts/flush.system.md"

// FlushPrompt is the flush pass's system prompt when the vault has no
// prompts/flush.system.md (the shipped file says the same).
const FlushPrompt = `You are the curator of a personal memory. The oldest part of a
conversation is about to leave the assistant's context window. Before it
does, make sure nothing that matters is forgotten.

- summary: rewrite the summary so far to cover the records shown too:
  durable facts, decisions, open threads, commitments (who promised what,
  by when), and where the conversation left off. Short, specific, in the
  third person; never invent.
- ops: propose the durable facts, open threads and commitments worth a
  note of their own, as the curator does after each turn (sources are the
  ids shown; an inference is marked ` + "`inferred`" + `). Nothing to keep: an
  empty list.
- questions: what to ask the person instead of guessing.
`

// FlushMessage renders what the flush pass reads: the summary so far
// (empty at the first flush) and the records leaving the window.
func FlushMessage(thread, summary string, recs []journal.Record) string {
	var b strings.Builder
	if s := strings.TrimSpace(summary); s != "" {
		b.WriteString("## Summary so far\n")
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	b.WriteString("## Leaving the context window\n")
	b.WriteString(Message(thread, recs, 0))
	b.WriteString("Also write the summary, carried forward to the last record shown.\n")
	return b.String()
}

// DecodeFlush checks a flush reply: its summary, which must not be
// empty, and its ops and questions as Decode does.
func DecodeFlush(reply []byte, in Input) (Result, string, error) {
	var top map[string]json.RawMessage
	if err := strict(reply, &top); err != nil {
		return Result{}, "", fmt.Errorf("flush reply: %w", err)
	}
	var summary string
	if raw, ok := top["summary"]; !ok || json.Unmarshal(raw, &summary) != nil || strings.TrimSpace(summary) == "" {
		return Result{}, "", errors.New("flush reply: no summary")
	}
	delete(top, "summary")
	rest, err := json.Marshal(top)
	if err != nil {
		return Result{}, "", fmt.Errorf("flush reply: %w", err)
	}
	res, err := Decode(rest, in)
	if err != nil {
		return Result{}, "", err
	}
	return res, strings.TrimSpace(summary), nil
}
