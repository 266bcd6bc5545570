package ipc

// Types of the provider check (mnemo doctor --provider).
const (
	TypeProviderCheck  = "provider_check"  // client (owner)
	TypeProviderStatus = "provider_status" // hearth
)

// ProviderCheck asks hearth to make one cheap call to the configured chat
// model (a one-line prompt, cut off at the first streamed text) and say
// how it went. Only the owner may ask: the call costs tokens. A hearth
// that cannot check (mnemo --local before it) answers an error
// unavailable.
//
//	{"type":"provider_check","ref":"p1"}
type ProviderCheck struct {
	Ref string `json:"ref,omitempty"`
}

// ProviderStatus answers ProviderCheck. OK says the model answered;
// LatencyMS is the wait for its first text (or for the failure).
// Otherwise Category is what kind of failure it was ("no_provider",
// "timeout", "unreachable", "rejected_key", "model_unknown",
// "rate_limited", "overloaded", "bad_request", "other") and Problem says
// what went wrong and the fix, naming settings and variables, never a
// key, a URL or the provider's own text.
//
//	{"type":"provider_status","ref":"p1","ok":true,"provider":"openai","model":"gpt-5-mini","latency_ms":412}
//	{"type":"provider_status","ref":"p1","provider":"openai","model":"gpt-5-mini","latency_ms":80,"category":"rejected_key","problem":"the model provider rejected the API key (HTTP 401) — set OPENAI_API_KEY to a valid key"}
type ProviderStatus struct {
	Ref       string `json:"ref,omitempty"`
	OK        bool   `json:"ok"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	LatencyMS int64  `json:"latency_ms"`
	Category  string `json:"category,omitempty"`
	Problem   string `json:"problem,omitempty"`
}

func (*ProviderCheck) Type() string  { return TypeProviderCheck }
func (*ProviderStatus) Type() string { return TypeProviderStatus }

func newProviderMsg(typ string) Msg {
	switch typ {
	case TypeProviderCheck:
		return new(ProviderCheck)
	case TypeProviderStatus:
		return new(ProviderStatus)
	}
	return newConversationsMsg(typ)
}
