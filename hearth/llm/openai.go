package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAI talks to an OpenAI-compatible chat completions endpoint: xAI
// (https://api.x.ai/v1), OpenAI, Ollama's /v1, llama.cpp and vLLM.
// It is safe for concurrent use.
type OpenAI struct {
	name     string
	model    string
	key      string // only to redact it from error text
	timeouts callTimeouts
	chat     openai.ChatCompletionService
}

// NewOpenAI returns an adapter for cfg. A nil httpClient means a plain
// &http.Client{}; the per-call deadline comes from cfg.Timeout.
//
// The SDK client is built from explicit options only, so ambient OPENAI_*
// variables (organization, project, custom headers, a second key) never
// reach a provider that cfg did not name.
func NewOpenAI(cfg Config, httpClient *http.Client) *OpenAI {
	name := cmp.Or(cfg.Provider, ProviderOpenAI)
	model, base := protocolDefaults(name)
	opts := sdkOptions(cfg, base, httpClient)
	return &OpenAI{
		name:     name,
		model:    cmp.Or(cfg.Model, model),
		key:      cfg.APIKey,
		timeouts: timeoutsOf(cfg),
		chat:     openai.NewChatCompletionService(opts...),
	}
}

// Name reports the provider: "xai" or "openai".
func (o *OpenAI) Name() string { return o.name }

// Model reports the model used when a Request names none.
func (o *OpenAI) Model() string { return o.model }

// Stream sends req with stream=true and stream_options.include_usage=true,
// calls onText (if not nil) with every non-empty content delta in order from
// the calling goroutine, and returns the accumulated Response. A refusal
// delta counts as content: it is what the model said instead of an answer.
// Stream makes exactly one attempt: the SDK's retries are disabled.
//
// req.Tools are sent as function tools, assistant messages with their
// tool_calls, and RoleTool messages as tool results; an IsError result's
// content is prefixed with "error: ", as the API has no flag for it.
// Streamed tool calls are accumulated by index (OpenAI sends a call's
// arguments in fragments, xAI whole in one chunk); see [ToolCall] for what
// Response.ToolCalls holds when the model's arguments are not a JSON
// object.
//
// Usage is the last one the provider reported: xAI sends a running total
// on every chunk, OpenAI one final chunk with no choices. A stream that ends
// with neither [DONE] nor a finish_reason is an error (a cut connection).
// Cancelling ctx aborts the call promptly; the call also ends after the
// configured timeouts (see [Config.FirstByteTimeout]).
//
// Every error is an *Error. On error the returned Response holds what had
// arrived before the failure.
func (o *OpenAI) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	model := cmp.Or(req.Model, o.model)
	params, err := chatParams(model, req)
	if err != nil {
		return Response{}, &Error{Provider: o.name, Err: err}
	}

	w, stop := o.timeouts.startCall(ctx)
	defer stop()
	var (
		tap streamTap
		raw *http.Response
	)
	watched := func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		return tap.middleware(req, func(req *http.Request) (*http.Response, error) { return w.wrap(next(req)) })
	}
	stream := o.chat.NewStreaming(w.ctx, params, option.WithMiddleware(watched), option.WithResponseInto(&raw))
	defer stream.Close()

	acc := accumulator{onText: onText}
	for stream.Next() {
		acc.add(stream.Current())
	}
	resp := acc.response(model)
	if err := stream.Err(); err != nil {
		return resp, o.callError(ctx, w, &tap, raw, err)
	}
	if !tap.done && resp.FinishReason == "" {
		return resp, &Error{Provider: o.name, Retryable: true, Err: tap.incomplete()}
	}
	return resp, nil
}

