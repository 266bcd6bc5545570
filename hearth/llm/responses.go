package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// Server-side tools of the xAI Responses API, for [Config.ServerTools].
const (
	ServerToolWebSearch       = "web_search"
	ServerToolXSearch         = "x_search"
	ServerToolCodeInterpreter = "code_interpreter"
)

// Responses talks to a Responses API endpoint (POST {base}/responses):
// xAI's, where it is the default, or OpenAI's. Every call is streamed and
// stored (store=true), so the next call can send only the new messages
// after previous_response_id; see [Request.Continue]. It is safe for
// concurrent use.
type Responses struct {
	name        string
	model       string
	key         string // only to redact it from error text
	timeouts    callTimeouts
	serverTools []string
	log         *slog.Logger
	api         responses.ResponseService
}

// NewResponses returns an adapter for cfg. A nil httpClient means a plain
// &http.Client{}; the per-call deadline comes from cfg.Timeout. Like
// [NewOpenAI], it builds the SDK client from explicit options only and
// disables the SDK's retries. It logs nowhere until [Responses.WithLogger]
// gives it a logger.
func NewResponses(cfg Config, httpClient *http.Client) *Responses {
	name := cmp.Or(cfg.Provider, ProviderXAI)
	model, base := protocolDefaults(name)
	opts := sdkOptions(cfg, base, httpClient)
	return &Responses{
		name:        name,
		model:       cmp.Or(cfg.Model, model),
		key:         cfg.APIKey,
		timeouts:    timeoutsOf(cfg),
		serverTools: slices.Clone(cfg.ServerTools),
		log:         slog.New(slog.DiscardHandler),
		api:         responses.NewResponseService(opts...),
	}
}

// WithLogger returns a copy of r that logs to log: a continuation that had
// to fall back to the whole conversation, for example. The key is never
// logged.
func (r *Responses) WithLogger(log *slog.Logger) *Responses {
	c := *r
	c.log = cmp.Or(log, slog.New(slog.DiscardHandler))
	return &c
}

// Name reports the provider: "xai" or "openai".
func (r *Responses) Name() string { return r.name }

// Model reports the model used when a Request names none.
func (r *Responses) Model() string { return r.model }

// Stream sends req with stream=true and store=true, calls onText (if not
// nil) with every non-empty text delta in order from the calling
// goroutine, and returns the accumulated Response, whose ResponseID the next
// call can continue from.
//
// System messages travel in input (xAI rejects instructions), an
// assistant's ToolCalls as function_call items, and RoleTool results as
// function_call_output items whose output is prefixed with "error: " when
// IsError is set. cfg.ServerTools come before req.Tools.
//
// With req.Continue naming a response, only Messages[Continue.From:] are
// sent, after previous_response_id. When the provider no longer has that
// response (404, or a 400 saying it was not found), Stream logs it and
// sends the whole conversation once more without previous_response_id, so
// the turn is not lost; nothing was streamed before such an answer.
//
// A stream must end with response.completed. response.failed,
// response.incomplete (the Response then carries the FinishReason, e.g.
// "length") and error events are errors, and so is a stream that ends
// without a terminal event (a cut connection, Retryable). FinishReason is
// "tool_calls" when the model called functions, else "stop".
//
// Every error is an *Error; on error the returned Response holds what had
// arrived before the failure. Cancelling ctx aborts the call promptly; the
// call also ends after the configured timeouts (see
// [Config.FirstByteTimeout]).
func (r *Responses) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	model := cmp.Or(req.Model, r.model)
	items, err := r.inputItems(req.Messages)
	if err != nil {
		return Response{}, err
	}
	tools, err := r.tools(req.Tools)
	if err != nil {
		return Response{}, err
	}
	params := responses.ResponseNewParams{
		Model: model,
		Store: param.NewOpt(true),
		Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: slices.Concat(items...)},
	}
	if o := req.Output; o != nil {
		schema, err := o.schemaObject()
		if err != nil {
			return Response{}, err
		}
		js := &responses.ResponseFormatTextJSONSchemaConfigParam{Name: o.Name, Schema: schema}
		if o.Strict {
			js.Strict = param.NewOpt(true)
		}
		params.Text.Format.OfJSONSchema = js
	}
	continuing := false
	if c := req.Continue; c != nil && c.ResponseID != "" {
		if c.From >= 0 && c.From < len(req.Messages) {
			continuing = true
			params.PreviousResponseID = param.NewOpt(c.ResponseID)
			params.Input.OfInputItemList = slices.Concat(items[c.From:]...)
		} else {
			r.log.Warn("continuation point outside the conversation; sending every message",
				"provider", r.name, "response_id", c.ResponseID, "from", c.From, "messages", len(req.Messages))
		}
	}

	callCtx, cancel := context.WithTimeoutCause(ctx, r.timeouts.total, &TimeoutError{Kind: TimeoutTotal, After: r.timeouts.total})
	defer cancel()
	resp, e := r.attempt(ctx, callCtx, params, model, onText)
	if e != nil && continuing && responsesStale(e) {
		r.log.Info("stored response is gone; sending the whole conversation",
			"provider", r.name, "response_id", req.Continue.ResponseID, "status", e.Status, "err", e)
		params.PreviousResponseID = param.Opt[string]{}
		params.Input.OfInputItemList = slices.Concat(items...)
		resp, e = r.attempt(ctx, callCtx, params, model, onText)
	}
	if e != nil {
		return resp, e
	}
	return resp, nil
}

