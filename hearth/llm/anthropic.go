package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// Anthropic defaults, used when cfg names no model or base URL.
const (
	DefaultAnthropicModel   = anthropic.ModelClaudeSonnet5_5
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	// DefaultAnthropicMaxTokens is the max_tokens sent with every request:
	// the Messages API requires one, and it bounds one reply, not the
	// conversation.
	DefaultAnthropicMaxTokens = 8192
)

// Anthropic talks to the Anthropic Messages API (POST /v1/messages with
// x-api-key and anthropic-version 2023-06-01). It is safe for concurrent
// use.
type Anthropic struct {
	model    string
	key      string // only to redact it from error text
	timeouts callTimeouts
	msgs     anthropic.MessageService
}

// NewAnthropic returns an adapter for cfg. cfg.BaseURL is the API's root,
// like DefaultAnthropicBaseURL, without /v1 (a trailing /v1 is tolerated).
// A nil httpClient means a plain &http.Client{}; the per-call deadline
// comes from cfg.Timeout.
//
// The SDK client is built from explicit options only, so ambient
// ANTHROPIC_* variables (a second key, an auth token, a profile, custom
// headers, another base URL) never change what cfg says.
func NewAnthropic(cfg Config, httpClient *http.Client) *Anthropic {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	base := strings.TrimRight(cmp.Or(cfg.BaseURL, DefaultAnthropicBaseURL), "/")
	base = strings.TrimSuffix(base, "/v1")
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0), // the caller decides about retries
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Anthropic{
		model:    cmp.Or(cfg.Model, DefaultAnthropicModel),
		key:      cfg.APIKey,
		timeouts: timeoutsOf(cfg),
		msgs:     anthropic.NewMessageService(opts...),
	}
}

// Name reports the provider: "anthropic".
func (a *Anthropic) Name() string { return ProviderAnthropic }

// Model reports the model used when a Request names none.
func (a *Anthropic) Model() string { return a.model }

// Stream sends req with stream=true, calls onText (if not nil) with every
// non-empty text delta in order from the calling goroutine, and returns the
// accumulated Response. Stream makes exactly one attempt: the SDK's
// retries are disabled.
//
// The conversation is mapped onto the Messages API: every system message
// goes, joined, into the top-level system prompt; an assistant's tool calls
// become tool_use blocks; tool results become tool_result blocks of a user
// message; consecutive messages of the same role are merged, since the API
// requires user and assistant turns to alternate. Empty messages are
// dropped. The adapter does not invent turns: a conversation that does not
// start with a user message is sent as it is, and the provider refuses it.
//
// FinishReason is the reply's stop_reason ("end_turn", "tool_use",
// "max_tokens", ...). A tool call's input that is not a JSON object (say,
// cut off by max_tokens) comes back as {"_raw": "<text>"}; see ToolCall.
// Usage.InputTokens counts cached input too. A stream that ends without
// message_stop is a retryable error (a cut connection). Cancelling ctx
// aborts the call promptly; the call also ends after the configured
// timeouts (see [Config.FirstByteTimeout]).
//
// Every error is an *Error. On error the returned Response holds what had
// arrived before the failure: the text, and the tool calls whose blocks
// had ended.
func (a *Anthropic) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	model := cmp.Or(req.Model, a.model)
	params, err := anthropicParams(model, req)
	if err != nil {
		return Response{}, &Error{Provider: ProviderAnthropic, Err: err, secret: a.key}
	}

	w, stop := a.timeouts.startCall(ctx)
	defer stop()
	tap := bodyTap{terminal: "message_stop"}
	stream := a.msgs.NewStreaming(w.ctx, params, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		return tap.wrap(w.wrap(next(req)))
	}))
	defer stream.Close()

	acc := anthropicAccumulator{onText: onText}
	for stream.Next() {
		acc.add(stream.Current())
	}
	resp := acc.response(model)
	if err := stream.Err(); err != nil {
		return resp, a.callError(ctx, w, &tap, err)
	}
	if !acc.stopped {
		return resp, &Error{Provider: ProviderAnthropic, Retryable: true, Err: tap.incomplete(), secret: a.key}
	}
	return resp, nil
}