// chatParams converts req into a chat completions request for model.
func chatParams(model string, req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
			if len(m.ToolCalls) == 0 {
				params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
				continue
			}
			var am openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				am.Content.OfString = openai.String(m.Content)
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return params, fmt.Errorf("message %d: tool call %d needs an ID and a Name", i, j)
				}
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argumentsText(tc.Arguments),
						},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case RoleTool:
			if m.ToolCallID == "" {
				return params, fmt.Errorf("message %d: a %q message needs a ToolCallID", i, RoleTool)
			}
			content := m.Content
			if m.IsError {
				content = "error: " + content
			}
			params.Messages = append(params.Messages, openai.ToolMessage(content, m.ToolCallID))
		default:
			return params, fmt.Errorf("message %d has role %q: want %q, %q, %q or %q", i, m.Role, RoleSystem, RoleUser, RoleAssistant, RoleTool)
		}
	}
	for _, t := range req.Tools {
		schema, err := toolSchema(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if o := req.Output; o != nil {
		schema, err := o.schemaObject()
		if err != nil {
			return params, err
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: o.Name, Schema: schema}
		if o.Strict {
			js.Strict = openai.Bool(true)
		}
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	return params, nil
}

// argumentsText is a call's arguments as the wire carries them: JSON text,
// "{}" when there are none.
func argumentsText(args []byte) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	return string(args)
}

// toolSchema converts a tool's parameters schema for the SDK. Each
// top-level value stays raw JSON, so the schema goes out exactly as given
// (the SDK's encoder would turn a json.Number into a string). No schema
// means a function without parameters.
func toolSchema(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errors.New("the parameters schema must be a JSON object")
	}
	schema := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		schema[k] = v
	}
	return schema, nil
}

// callError classifies a failed call. ctx is the caller's context and w
// the watchdog that bounded the call.
func (o *OpenAI) callError(ctx context.Context, w *watchdog, tap *streamTap, raw *http.Response, err error) *Error {
	e := &Error{Provider: o.name, Err: err, secret: o.key}
	var (
		apiErr    *openai.Error
		urlErr    *url.Error
		streamErr *ssestream.StreamError
	)
	switch {
	case ctx.Err() != nil:
		// The caller gave up: not the provider's fault, nothing to retry.
		e.Err = withCause(ctx.Err(), err)
	case w.timeout() != nil:
		timedOut(e, w.timeout(), err)
	case errors.As(err, &apiErr):
		e.Status = apiErr.StatusCode
		e.Retryable = retryableStatus(e.Status)
		text := apiErr.Message
		if apiErr.RawJSON() == "" && apiErr.Response != nil {
			// Not OpenAI's JSON error, perhaps a proxy's HTML page: keep
			// the start of it for the log.
			be := &bodyError{snippet: snippet(apiErr.Response.Body, o.key), err: err}
			e.Err, text = be, be.snippet
		}
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
		e.ContextOverflow = contextOverflow(e.Status, apiErr.Code, text)
	case raw != nil && raw.StatusCode >= http.StatusBadRequest:
		// An error reply the SDK could not decode at all, such as xAI's
		// {"code":"…","error":"<message>"}: keep the start of it for the
		// log.
		e.Status = raw.StatusCode
		e.Retryable = retryableStatus(e.Status)
		e.RetryAfter = retryAfter(raw.Header, time.Now())
		if raw.Body != nil {
			be := &bodyError{snippet: snippet(raw.Body, o.key), err: err}
			e.Err = be
			e.ContextOverflow = contextOverflow(e.Status, "", be.snippet)
		}
	case tap.readErr != nil:
		// The connection failed during the reply.
		e.Retryable = true
		e.Err = fmt.Errorf("reading the reply stream: %w", err)
	case errors.As(err, &urlErr):
		// The connection failed before the reply.
		e.Retryable = true
	case errors.As(err, &streamErr):
		// An error event inside the stream; its text says so.
	default:
		// A reply the SDK could not decode or an error event inside the
		// stream: retrying blindly is unlikely to help.
		e.Err = fmt.Errorf("decoding the reply stream: %w", err)
	}
	return e
}

// bodyError is an error reply whose body is not OpenAI's JSON error.
type bodyError struct {
	snippet string
	err     error
}

func (e *bodyError) Error() string {
	if e.snippet == "" {
		return "empty error body"
	}
	return "error body: " + e.snippet
}

func (e *bodyError) Unwrap() error { return e.err }