// attempt makes one request, under its own watchdog. ctx is the caller's
// context and callCtx the one bounded by the total timeout.
func (r *Responses) attempt(ctx, callCtx context.Context, params responses.ResponseNewParams, model string, onText func(string)) (Response, *Error) {
	w := r.timeouts.watch(callCtx)
	defer w.stop()
	var (
		tap = bodyTap{terminal: "response.completed"}
		raw *http.Response
	)
	stream := r.api.NewStreaming(w.ctx, params, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		return tap.wrap(w.wrap(next(req)))
	}), option.WithResponseInto(&raw))
	defer stream.Close()

	acc := responsesAccumulator{onText: onText}
	for !acc.terminal && stream.Next() {
		acc.add(stream.Current())
	}
	resp := acc.response(model)
	if err := stream.Err(); err != nil {
		return resp, r.callError(ctx, w, &tap, raw, err)
	}
	if acc.failure != nil {
		e := acc.failure
		e.Provider, e.secret = r.name, r.key
		return resp, e
	}
	if !acc.terminal {
		return resp, &Error{Provider: r.name, Retryable: true, Err: tap.incomplete(), secret: r.key}
	}
	return resp, nil
}

// inputItems converts each message into its input items: one slice per
// message, so a continuation can start at any message.
func (r *Responses) inputItems(msgs []Message) ([][]responses.ResponseInputItemUnionParam, error) {
	out := make([][]responses.ResponseInputItemUnionParam, len(msgs))
	for i, m := range msgs {
		var items []responses.ResponseInputItemUnionParam
		switch m.Role {
		case RoleSystem, RoleUser:
			items = append(items, responsesMessage(m.Role, m.Content))
		case RoleAssistant:
			if m.Content != "" || len(m.ToolCalls) == 0 {
				items = append(items, responsesMessage(m.Role, m.Content))
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, &Error{Provider: r.name, Err: fmt.Errorf("message %d: tool call %d needs an ID and a name", i, j)}
				}
				args := string(tc.Arguments)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(args, tc.ID, tc.Name))
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, &Error{Provider: r.name, Err: fmt.Errorf("message %d: a tool result needs the ToolCallID it answers", i)}
			}
			output := m.Content
			if m.IsError {
				output = "error: " + output
			}
			items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: param.NewOpt(m.ToolCallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(output)},
			}})
		default:
			return nil, &Error{Provider: r.name, Err: fmt.Errorf("message %d has role %q: want %q, %q, %q or %q", i, m.Role, RoleSystem, RoleUser, RoleAssistant, RoleTool)}
		}
		out[i] = items
	}
	return out, nil
}

