// Package curator turns a curator model's structured reply into vault
// proposals and questions for the owner. It holds the strict JSON schema
// the model is asked to answer in (seed 003 §4.3: one op per proposal),
// and Decode, which checks a reply against that schema and against the
// turn it was made for: an op that cites a record the model was not
// shown, names a path it may not write, or lacks a reason or a source is
// refused with the reason, never proposed. Decode has no I/O of its own:
// the caller reads files through Input.Read and carries the proposals out
// (hearth's Propose), so the post-turn pass and scheduled jobs share it.
package curator

import "encoding/json"

// SchemaName names the schema on the wire.
const SchemaName = "memory_curation"

// Schema is the curator's reply, in the subset of JSON Schema that strict
// structured outputs accept: every property required, no others allowed,
// optional values as null. An empty ops list, or ops of kind "none", is
// the explicit "nothing to keep".
var Schema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["ops", "questions"],
  "properties": {
    "ops": {
      "type": "array",
      "description": "memory changes, one file each; empty or a single none when nothing should be kept",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["op", "path", "title", "body", "note_type", "tags", "confidence", "patch", "reason", "sources", "risk", "domains", "inferred", "supersedes", "contradicts"],
        "properties": {
          "op": {"type": "string", "enum": ["create", "update", "deprecate", "delete", "none"]},
          "path": {"type": "string", "description": "a .md file under knowledge/ or summaries/, e.g. knowledge/projects/garden.md; empty for none"},
          "title": {"type": ["string", "null"], "description": "the note's title (create, or update replacing the note)"},
          "body": {"type": ["string", "null"], "description": "the note's whole text in Markdown (create, or update replacing the note)"},
          "note_type": {"type": ["string", "null"], "description": "note, project, preference, person, event…"},
          "tags": {"type": ["array", "null"], "items": {"type": "string"}},
          "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
          "patch": {
            "type": ["object", "null"],
            "description": "an update that edits the note instead of replacing it",
            "additionalProperties": false,
            "required": ["body_append", "tags_add", "confirmed"],
            "properties": {
              "body_append": {"type": ["string", "null"]},
              "tags_add": {"type": ["array", "null"], "items": {"type": "string"}},
              "confirmed": {"type": ["boolean", "null"]}
            }
          },
          "reason": {"type": "string", "description": "why it belongs in memory, in a sentence"},
          "sources": {"type": "array", "items": {"type": "string"}, "description": "ids of the records it comes from, as shown"},
          "risk": {"type": "string", "enum": ["low", "medium", "high"]},
          "domains": {"type": "array", "items": {"type": "string"}, "description": "sensitive domains it touches: health, finance, legal…"},
          "inferred": {"type": "boolean", "description": "true when it is your inference, not something the person said"},
          "supersedes": {"type": "array", "items": {"type": "string"}, "description": "paths of notes this one replaces"},
          "contradicts": {"type": "boolean", "description": "true when it contradicts the notes it supersedes"}
        }
      }
    },
    "questions": {
      "type": "array",
      "description": "what to ask the person instead of guessing",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["text", "reason", "sources"],
        "properties": {
          "text": {"type": "string"},
          "reason": {"type": "string"},
          "sources": {"type": "array", "items": {"type": "string"}}
        }
      }
    }
  }
}`)

// DefaultPrompt is the curator's system prompt when the vault has no
// prompts/curator.system.md (the shipped file says the same).
const DefaultPrompt = `You are the curator of a personal memory. After each turn, read what was
said and propose durable memory changes, or nothing.

- Propose only what the person stated or clearly confirmed. Never present
  your own inference as fact: mark it ` + "`inferred`" + `, as a draft.
- Every proposal names its sources (thread and turn ids) and a reason.
- Be specific: "prefers short replies in the morning", not "likes brevity".
- When something contradicts an existing note, say so: the old note is
  superseded, never overwritten.
- Preferences, identity, health, finance and legal matters are always
  reviewed by the person before they are kept.
`

// PromptPath is the curator's prompt in the vault, editable by the owner.
const PromptPath = "prompts/curator.system.md"
