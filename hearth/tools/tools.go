// Package tools is hearth's tool registry: the built-in tools and the tools
// of the MCP servers listed in gateway.json, offered to the model as JSON
// Schema function tools. Tools are data: each describes itself, its side
// effects and the permission it needs.
//
// # gateway.json
//
//	{"servers": [
//	  {"label": "desktop-commander", "url": "https://….trycloudflare.com/mcp",
//	   "headers": {"authorization": "Bearer ${MCP_AUTH_TOKEN}"}},
//	  {"label": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],
//	   "env": {"NODE_OPTIONS": "--max-old-space-size=256"}, "permission": "confirm"},
//	  {"label": "old", "url": "http://127.0.0.1:9000/mcp", "disabled": true}
//	]}
//
// An entry has a label and either a streamable HTTP "url" (with optional
// "headers") or a stdio "command" (with optional "args" and "env").
// "permission" ("safe" or "confirm") overrides the permission derived from
// the tools' annotations; "disabled": true leaves the entry out. Other
// fields are ignored; an invalid entry is skipped with a warning, an
// invalid file means no servers. The file is read on every List and Call.
//
// Header and env values may reference ${VAR} (expanded with
// Options.Getenv; "$VAR" without braces is left as written). Headers are
// sent only to their server's origin and never appear in a Spec, a Result,
// an error or a log line: header values, expanded variables and URL
// credentials are replaced by "[redacted]" in anything the registry
// returns or logs. A stdio server does not inherit hearth's environment,
// which holds API keys: it gets PATH, HOME, USER, LOGNAME, SHELL, LANG,
// LC_ALL, LC_CTYPE, TZ, TMPDIR, TERM, SYSTEMROOT and XDG_RUNTIME_DIR, then
// its entry's env. Its stderr is logged at debug level.
//
// # Names
//
// Built-ins keep their own names. A tool of an MCP server is offered as
// <prefix>__<tool>, at most 64 bytes of [a-zA-Z0-9_-]:
//
//   - prefix is the server's label with every other byte replaced by "_",
//     runs of "_" collapsed to one, leading and trailing "_" trimmed, cut
//     to 24 bytes; "mcp" when nothing is left. It never contains "__", so
//     the first "__" of a name separates the server from the tool. When
//     two enabled servers share a prefix, the later ones get "_2", "_3",
//     ... in gateway.json order.
//   - tool is the tool's name with every byte outside [a-zA-Z0-9_-]
//     replaced by "_". A name that needs no change and fits is used as it
//     is. A changed name that collides with another tool of the same
//     server, or a name that is too long, is cut and ends in "_" and 8 hex
//     digits of the FNV-1a hash of the original name.
//
// An MCP tool whose name equals a built-in's is left out. Call maps a name
// back by reading gateway.json, finding the server by its prefix and
// matching the name against that server's tools.
//
// # Effects and permissions of MCP tools
//
// From the tool's annotations: readOnlyHint gives ReadOnly and Safe (and
// Idempotent); otherwise destructiveHint true or unset gives Irreversible,
// false gives WritesExternal, both Confirm, with Idempotent from
// idempotentHint. No annotations at all is Irreversible and Confirm.
package tools

import (
	"context"
	"encoding/json"
	"time"
)

// Effect is what running a tool can change.
type Effect string

const (
	ReadOnly       Effect = "read_only"
	WritesLocal    Effect = "writes_local"
	WritesExternal Effect = "writes_external"
	Irreversible   Effect = "irreversible"
)

// Permission is who must agree before a tool runs.
type Permission string

const (
	Safe    Permission = "safe"    // runs when the model asks
	Confirm Permission = "confirm" // the owner approves each call
	Admin   Permission = "admin"   // never offered to the model without an explicit grant
)

// Spec describes one tool as the agent sees it.
type Spec struct {
	Name        string          // unique, [a-zA-Z0-9_-]{1,64}
	Description string          //
	Parameters  json.RawMessage // JSON Schema, root type object, including the required "reason"
	Effect      Effect
	Permission  Permission
	// Idempotent tools may be retried automatically after a transient
	// failure; others never are.
	Idempotent bool
	// Source is "builtin" or "mcp:<label>".
	Source string
	// Timeout bounds one call; 0 means the registry's default.
	Timeout time.Duration
}

// Result is a tool's answer. IsError results are reported to the model as
// errors; the turn goes on.
type Result struct {
	Text    string
	IsError bool
}

// Builtin is a tool implemented inside hearth.
type Builtin struct {
	Spec Spec
	Run  func(ctx context.Context, args json.RawMessage) (Result, error)
}

// ReasonParam is the argument every tool requires: why the model calls it.
// The registry adds it to every schema; the agent takes it out of the
// arguments before the call and journals it.
const ReasonParam = "reason"
