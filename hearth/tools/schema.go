package tools

import (
	"encoding/json"
	"slices"
)

// reasonDescription is the description of the required reason argument.
const reasonDescription = "why you are calling this tool, in one sentence"

// withReason returns schema with a required string property "reason" added
// to its root object. A missing, empty or non-object schema becomes
// {"type":"object","properties":{}} first. A tool's own "reason" property is
// replaced: the agent takes "reason" out of the arguments before the call,
// so the tool would never see it anyway.
func withReason(schema json.RawMessage) json.RawMessage {
	var root map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &root) != nil || root == nil {
		root = map[string]any{}
	}
	root["type"] = "object"
	props, ok := root["properties"].(map[string]any)
	if !ok {
		props = map[string]any{}
	}
	props[ReasonParam] = map[string]any{
		"type":        "string",
		"description": reasonDescription,
	}
	root["properties"] = props
	var required []any
	if r, ok := root["required"].([]any); ok {
		for _, v := range r {
			if s, ok := v.(string); ok && s != ReasonParam {
				required = append(required, s)
			}
		}
	}
	root["required"] = slices.Insert(required, 0, any(ReasonParam))
	out, err := json.Marshal(root)
	if err != nil {
		// Values decoded from JSON always encode again.
		return json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"` + reasonDescription + `"}},"required":["reason"]}`)
	}
	return out
}
