package curator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mnemo/mnemo/memory/journal"
)

// RewriteSchemaName names the rewrite pass's schema on the wire.
const RewriteSchemaName = "memory_rewrite"

// RewriteSchema is the reply that rewrites a note some of whose sources
// the owner forgot: the note again without what only they said, or its
// removal when nothing is left.
var RewriteSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["action", "title", "body", "reason"],
  "properties": {
    "action": {"type": "string", "enum": ["rewrite", "remove"]},
    "title": {"type": ["string", "null"], "description": "the note's title (rewrite)"},
    "body": {"type": ["string", "null"], "description": "the note's whole text in Markdown, saying only what the records shown support (rewrite)"},
    "reason": {"type": "string", "description": "what was taken out, in a sentence, without repeating it"}
  }
}`)

// RewritePromptPath is the rewrite pass's prompt in the vault.
const RewritePromptPath = "prompts/rewrite.system.md"

// RewritePrompt is the rewrite pass's system prompt when the vault has no
// prompts/rewrite.system.md (the shipped file says the same).
const RewritePrompt = `You keep a personal memory. The person asked it to forget some of
what they said. A note was made partly from those words; the records it
still rests on are shown, each under its id.

- rewrite: the note again, saying only what the records shown support.
  Drop every fact, name, detail and quote that comes only from what was
  forgotten, and do not hint at it ("something was removed" is enough in
  the reason, never in the note). Keep the title if it still fits.
- remove: when the records shown support nothing the note says.
- reason: one sentence on what kind of thing was taken out, without
  repeating it.
`

// RewriteMessage renders what the rewrite pass reads: the note as it is
// (path, title, body) and the records it still rests on.
func RewriteMessage(path, title, body, thread string, recs []journal.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## The note %s\nTitle: %s\n\n%s\n\n", path, strings.TrimSpace(title), strings.TrimSpace(body))
	b.WriteString("## The records it still rests on\n")
	if len(recs) == 0 {
		b.WriteString("(none)\n")
	} else {
		b.WriteString(Message(thread, recs, 0))
	}
	b.WriteString("\nAnswer in the schema: rewrite the note without what was forgotten, or remove it.\n")
	return b.String()
}

// Rewrite is a decoded rewrite reply.
type Rewrite struct {
	Remove      bool
	Title, Body string
	Reason      string
}

// DecodeRewrite checks a rewrite reply against RewriteSchema: a rewrite
// needs a title and a body; every reply a reason.
func DecodeRewrite(reply []byte) (Rewrite, error) {
	var w struct {
		Action *string `json:"action"`
		Title  *string `json:"title"`
		Body   *string `json:"body"`
		Reason *string `json:"reason"`
	}
	if err := strict(reply, &w); err != nil {
		return Rewrite{}, fmt.Errorf("rewrite reply: %w", err)
	}
	r := Rewrite{Title: strings.TrimSpace(deref(w.Title)), Body: strings.TrimSpace(deref(w.Body)), Reason: strings.TrimSpace(deref(w.Reason))}
	if r.Reason == "" {
		return Rewrite{}, errors.New("rewrite reply: no reason")
	}
	switch deref(w.Action) {
	case "remove":
		r.Remove, r.Title, r.Body = true, "", ""
	case "rewrite":
		if r.Title == "" || r.Body == "" {
			return Rewrite{}, errors.New("rewrite reply: a rewrite needs a title and a body")
		}
	default:
		return Rewrite{}, fmt.Errorf("rewrite reply: action %q: want rewrite or remove", deref(w.Action))
	}
	return r, nil
}
