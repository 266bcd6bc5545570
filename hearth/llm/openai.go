package llm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// OpenAI talks to an OpenAI-compatible chat completions endpoint: xAI
// (https://api.x.ai/v1), OpenAI, Ollama's /v1, llama.cpp and vLLM.
// It is safe for concurrent use.
type OpenAI struct {
	name    string
	model   string
	key     string // only to redact it from error text
	timeout time.Duration
	chat    openai.ChatCompletionService
}

// NewOpenAI returns an adapter for cfg. A nil httpClient means a plain
// &http.Client{}; the per-call deadline comes from cfg.Timeout.
//
// The SDK client is built from explicit options only, so ambient OPENAI_*
// variables (organization, project, custom headers, a second key) never
// reach a provider that cfg did not name.
func NewOpenAI(cfg Config, httpClient *http.Client) *OpenAI {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	name := cmp.Or(cfg.Provider, ProviderOpenAI)
	model, base := DefaultOpenAIModel, DefaultOpenAIBaseURL
	if name == ProviderXAI {
		model, base = DefaultXAIModel, DefaultXAIBaseURL
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cmp.Or(cfg.BaseURL, base)),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0), // the caller decides about retries
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &OpenAI{
		name:    name,
		model:   cmp.Or(cfg.Model, model),
		key:     cfg.APIKey,
		timeout: cmp.Or(cfg.Timeout, DefaultTimeout),
		chat:    openai.NewChatCompletionService(opts...),
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
// Usage is the last one the provider reported: xAI sends a running total
// on every chunk, OpenAI one final chunk with no choices. A stream that ends
// with neither [DONE] nor a finish_reason is an error (a cut connection).
// Cancelling ctx aborts the call promptly; the call also ends after the
// configured timeout.
//
// Every error is an *Error. On error the returned Response holds what had
// arrived before the failure.
func (o *OpenAI) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	model := cmp.Or(req.Model, o.model)
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
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			return Response{}, &Error{Provider: o.name, Err: fmt.Errorf("message %d has role %q: want %q, %q or %q", i, m.Role, RoleSystem, RoleUser, RoleAssistant)}
		}
	}

	callCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var (
		tap streamTap
		raw *http.Response
	)
	stream := o.chat.NewStreaming(callCtx, params, option.WithMiddleware(tap.middleware), option.WithResponseInto(&raw))
	defer stream.Close()

	acc := accumulator{onText: onText}
	for stream.Next() {
		acc.add(stream.Current())
	}
	resp := acc.response(model)
	if err := stream.Err(); err != nil {
		return resp, o.callError(ctx, callCtx, &tap, raw, err)
	}
	if !tap.done && resp.FinishReason == "" {
		return resp, &Error{Provider: o.name, Retryable: true, Err: tap.incomplete()}
	}
	return resp, nil
}

// callError classifies a failed call. ctx is the caller's context and
// callCtx the one bounded by the timeout.
func (o *OpenAI) callError(ctx, callCtx context.Context, tap *streamTap, raw *http.Response, err error) *Error {
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
	case callCtx.Err() != nil:
		e.Retryable = true
		e.Err = fmt.Errorf("no complete reply within %v: %w", o.timeout, withCause(context.DeadlineExceeded, err))
	case errors.As(err, &apiErr):
		e.Status = apiErr.StatusCode
		e.Retryable = retryableStatus(e.Status)
		if apiErr.RawJSON() == "" && apiErr.Response != nil {
			// Not OpenAI's JSON error, perhaps a proxy's HTML page: keep
			// the start of it for the log.
			e.Err = &bodyError{snippet: snippet(apiErr.Response.Body, o.key), err: err}
		}
	case raw != nil && raw.StatusCode >= http.StatusBadRequest:
		// An error reply the SDK could not decode at all.
		e.Status = raw.StatusCode
		e.Retryable = retryableStatus(e.Status)
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

func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// accumulator folds chunks into a Response. Only choice 0 is kept: mnemo
// never asks for n > 1.
type accumulator struct {
	onText func(string)
	text   strings.Builder
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
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
}

func (a *accumulator) response(requested string) Response {
	return Response{
		Text:         a.text.String(),
		Model:        cmp.Or(a.model, requested),
		FinishReason: a.finish,
		Usage:        a.usage,
	}
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
