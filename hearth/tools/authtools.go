package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mnemo/mnemo/hearth/auth"
)

// Authority is what the auth tools need of the auth layer (*auth.Store).
type Authority interface {
	Authorize(id auth.Identity, res auth.Resource, act auth.Action) error
	Export() auth.Export
}

// AuthTools are auth_whoami, auth_check and auth_export (seed 000): they
// answer for the identity of the turn's sender, which the door put in
// the turn's ctx (auth.WithIdentity); a turn without one (started inside
// hearth) has none and is allowed nothing by them.
func AuthTools(a Authority) []Builtin {
	whoami := builtinSpec("auth_whoami",
		"Who sent the current message: their subject (a device name, or owner), actor type (owner, collaborator, system_agent, background_agent, external_agent, service) and device id.",
		`{"type":"object","properties":{}}`)
	check := builtinSpec("auth_check",
		"Whether the sender of the current message may do an action on a resource under hearth's auth policy: allow or deny.",
		`{"type":"object","properties":{`+
			`"resource":{"type":"string","enum":["conversation","memory","vault","voice","tools","admin","metrics"]},`+
			`"action":{"type":"string","enum":["read","write","admin"]}},"required":["resource","action"]}`)
	export := builtinSpec("auth_export",
		"hearth's auth configuration: the paired devices, the owner's policy rules and the default rules. Never credentials. The owner only.",
		`{"type":"object","properties":{}}`)
	return []Builtin{
		{Spec: whoami, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
			id, ok := auth.From(ctx)
			if !ok {
				return Result{Text: "no sender identity: this turn started inside hearth"}, nil
			}
			return jsonResult(struct {
				Subject string     `json:"subject"`
				Actor   auth.Actor `json:"actor"`
				Device  string     `json:"device,omitempty"`
			}{id.Subject, id.Actor, id.Device})
		}},
		{Spec: check, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
			var in struct {
				Resource auth.Resource `json:"resource"`
				Action   auth.Action   `json:"action"`
			}
			if err := decodeArgs(args, &in); err != nil {
				return Result{Text: err.Error(), IsError: true}, nil
			}
			id, ok := auth.From(ctx)
			effect := auth.Deny
			if ok && a.Authorize(id, in.Resource, in.Action) == nil {
				effect = auth.Allow
			}
			return Result{Text: fmt.Sprintf("%s %s on %s: %s", id.Subject, in.Action, in.Resource, effect)}, nil
		}},
		{Spec: export, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
			id, ok := auth.From(ctx)
			if !ok || a.Authorize(id, auth.ResAdmin, auth.ActRead) != nil {
				return Result{Text: "only the owner may export the auth configuration", IsError: true}, nil
			}
			return jsonResult(a.Export())
		}},
	}
}

func jsonResult(v any) (Result, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return Result{}, fmt.Errorf("tools: encode: %w", err)
	}
	return Result{Text: string(b)}, nil
}