// anthropicParams maps req onto a Messages API request.
func anthropicParams(model string, req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     model,
		MaxTokens: DefaultAnthropicMaxTokens,
	}
	var system []string
	for i, m := range req.Messages {
		var (
			role   anthropic.MessageParamRole
			blocks []anthropic.ContentBlockParamUnion
		)
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		case RoleUser:
			role = anthropic.MessageParamRoleUser
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
		case RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return params, fmt.Errorf("message %d, tool call %d: the id and the name must not be empty", i, j)
				}
				input, err := anthropicObject(c.Arguments, "{}")
				if err != nil {
					return params, fmt.Errorf("message %d, tool call %d (%s): arguments: %w", i, j, c.Name, err)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return params, fmt.Errorf("message %d has role %q but no tool call id", i, m.Role)
			}
			role = anthropic.MessageParamRoleUser
			result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID, IsError: anthropic.Bool(m.IsError)}
			if m.Content != "" {
				// The API refuses empty text blocks: an empty result has
				// no content at all.
				result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &result})
		default:
			return params, fmt.Errorf("message %d has role %q: want %q, %q, %q or %q", i, m.Role, RoleSystem, RoleUser, RoleAssistant, RoleTool)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for i := range params.Messages {
		if params.Messages[i].Role == anthropic.MessageParamRoleUser {
			// tool_result blocks must open a user message: a user's text
			// merged in before them moves after them.
			slices.SortStableFunc(params.Messages[i].Content, func(x, y anthropic.ContentBlockParamUnion) int {
				return anthropicResultRank(x) - anthropicResultRank(y)
			})
		}
	}
	if len(system) > 0 {
		params.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return params, fmt.Errorf("tool %d has no name", i)
		}
		schema, err := anthropicObject(t.Parameters, `{"type":"object","properties":{}}`)
		if err != nil {
			return params, fmt.Errorf("tool %d (%s): parameters: %w", i, t.Name, err)
		}
		tool := anthropic.ToolParam{
			Name: t.Name,
			// The schema goes out as written, not re-encoded.
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if o := req.Output; o != nil {
		schema, err := o.schemaObject()
		if err != nil {
			return params, err
		}
		// Anthropic's structured outputs constrain every reply to the
		// schema: there is no non-strict mode and no name on the wire.
		params.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: schema}
	}
	return params, nil
}

func anthropicResultRank(b anthropic.ContentBlockParamUnion) int {
	if b.OfToolResult != nil {
		return 0
	}
	return 1
}

// anthropicObject returns raw as a JSON object, def when raw is empty.
func anthropicObject(raw json.RawMessage, def string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(def), nil
	}
	if !anthropicIsObject(raw) {
		return nil, errors.New("not a JSON object")
	}
	return raw, nil
}

// anthropicIsObject reports whether raw is one valid JSON object.
func anthropicIsObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// callError classifies a failed call. ctx is the caller's context and w
// the watchdog that bounded the call.
func (a *Anthropic) callError(ctx context.Context, w *watchdog, tap *bodyTap, err error) *Error {
	e := &Error{Provider: ProviderAnthropic, Err: err, secret: a.key}
	var (
		apiErr *anthropic.Error
		urlErr *url.Error
	)
	switch {
	case ctx.Err() != nil:
		// The caller gave up: not the provider's fault, nothing to retry.
		e.Err = withCause(ctx.Err(), err)
	case w.timeout() != nil:
		timedOut(e, w.timeout(), err)
	case errors.As(err, &apiErr):
		a.classifyAPIError(e, apiErr)
	case tap.readErr != nil:
		// The connection failed during the reply.
		e.Retryable = true
		e.Err = fmt.Errorf("reading the reply stream: %w", err)
	case errors.As(err, &urlErr):
		// The connection failed before the reply.
		e.Retryable = true
	default:
		// A reply the SDK could not decode: retrying blindly is unlikely
		// to help.
		e.Err = fmt.Errorf("decoding the reply stream: %w", err)
	}
	return e
}

// classifyAPIError fills e from an error reply, or from an error event
// inside a stream that had started with 200.
func (a *Anthropic) classifyAPIError(e *Error, apiErr *anthropic.Error) {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	raw := apiErr.RawJSON()
	desc := &anthropicAPIError{err: apiErr}
	if json.Unmarshal([]byte(raw), &body) == nil && body.Error.Message != "" {
		desc.typ = body.Error.Type
		desc.message = snippet(strings.NewReader(body.Error.Message), a.key)
	} else {
		// Not Anthropic's JSON error, perhaps a proxy's HTML page: keep
		// the start of it for the log.
		desc.body = snippet(strings.NewReader(raw), a.key)
	}
	desc.requestID = cmp.Or(apiErr.RequestID, body.RequestID)
	e.Err = desc

	typ := cmp.Or(string(apiErr.Type()), body.Error.Type)
	if apiErr.StatusCode >= http.StatusBadRequest {
		e.Status = apiErr.StatusCode
		e.Retryable = retryableStatus(e.Status)
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
	} else {
		// An error event in the stream: the HTTP status was 200, so the
		// error's type is all there is to go by.
		desc.event = true
		switch typ {
		case "overloaded_error", "rate_limit_error", "api_error", "timeout_error":
			e.Retryable = true
		}
	}
	e.ContextOverflow = e.Status == http.StatusRequestEntityTooLarge || typ == "request_too_large" ||
		((e.Status == http.StatusBadRequest || typ == "invalid_request_error") && anthropicTooLong(body.Error.Message))
}

