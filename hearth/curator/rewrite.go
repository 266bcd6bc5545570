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
what they said. A note was made partly from those words. Its old text is
not shown, since it holds what was forgotten: only its title, type and
tags, and the records it still rests on, each under its id.

- rewrite: the note again, from the records shown alone, saying only
  what they support. Do not hint at anything else ("something was
  removed" is enough in the reason, never in the note). Keep the title
  if the records shown support it; otherwise write one they do.
- remove: when the records shown support nothing worth keeping.
- reason: one sentence on what kind of thing was taken out, without
  repeating it.
`

// RewriteNote is what the rewrite pass may see of a note some of whose
// sources the owner forgot: its front matter without the forgotten
// sources. Never its old text, which holds what was forgotten.
type RewriteNote struct {
	Path, Title, Type string
	Tags              []string
}

// RewriteMessage renders what the rewrite pass reads: what it may see of
// the note (n) and the records it still rests on, read from the journal.
func RewriteMessage(n RewriteNote, thread string, recs []journal.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## The note %s\nTitle: %s\nType: %s\n", n.Path, strings.TrimSpace(n.Title), strings.TrimSpace(n.Type))
	if len(n.Tags) > 0 {
		fmt.Fprintf(&b, "Tags: %s\n", strings.Join(n.Tags, ", "))
	}
	b.WriteString("(Its old text is not shown: it holds what was forgotten.)\n\n")
	fmt.Fprintf(&b, "## The records it still rests on (conversation %q)\n", thread)
	if len(recs) == 0 {
		b.WriteString("(none)\n")
	}
	for _, r := range recs {
		role := r.Role
		if r.Tool != nil {
			role = "tool " + r.Tool.Name
		}
		fmt.Fprintf(&b, "[%s] %s: %s\n", r.ID, role, strings.TrimSpace(r.Text))
	}
	b.WriteString("\nAnswer in the schema: write the note again from these records alone, or remove it.\n")
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