// snippet returns the start of an error body on one line. secret is
// redacted before the cut, so no part of it survives.
func snippet(r io.Reader, secret string) string {
	const limit = 200
	b, _ := io.ReadAll(io.LimitReader(r, int64(limit+len(secret)+1)))
	s := string(b)
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "[redacted]")
		// The read may have stopped inside a key: drop what shows of it.
		for i := len(secret) - 1; i > 0; i-- {
			if strings.HasSuffix(s, secret[:i]) {
				s = s[:len(s)-i]
				break
			}
		}
	}
	cut := len(s) > limit
	if cut {
		s = s[:limit]
	}
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if cut {
		s += " …"
	}
	return s
}

// withCause returns err, making sure errors.Is(result, cause) holds.
func withCause(cause, err error) error {
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// protocolDefaults are the model and base URL of an OpenAI-protocol
// provider: xAI's for "xai", OpenAI's otherwise.
func protocolDefaults(provider string) (model, base string) {
	if provider == ProviderXAI {
		return DefaultXAIModel, DefaultXAIBaseURL
	}
	return DefaultOpenAIModel, DefaultOpenAIBaseURL
}

// sdkOptions are the openai-go options of both OpenAI-protocol adapters:
// explicit base URL, HTTP client and key only (ambient OPENAI_* variables
// never reach a provider cfg did not name), and no SDK retries (the
// caller decides). A nil httpClient means a plain &http.Client{}.
func sdkOptions(cfg Config, defaultBase string, httpClient *http.Client) []option.RequestOption {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cmp.Or(cfg.BaseURL, defaultBase)),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return opts
}

func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// retryAfter reads how long the provider asks the caller to wait:
// retry-after-ms (milliseconds), else Retry-After (seconds or an HTTP
// date, relative to now). It returns 0 when neither says.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms > 0 && ms < float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs > 0 && secs < float64(math.MaxInt64/int64(time.Second)) {
			return time.Duration(secs * float64(time.Second))
		}
		return 0
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// contextOverflow reports whether an error reply refuses a request for
// exceeding the model's context window: by its code, or by how providers
// word it: OpenAI and vLLM ("maximum context length"), xAI ("maximum prompt
// length"), llama.cpp ("exceeds the available context size"), Anthropic
// ("prompt is too long"), Gemini ("exceeds the maximum number of tokens").
func contextOverflow(status int, code, message string) bool {
	if status < http.StatusBadRequest || status >= http.StatusInternalServerError || status == http.StatusTooManyRequests {
		return false
	}
	return overflowText(code, message)
}

// overflowText reports whether an error's code or message says the
// conversation exceeds the model's context window, whatever carried it (an
// error reply or an error event inside a stream).
func overflowText(code, message string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	phrases := [...]string{
		"context_length_exceeded",
		"context length",
		"context window",
		"context size",
		"prompt length",
		"prompt is too long",
		"prompt too long",
		"exceeds the maximum number of tokens",
	}
	message = strings.ToLower(message)
	for _, p := range phrases {
		if strings.Contains(message, p) {
			return true
		}
	}
	return false
}

// accumulator folds chunks into a Response. Only choice 0 is kept: mnemo
// never asks for n > 1.
type accumulator struct {
	onText func(string)
	text   strings.Builder
	calls  toolCalls
	model  string
	finish string
	usage  *Usage
}