// anthropicTooLong reports whether an invalid_request_error's message says
// the conversation does not fit the model's context window.
func anthropicTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "prompt is too long") ||
		strings.Contains(msg, "exceed context limit") ||
		strings.Contains(msg, "context window")
}

// anthropicAPIError describes an error reply by the fields a log reader
// needs; it unwraps to the SDK's *anthropic.Error, whose Response carries
// the headers.
type anthropicAPIError struct {
	typ, message, requestID string
	body                    string // the start of a body that is not Anthropic's JSON error
	event                   bool   // an error event inside a stream, not an error reply
	err                     *anthropic.Error
}

func (e *anthropicAPIError) Error() string {
	var b strings.Builder
	if e.event {
		b.WriteString("error event: ")
	}
	switch {
	case e.message != "":
		b.WriteString(e.message)
	case e.body != "":
		b.WriteString("error body: " + e.body)
	default:
		b.WriteString("empty error body")
	}
	var details []string
	if e.typ != "" {
		details = append(details, "type="+e.typ)
	}
	if e.requestID != "" {
		details = append(details, "request-id="+e.requestID)
	}
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, " ") + ")")
	}
	return b.String()
}

func (e *anthropicAPIError) Unwrap() error { return e.err }

// anthropicAccumulator folds stream events into a Response.
type anthropicAccumulator struct {
	onText  func(string)
	text    strings.Builder
	model   string
	stop    string
	usage   *Usage
	calls   []*anthropicCall // tool_use blocks in the order they started
	stopped bool             // message_stop arrived
}

// anthropicCall is a tool_use block being received.
type anthropicCall struct {
	index    int64
	id, name string
	initial  json.RawMessage // the input the block started with, usually {}
	input    strings.Builder // input_json_delta fragments
	done     bool            // content_block_stop arrived
}

func (a *anthropicAccumulator) add(ev anthropic.MessageStreamEventUnion) {
	if a.stopped {
		return
	}
	switch ev.Type {
	case "message_start":
		a.model = cmp.Or(ev.Message.Model, a.model)
		u := ev.Message.Usage
		if ev.Message.JSON.Usage.Valid() {
			a.usage = &Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
		}
	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "text":
			a.addText(cb.Text)
		case "tool_use":
			var start struct {
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal([]byte(cb.RawJSON()), &start) // a bad start leaves initial empty
			a.calls = append(a.calls, &anthropicCall{index: ev.Index, id: cb.ID, name: cb.Name, initial: start.Input})
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			a.addText(ev.Delta.Text)
		case "input_json_delta":
			if c := a.call(ev.Index); c != nil {
				c.input.WriteString(ev.Delta.PartialJSON)
			}
		}
	case "content_block_stop":
		if c := a.call(ev.Index); c != nil {
			c.done = true
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = string(ev.Delta.StopReason)
		}
		u := ev.Usage
		if ev.JSON.Usage.Valid() {
			if a.usage == nil {
				a.usage = &Usage{}
			}
			a.usage.OutputTokens = u.OutputTokens
			if u.JSON.InputTokens.Valid() {
				a.usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			}
		}
	case "message_stop":
		a.stopped = true
	}
}

func (a *anthropicAccumulator) addText(s string) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	if a.onText != nil {
		a.onText(s)
	}
}

// call returns the open tool_use block at index, nil if there is none.
func (a *anthropicAccumulator) call(index int64) *anthropicCall {
	for _, c := range slices.Backward(a.calls) {
		if c.index == index {
			if c.done {
				return nil
			}
			return c
		}
	}
	return nil
}

// response returns what arrived. Before message_stop, tool_use blocks
// that have not ended are left out.
func (a *anthropicAccumulator) response(requested string) Response {
	resp := Response{
		Text:         a.text.String(),
		Model:        cmp.Or(a.model, requested),
		FinishReason: a.stop,
		Usage:        a.usage,
	}
	for _, c := range a.calls {
		if !c.done && !a.stopped {
			continue
		}
		args := c.input.String()
		if strings.TrimSpace(args) == "" {
			args = string(c.initial)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: c.id, Name: c.name, Arguments: callArguments(args)})
	}
	return resp
}