func responsesMessage(role, content string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRole(role))
	item.OfMessage.Type = responses.EasyInputMessageTypeMessage
	return item
}

// responsesTool is a tool in the flat form of the Responses API.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// tools lists the configured server-side tools, then the function tools.
// They are sent as given, in the flat form, not in the SDK's typed form,
// which cannot express x_search and adds fields xAI does not know.
func (r *Responses) tools(ts []Tool) ([]responses.ToolUnionParam, error) {
	var out []responses.ToolUnionParam
	add := func(t responsesTool) error {
		b, err := json.Marshal(t)
		if err != nil {
			return &Error{Provider: r.name, Err: fmt.Errorf("encoding tool %q: %w", cmp.Or(t.Name, t.Type), err)}
		}
		out = append(out, param.Override[responses.ToolUnionParam](json.RawMessage(b)))
		return nil
	}
	for _, name := range r.serverTools {
		switch name {
		case ServerToolWebSearch, ServerToolXSearch, ServerToolCodeInterpreter:
		default:
			return nil, &Error{Provider: r.name, Err: fmt.Errorf("server-side tool %q is not supported: use %q, %q or %q", name, ServerToolWebSearch, ServerToolXSearch, ServerToolCodeInterpreter)}
		}
		if err := add(responsesTool{Type: name}); err != nil {
			return nil, err
		}
	}
	for _, t := range ts {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return nil, &Error{Provider: r.name, Err: fmt.Errorf("tool %q: the parameters schema is not valid JSON", t.Name)}
		}
		if err := add(responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// callError classifies a failed request or stream. ctx is the caller's
// context and w the watchdog that bounded the request.
func (r *Responses) callError(ctx context.Context, w *watchdog, tap *bodyTap, raw *http.Response, err error) *Error {
	e := &Error{Provider: r.name, Err: err, secret: r.key}
	var (
		apiErr    *openai.Error
		urlErr    *url.Error
		streamErr *ssestream.StreamError
	)
	isAPIErr := errors.As(err, &apiErr)
	switch {
	case ctx.Err() != nil:
		// The caller gave up: not the provider's fault, nothing to retry.
		e.Err = withCause(ctx.Err(), err)
	case w.timeout() != nil:
		timedOut(e, w.timeout(), err)
	case isAPIErr || (raw != nil && raw.StatusCode >= http.StatusBadRequest):
		var res *http.Response
		if isAPIErr {
			e.Status, res = apiErr.StatusCode, apiErr.Response
		} else {
			e.Status, res = raw.StatusCode, raw
		}
		e.Retryable = retryableStatus(e.Status)
		if res != nil {
			e.RetryAfter = retryAfter(res.Header, time.Now())
		}
		if !isAPIErr || apiErr.RawJSON() == "" {
			// Not OpenAI's {"error":{...}}: xAI's {"code","error"} or a
			// proxy's page.
			e.Err = responsesBodyErr(res, r.key, err)
		}
		if e.Status != http.StatusTooManyRequests && e.Status < http.StatusInternalServerError {
			code, msg := responsesErrorDetails(e.Err)
			e.ContextOverflow = overflowText(code, msg)
		}
	case tap.readErr != nil:
		// The connection failed during the reply.
		e.Retryable = true
		e.Err = fmt.Errorf("reading the reply stream: %w", err)
	case errors.As(err, &urlErr):
		// The connection failed before the reply.
		e.Retryable = true
	case errors.As(err, &streamErr):
		// A {"error":...} event inside the stream.
		ev := responsesEventError(streamErr.Event.Data)
		ev.What, ev.err = "error in the stream", streamErr
		e.Err = ev
		e.Retryable = responsesRetryableCode(ev.Code)
		e.ContextOverflow = overflowText(ev.Code, ev.Message)
	default:
		// A reply the SDK could not decode: retrying blindly is unlikely
		// to help.
		e.Err = fmt.Errorf("decoding the reply stream: %w", err)
	}
	return e
}

// responsesStale reports whether e says the previous_response_id is
// unknown: a 404 (other than for the model), or a 400 saying the previous
// response was not found.
func responsesStale(e *Error) bool {
	code, msg := responsesErrorDetails(e.Err)
	msg = strings.ToLower(msg)
	switch e.Status {
	case http.StatusNotFound:
		return code != "model_not_found"
	case http.StatusBadRequest:
		return code == "previous_response_not_found" ||
			strings.Contains(msg, "response") && (strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist") || strings.Contains(msg, "expired"))
	}
	return false
}

// responsesErrorDetails returns the provider's error code and message
// carried by err, if any.
func responsesErrorDetails(err error) (code, msg string) {
	var (
		apiErr  *openai.Error
		bodyErr *responsesError
	)
	switch {
	case errors.As(err, &bodyErr):
		return bodyErr.Code, bodyErr.Message
	case errors.As(err, &apiErr):
		return apiErr.Code, apiErr.Message
	}
	return "", ""
}

// responsesRetryableCode reports whether an error code inside a stream
// names a transient condition.
func responsesRetryableCode(code string) bool {
	switch code {
	case "server_error", "rate_limit_exceeded", "internal_error", "overloaded", "service_unavailable":
		return true
	}
	return false
}

// responsesError is a provider's error: an error reply in a shape the SDK
// does not decode (xAI's {"code":"...","error":"..."}), or an error event
// inside the stream.
type responsesError struct {
	What    string // what failed, e.g. "the response failed"; "" for a reply
	Code    string
	Message string
	err     error
}

func (e *responsesError) Error() string {
	var b strings.Builder
	b.WriteString(e.What)
	if e.Message != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Message)
	}
	if e.Code != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("(code=" + e.Code + ")")
	}
	if b.Len() == 0 {
		return "error without a message"
	}
	return b.String()
}