func (a *accumulator) add(c openai.ChatCompletionChunk) {
	if a.model == "" {
		a.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		a.usage = &Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		for _, s := range [...]string{ch.Delta.Content, ch.Delta.Refusal} {
			if s == "" {
				continue
			}
			a.text.WriteString(s)
			if a.onText != nil {
				a.onText(s)
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.calls.add(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
}

func (a *accumulator) response(requested string) Response {
	return Response{
		Text:         a.text.String(),
		ToolCalls:    a.calls.result(),
		Model:        cmp.Or(a.model, requested),
		FinishReason: a.finish,
		Usage:        a.usage,
	}
}

// toolCalls accumulates streamed tool-call deltas. A delta names its call
// by index; only a call's first fragment carries its id and name, and
// later ones append to its arguments (OpenAI). A server may also send each
// call whole in one delta (xAI). A delta whose id differs from the id
// already seen at its index starts a new call, for servers that reuse an
// index for every whole call.
type toolCalls struct {
	calls   []partialCall
	byIndex map[int64]int // index → position in calls
}

type partialCall struct {
	id, name string
	args     []byte
}

func (a *toolCalls) add(index int64, id, name, args string) {
	pos, ok := a.byIndex[index]
	if !ok || (id != "" && a.calls[pos].id != "" && id != a.calls[pos].id) {
		if a.byIndex == nil {
			a.byIndex = make(map[int64]int)
		}
		a.calls = append(a.calls, partialCall{})
		pos = len(a.calls) - 1
		a.byIndex[index] = pos
	}
	c := &a.calls[pos]
	if c.id == "" {
		c.id = id
	}
	if name != "" && name != c.name {
		// A server that repeats the name sends it whole each time; one
		// that streams it sends pieces.
		c.name += name
	}
	c.args = append(c.args, args...)
}

// result returns the calls in the order they began. A call without an id
// gets "call_<position>"; its arguments are normalised by callArguments.
func (a *toolCalls) result() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(a.calls))
	for i := range a.calls {
		c := &a.calls[i]
		out[i] = ToolCall{
			ID:        cmp.Or(c.id, "call_"+strconv.Itoa(i)),
			Name:      c.name,
			Arguments: callArguments(string(c.args)),
		}
	}
	return out
}

// callArguments turns the arguments text a model wrote into a JSON object:
// "{}" for none, the text itself when it is a JSON object, and otherwise
// {"_raw": text}, so the agent can hand the model a tool error that quotes
// what it wrote.
func callArguments(text string) json.RawMessage {
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		return json.RawMessage("{}")
	case trimmed[0] == '{' && json.Valid([]byte(trimmed)):
		return json.RawMessage(trimmed)
	}
	b, err := json.Marshal(map[string]string{"_raw": text})
	if err != nil {
		return json.RawMessage("{}") // cannot happen: a string map always encodes
	}
	return b
}

// streamTap sits between the HTTP response body and the SDK's SSE decoder
// to learn two things the decoder does not expose: whether the stream
// carried its [DONE] line, and whether reading the body failed (a transport
// error, worth retrying) as opposed to decoding it.
type streamTap struct {
	body        io.ReadCloser
	contentType string
	line        []byte // the start of the current line, up to len(doneLine)
	done        bool
	readErr     error
}

const doneLine = "data: [DONE]"

func (t *streamTap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	t.body = res.Body
	t.contentType = res.Header.Get("Content-Type")
	res.Body = t
	return res, nil
}

func (t *streamTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	t.scan(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		t.readErr = err
	}
	return n, err
}

func (t *streamTap) Close() error { return t.body.Close() }

// scan looks for a line "data: [DONE]" (the space is optional, as in SSE)
// across reads of any size.
func (t *streamTap) scan(p []byte) {
	for len(p) > 0 {
		end := bytes.IndexAny(p, "\r\n")
		seg := p
		if end >= 0 {
			seg = p[:end]
		}
		if room := len(doneLine) - len(t.line); room > 0 {
			t.line = append(t.line, seg[:min(room, len(seg))]...)
		}
		if end < 0 {
			return
		}
		if isDoneLine(t.line) {
			t.done = true
		}
		t.line = t.line[:0]
		p = p[end+1:]
	}
}

func isDoneLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return false
	}
	rest, _ = bytes.CutPrefix(rest, []byte(" "))
	return bytes.HasPrefix(rest, []byte("[DONE]"))
}

// incomplete explains a stream that ended cleanly but too early.
func (t *streamTap) incomplete() error {
	if media, _, _ := mime.ParseMediaType(t.contentType); t.contentType != "" && media != "text/event-stream" {
		return fmt.Errorf("the provider replied with Content-Type %q, not an event stream", t.contentType)
	}
	return errors.New("the reply stream ended without [DONE] or a finish_reason: the connection was cut")
}
