package llmtest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Chunk is one streamed piece of reply content, sent Delay after the
// previous one.
type Chunk struct {
	Text  string
	Delay time.Duration
}

// Reply scripts the answer to one model request. Every stand-in (OpenAI
// chat completions, xAI Responses, Anthropic Messages) renders the same
// Reply in its own wire format, so one conformance suite drives them all.
type Reply struct {
	// Status other than 0 or 200 answers with that status and an
	// OpenAI-style JSON error body {"error":{"message","type","param","code"}}.
	Status int
	// RetryAfter > 0 sets the Retry-After (whole seconds, rounded up) and
	// retry-after-ms headers of an error reply.
	RetryAfter time.Duration
	Chunks     []Chunk
	// UsageEveryChunk streams xAI style: a running-total usage on every
	// chunk. Otherwise usage comes OpenAI style, in one final chunk with
	// "choices":[] sent only when the request set
	// stream_options.include_usage.
	UsageEveryChunk bool
	FinishReason    string // "" means "stop"
	// CutAfter > 0 aborts the connection after that many content chunks,
	// with no finish_reason and no [DONE]. With fewer chunks, the cut comes
	// after the last one and after any tool calls, before the finish. A
	// non-streaming request gets its connection dropped.
	CutAfter int
	// Hang sends the headers of a streaming reply (nothing at all for a
	// non-streaming one), then nothing more until the client goes away or
	// the test ends.
	Hang bool
	// Silent accepts the request and sends nothing at all, not even the
	// headers, until the client goes away or the test ends: a provider
	// that hung before answering. It takes precedence over Status.
	Silent bool
	// StallAfter > 0 goes silent mid-stream after that many content
	// chunks (after the last one, before the finish, when there are
	// fewer), keeping the connection open until the client goes away or
	// the test ends. A non-streaming request gets nothing.
	StallAfter int
	// ToolCalls are function calls the model makes after its text chunks.
	// A reply with tool calls finishes with the protocol's tool-use reason
	// ("tool_calls", "tool_use", or function_call output items).
	ToolCalls []ToolCall
	// WholeToolCalls sends each call's arguments in one piece (xAI chat
	// style); otherwise arguments arrive in several fragments.
	WholeToolCalls bool
	// ErrorCode, with Status, is the provider's error code, e.g.
	// "context_length_exceeded" or "rate_limit_exceeded".
	ErrorCode string
}

// ToolCall is one scripted function call.
type ToolCall struct {
	ID        string // "" gets a generated id
	Name      string
	Arguments string // a JSON object, as text
}

// Message is one message of a recorded request, normalised across
// protocols. Content parts of type "text" are joined.
type Message struct {
	Role       string // "system", "user", "assistant" or "tool"
	Content    string
	ToolCalls  []ToolCall // assistant: the calls it made
	ToolCallID string     // tool: the call this result answers
	IsError    bool       // tool: the result is an error (Anthropic is_error)
}

// RecordedRequest is one request that reached the stand-in's endpoint,
// whether or not it was authorized and valid. Fields the body did not
// carry (or that failed to decode) are zero.
type RecordedRequest struct {
	Model        string
	Messages     []Message
	Tools        []Tool
	Stream       bool
	IncludeUsage bool
	// PreviousResponseID and Store are the xAI Responses API's state.
	PreviousResponseID string
	Store              *bool
	Header             http.Header // without Authorization and x-api-key
	// Output is the structured output the request asked for, nil when
	// none: OpenAI response_format, Responses text.format, Anthropic
	// output_config.format, each of type json_schema.
	Output *OutputSchema
}

// OutputSchema is a requested structured output, normalised: Type is
// the wire's format type ("json_schema"); Anthropic sends no Name and is
// always Strict.
type OutputSchema struct {
	Type   string
	Name   string
	Schema json.RawMessage
	Strict bool
}