func (e *responsesError) Unwrap() error { return e.err }

// responsesBodyErr reads an error reply's body that the SDK did not
// decode: xAI's {"code":"...","error":"message"} becomes a responsesError,
// anything else the start of the body.
func responsesBodyErr(res *http.Response, secret string, err error) error {
	if res == nil || res.Body == nil {
		return &bodyError{err: err}
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if e := responsesEventError(body); e.Message != "" || e.Code != "" {
		e.err = err
		return e
	}
	return &bodyError{snippet: snippet(strings.NewReader(string(body)), secret), err: err}
}

// responsesEventError reads the error of an error reply or event in any of
// the shapes providers use: {"error":{"message","code"}},
// {"error":"message","code":"..."}, or {"type":"error","message","code"}.
// Codes may be strings or numbers.
func responsesEventError(data []byte) *responsesError {
	var v struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil {
		return &responsesError{}
	}
	e := &responsesError{Code: responsesCode(v.Code), Message: v.Message}
	var msg string
	var obj struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	switch {
	case json.Unmarshal(v.Error, &msg) == nil:
		e.Message = cmp.Or(msg, e.Message)
	case json.Unmarshal(v.Error, &obj) == nil:
		e.Message = cmp.Or(obj.Message, e.Message)
		e.Code = cmp.Or(responsesCode(obj.Code), e.Code)
	}
	return e
}

func responsesCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// responsesCall is a function call being streamed.
type responsesCall struct {
	itemID string // the output item's id
	index  int64  // the output item's index
	callID string
	name   string
	args   strings.Builder
}

// responsesAccumulator folds stream events into a Response.
type responsesAccumulator struct {
	onText   func(string)
	text     strings.Builder
	calls    []*responsesCall
	terminal bool // a terminal event arrived
	final    *responses.Response
	finish   string // the finish reason of a terminal event
	failure  *Error // a failed or incomplete response, or an error event
}

func (a *responsesAccumulator) addText(s string) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	if a.onText != nil {
		a.onText(s)
	}
}

// call finds the call of an output item by its id, or by its index when
// the event or the call lacks an id, and makes one if there is none.
func (a *responsesAccumulator) call(itemID string, index int64) *responsesCall {
	for _, c := range a.calls {
		if (itemID != "" && c.itemID == itemID) || ((itemID == "" || c.itemID == "") && c.index == index) {
			c.itemID = cmp.Or(c.itemID, itemID)
			return c
		}
	}
	c := &responsesCall{itemID: itemID, index: index}
	a.calls = append(a.calls, c)
	return c
}

