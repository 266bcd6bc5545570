// Package tools is hearth's tool registry: the built-in tools and the tools
// of the MCP servers listed in gateway.json, offered to the model as JSON
// Schema function tools. Tools are data: each describes itself, its side
// effects and the permission it needs.
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