// wireFormat is a JSON schema format as the three protocols spell it.
type wireFormat struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Schema     json.RawMessage `json:"schema"`
	Strict     bool            `json:"strict"`
	JSONSchema *wireFormat     `json:"json_schema"` // OpenAI chat nests it
}

// outputSchema normalises a format; nil when raw is absent or not one.
func outputSchema(raw json.RawMessage) *OutputSchema {
	var f wireFormat
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f.Type == "" {
		return nil
	}
	o := &OutputSchema{Type: f.Type, Name: f.Name, Schema: slices.Clone(f.Schema), Strict: f.Strict}
	if f.JSONSchema != nil {
		o.Name, o.Schema, o.Strict = f.JSONSchema.Name, slices.Clone(f.JSONSchema.Schema), f.JSONSchema.Strict
	}
	return o
}

// Tool is a function tool as a request declared it.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// script is what every stand-in server shares: its queue of scripted
// replies, the requests it recorded, a sequence for ids, and the test's
// lifetime (closing releases Hang and Delay when the test ends).
type script struct {
	closing chan struct{}

	mu       sync.Mutex
	queue    []Reply
	requests []RecordedRequest
	seq      int
}

func newScript() script { return script{closing: make(chan struct{})} }

// Enqueue appends replies; requests are answered in order. With the queue
// empty, a request gets a default reply that echoes the last user message
// as "echo: <text>" in a few chunks.
func (s *script) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Requests returns the requests received so far, oldest first, normalised
// across protocols (see RecordedRequest).
func (s *script) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RecordedRequest, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// clone returns a deep copy of r.
func (r RecordedRequest) clone() RecordedRequest {
	r.Messages = slices.Clone(r.Messages)
	for i := range r.Messages {
		r.Messages[i].ToolCalls = slices.Clone(r.Messages[i].ToolCalls)
	}
	r.Tools = slices.Clone(r.Tools)
	for i := range r.Tools {
		r.Tools[i].Parameters = slices.Clone(r.Tools[i].Parameters)
	}
	if r.Store != nil {
		store := *r.Store
		r.Store = &store
	}
	r.Header = r.Header.Clone()
	if r.Output != nil {
		o := *r.Output
		o.Schema = slices.Clone(o.Schema)
		r.Output = &o
	}
	return r
}

// next pops the next scripted reply, or makes the default echo reply.
func (s *script) next(msgs []Message) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	var last string
	for _, m := range msgs {
		if m.Role == "user" {
			last = m.Content
		}
	}
	var chunks []Chunk
	for _, word := range strings.SplitAfter("echo: "+last, " ") {
		if word != "" {
			chunks = append(chunks, Chunk{Text: word})
		}
	}
	return Reply{Chunks: chunks}
}

// wait sleeps d on the server side (a scripted provider delay). It reports
// false when the client went away or the test ended.
func (s *script) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// hang blocks until the client goes away or the test ends.
func (s *script) hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.closing:
	}
}

// whole plays r for a request with stream false: the content of its chunks,
// after their delays. It drops the connection (panicking with
// http.ErrAbortHandler) when r is cut, and reports false when r hangs or
// the client goes away, in which case nothing is to be written.
func (s *script) whole(ctx context.Context, r Reply) (string, bool) {
	if r.Hang {
		s.hang(ctx)
		return "", false
	}
	if r.StallAfter > 0 {
		s.hang(ctx)
		return "", false
	}
	var text strings.Builder
	for i, c := range r.Chunks {
		if r.CutAfter > 0 && i == r.CutAfter {
			panic(http.ErrAbortHandler)
		}
		if !s.wait(ctx, c.Delay) {
			return "", false
		}
		text.WriteString(c.Text)
	}
	if r.CutAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	return text.String(), true
}

// RefusedURL returns a base URL on loopback where nothing listens, so a
// connection to it is refused: a provider that is down. The port was
// free a moment ago; another program taking it meanwhile is unlikely.
func RefusedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
}