// item takes what a function_call output item says about its call. done
// items are authoritative.
func (a *responsesAccumulator) item(it responses.ResponseOutputItemUnion, index int64, done bool) {
	if it.Type != "function_call" {
		return
	}
	c := a.call(it.ID, index)
	c.callID = cmp.Or(it.CallID, c.callID)
	c.name = cmp.Or(it.Name, c.name)
	if args := it.Arguments.OfString; args != "" && (done || c.args.Len() == 0) {
		c.args.Reset()
		c.args.WriteString(args)
	}
}

func (a *responsesAccumulator) add(ev responses.ResponseStreamEventUnion) {
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		// A refusal is what the model said instead of an answer.
		a.addText(ev.Delta)
	case "response.output_item.added":
		a.item(ev.Item, ev.OutputIndex, false)
	case "response.output_item.done":
		a.item(ev.Item, ev.OutputIndex, true)
	case "response.function_call_arguments.delta":
		a.call(ev.ItemID, ev.OutputIndex).args.WriteString(ev.Delta)
	case "response.function_call_arguments.done":
		if ev.JSON.Arguments.Valid() {
			c := a.call(ev.ItemID, ev.OutputIndex)
			c.args.Reset()
			c.args.WriteString(ev.Arguments)
		}
	case "response.completed":
		a.end(&ev.Response)
	case "response.incomplete":
		a.end(&ev.Response)
		reason := ev.Response.IncompleteDetails.Reason
		a.finish = cmp.Or(reason, "incomplete")
		if reason == "max_output_tokens" {
			a.finish = "length"
		}
		a.failure = &Error{Err: &responsesError{What: "the response is incomplete", Message: cmp.Or(reason, "no reason given")}}
	case "response.failed":
		a.end(&ev.Response)
		a.finish = ""
		code, msg := string(ev.Response.Error.Code), ev.Response.Error.Message
		a.failure = &Error{
			Retryable:       responsesRetryableCode(code),
			ContextOverflow: overflowText(code, msg),
			Err:             &responsesError{What: "the response failed", Code: code, Message: msg},
		}
	case "error":
		a.terminal = true
		e := responsesEventError([]byte(ev.RawJSON()))
		e.What = "error event"
		a.failure = &Error{Retryable: responsesRetryableCode(e.Code), ContextOverflow: overflowText(e.Code, e.Message), Err: e}
	}
	// Reasoning, content parts, server-side tool progress and the like
	// carry nothing the Response reports.
}

// end takes the full response of a terminal event. Its output is
// authoritative for the function calls; its text stands in for text
// deltas the stream did not carry.
func (a *responsesAccumulator) end(r *responses.Response) {
	a.terminal = true
	a.final = r
	var text strings.Builder
	for i, it := range r.Output {
		switch it.Type {
		case "function_call":
			a.item(it, int64(i), true)
		case "message":
			for _, part := range it.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					text.WriteString(part.Refusal)
				}
			}
		}
	}
	if a.text.Len() == 0 {
		a.addText(text.String())
	}
	a.finish = "stop"
}

func (a *responsesAccumulator) response(requested string) Response {
	resp := Response{Text: a.text.String(), Model: requested}
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *responsesCall) int { return cmp.Compare(x.index, y.index) })
	for _, c := range calls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: cmp.Or(c.callID, c.itemID), Name: c.name, Arguments: callArguments(c.args.String())})
	}
	if r := a.final; r != nil {
		resp.ResponseID = r.ID
		resp.Model = cmp.Or(r.Model, requested)
		if r.JSON.Usage.Valid() {
			resp.Usage = &Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
		}
	}
	resp.FinishReason = a.finish
	if a.finish == "stop" && len(resp.ToolCalls) > 0 {
		resp.FinishReason = "tool_calls"
	}
	return resp
}
