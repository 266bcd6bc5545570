package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// newAdapter returns an adapter pointed at srv with the given key.
func newAdapter(srv *llmtest.Server, key string, client *http.Client) *llm.OpenAI {
	return llm.NewOpenAI(llm.Config{Provider: "xai", Model: "grok-test", BaseURL: srv.URL, APIKey: key}, client)
}

var hello = llm.Request{Messages: []llm.Message{
	{Role: "system", Content: "be brief"},
	{Role: "user", Content: "say hello"},
}}

// collect returns an onText that appends to *got.
func collect(got *[]string) func(string) {
	return func(s string) { *got = append(*got, s) }
}

func chunks(texts ...string) []llmtest.Chunk {
	out := make([]llmtest.Chunk, len(texts))
	for i, s := range texts {
		out[i] = llmtest.Chunk{Text: s}
	}
	return out
}

func TestStream(t *testing.T) {
	// hello has 4 words: prompt_tokens is 4 in the stand-in's accounting.
	tests := []struct {
		name       string
		reply      *llmtest.Reply // nil: the stand-in's default echo
		wantDeltas []string
		want       llm.Response
	}{
		{
			name:       "openai style usage",
			reply:      &llmtest.Reply{Chunks: chunks("Hel", "lo", ", world")},
			wantDeltas: []string{"Hel", "lo", ", world"},
			want:       llm.Response{Text: "Hello, world", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
		{
			name:       "xai style running usage",
			reply:      &llmtest.Reply{Chunks: chunks("a", "b", "c", "d"), UsageEveryChunk: true},
			wantDeltas: []string{"a", "b", "c", "d"},
			want:       llm.Response{Text: "abcd", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 4}},
		},
		{
			name:       "empty deltas are not reported",
			reply:      &llmtest.Reply{Chunks: chunks("", "x", "", "y")},
			wantDeltas: []string{"x", "y"},
			want:       llm.Response{Text: "xy", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 4}},
		},
		{
			name:       "length limit",
			reply:      &llmtest.Reply{Chunks: chunks("trunc"), FinishReason: "length"},
			wantDeltas: []string{"trunc"},
			want:       llm.Response{Text: "trunc", Model: "grok-test", FinishReason: "length", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1}},
		},
		{
			name:       "empty reply",
			reply:      &llmtest.Reply{},
			wantDeltas: nil,
			want:       llm.Response{Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
		{
			name:       "default echo",
			wantDeltas: []string{"echo: ", "say ", "hello"},
			want:       llm.Response{Text: "echo: say hello", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			var deltas []string
			got, err := newAdapter(srv, secretKey, nil).Stream(t.Context(), hello, collect(&deltas))
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("onText calls mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stream() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamSendsRequest(t *testing.T) {
	conversation := []llm.Message{
		{Role: "system", Content: "You are mnemo."},
		{Role: "user", Content: "first"},
		{Role: "assistant", Content: "reply with \"quotes\" and\nnewlines"},
		{Role: "user", Content: "second ünïcödé"},
	}
	want := make([]llmtest.Message, len(conversation))
	for i, m := range conversation {
		want[i] = llmtest.Message{Role: m.Role, Content: m.Content}
	}
	tests := []struct {
		name      string
		model     string
		wantModel string
	}{
		{"configured model", "", "grok-test"},
		{"model per request", "grok-4.5", "grok-4.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			resp, err := newAdapter(srv, secretKey, nil).Stream(t.Context(), llm.Request{Model: tt.model, Messages: conversation}, nil)
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if resp.Model != tt.wantModel {
				t.Errorf("Response.Model = %q, want %q", resp.Model, tt.wantModel)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Model != tt.wantModel || !r.Stream || !r.IncludeUsage {
				t.Errorf("request model=%q stream=%v include_usage=%v, want model=%q stream=true include_usage=true", r.Model, r.Stream, r.IncludeUsage, tt.wantModel)
			}
			if diff := cmp.Diff(want, r.Messages); diff != "" {
				t.Errorf("messages sent mismatch (-want +got):\n%s", diff)
			}
			if got := r.Header.Get("Authorization"); got != "" {
				t.Errorf("recorded Authorization = %q, want it removed", got)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
		})
	}
}

// TestStreamRejectsBadRequest checks requests the adapter cannot express
// fail before anything is sent.
func TestStreamRejectsBadRequest(t *testing.T) {
	user := llm.Message{Role: "user", Content: "hi"}
	tests := []struct {
		name string
		req  llm.Request
		want string // in the error text
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "robot", Content: "x"}}}, `role "robot"`},
		{"tool result without call id", llm.Request{Messages: []llm.Message{user, {Role: "tool", Content: "x"}}}, "ToolCallID"},
		{"tool call without id", llm.Request{Messages: []llm.Message{user, {Role: "assistant", ToolCalls: []llm.ToolCall{{Name: "f"}}}}}, "ID"},
		{"tool call without name", llm.Request{Messages: []llm.Message{user, {Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c"}}}}}, "Name"},
		{"schema not an object", llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: []byte(`["type"]`)}}}, `tool "f"`},
		{"schema not JSON", llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: []byte(`{"type":`)}}}, `tool "f"`},
		{"schema null", llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: []byte(`null`)}}}, `tool "f"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, "")
			_, err := newAdapter(srv, "", nil).Stream(t.Context(), tt.req, nil)
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable || e.Status != 0 {
				t.Errorf("Stream() error = %#v, want a non-retryable *llm.Error without status", err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Stream() error = %q, want it to mention %s", err, tt.want)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("got %d requests, want 0", n)
			}
		})
	}
}

// TestStreamSendsTools checks the chat completions wire form of tools,
// tool calls and tool results, byte for byte where it matters.
func TestStreamSendsTools(t *testing.T) {
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseContent+sseFinish+sseDone)
	}))
	t.Cleanup(srv.Close)
	req := llm.Request{
		Messages: []llm.Message{
			{Role: "user", Content: "weather?"},
			{Role: "assistant", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
				{ID: "call_2", Name: "now"},
			}},
			{Role: "tool", ToolCallID: "call_1", Content: "rain"},
			{Role: "tool", ToolCallID: "call_2", Content: "no clock", IsError: true},
			{Role: "assistant", Content: "Rain, and I could not tell the time.", ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "now", Arguments: json.RawMessage(`{}`)}}},
			{Role: "tool", ToolCallID: "call_3", Content: ""},
		},
		Tools: []llm.Tool{
			{Name: "get_weather", Description: "Weather by city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"]}`)},
			{Name: "now"},
		},
	}
	o := llm.NewOpenAI(llm.Config{Provider: "openai", Model: "m", BaseURL: srv.URL + "/v1"}, nil)
	if _, err := o.Stream(t.Context(), req, nil); err != nil {
		t.Fatalf("Stream() error = %v", err)
	}
	var got struct {
		Messages []map[string]any `json:"messages"`
		Tools    []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(<-bodies, &got); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Messages []map[string]any `json:"messages"`
		Tools    []map[string]any `json:"tools"`
	}
	const wantJSON = `{
		"messages": [
			{"role":"user","content":"weather?"},
			{"role":"assistant","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
				{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}
			]},
			{"role":"tool","tool_call_id":"call_1","content":"rain"},
			{"role":"tool","tool_call_id":"call_2","content":"error: no clock"},
			{"role":"assistant","content":"Rain, and I could not tell the time.","tool_calls":[
				{"id":"call_3","type":"function","function":{"name":"now","arguments":"{}"}}
			]},
			{"role":"tool","tool_call_id":"call_3","content":""}
		],
		"tools": [
			{"type":"function","function":{"name":"get_weather","description":"Weather by city.","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"]}}},
			{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}
		]
	}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s", diff)
	}
}

// TestStreamToolCalls checks tool calls as the stand-in streams them,
// beside text and usage.
func TestStreamToolCalls(t *testing.T) {
	weather := llmtest.ToolCall{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Zürich","days":3}`}
	tests := []struct {
		name       string
		reply      llmtest.Reply
		wantDeltas []string
		want       llm.Response
	}{
		{
			name:  "fragmented",
			reply: llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 5},
				ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":3}`)}}},
		},
		{
			name:  "whole, xai style",
			reply: llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather}, WholeToolCalls: true, UsageEveryChunk: true},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1},
				ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":3}`)}}},
		},
		{
			name:       "text, then calls with generated ids and no arguments",
			reply:      llmtest.Reply{Chunks: chunks("One ", "moment."), ToolCalls: []llmtest.ToolCall{{Name: "now"}, {Name: "now", Arguments: "{}"}}},
			wantDeltas: []string{"One ", "moment."},
			want: llm.Response{Text: "One moment.", Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 5},
				ToolCalls: []llm.ToolCall{{ID: "call_llmtest000001", Name: "now", Arguments: json.RawMessage(`{}`)}, {ID: "call_llmtest000002", Name: "now", Arguments: json.RawMessage(`{}`)}}},
		},
		{
			name:  "invalid arguments from the model",
			reply: llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_x", Name: "f", Arguments: `{"city": Paris}`}}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 4},
				ToolCalls: []llm.ToolCall{{ID: "call_x", Name: "f", Arguments: json.RawMessage(`{"_raw":"{\"city\": Paris}"}`)}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			srv.Enqueue(tt.reply)
			var deltas []string
			got, err := newAdapter(srv, secretKey, nil).Stream(t.Context(), hello, collect(&deltas))
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("onText calls mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stream() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name           string
		reply          llmtest.Reply
		key            string // key the adapter sends; the server wants secretKey
		wantStatus     int
		wantRetryable  bool
		wantRetryAfter time.Duration
		wantOverflow   bool
		wantText       string // partial text returned with the error
	}{
		{name: "rate limited", reply: llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, key: secretKey, wantStatus: 429, wantRetryable: true, wantRetryAfter: 1500 * time.Millisecond},
		{name: "rate limited without Retry-After", reply: llmtest.Reply{Status: 429, ErrorCode: "rate_limit_exceeded"}, key: secretKey, wantStatus: 429, wantRetryable: true},
		{name: "overloaded with Retry-After", reply: llmtest.Reply{Status: 503, RetryAfter: 4 * time.Second}, key: secretKey, wantStatus: 503, wantRetryable: true, wantRetryAfter: 4 * time.Second},
		{name: "context overflow", reply: llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, key: secretKey, wantStatus: 400, wantOverflow: true},
		{name: "cut during tool calls", reply: llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "f", Arguments: `{"a":1}`}}, CutAfter: 1}, key: secretKey, wantRetryable: true},
		{name: "bad request", reply: llmtest.Reply{Status: 400}, key: secretKey, wantStatus: 400},
		{name: "server error", reply: llmtest.Reply{Status: 500}, key: secretKey, wantStatus: 500, wantRetryable: true},
		{name: "overloaded", reply: llmtest.Reply{Status: 503}, key: secretKey, wantStatus: 503, wantRetryable: true},
		{name: "model not found", reply: llmtest.Reply{Status: 404}, key: secretKey, wantStatus: 404},
		{name: "wrong key", key: "xai-WRONG-key-0000000000", wantStatus: 401},
		{name: "no key", key: "", wantStatus: 401},
		{name: "cut mid-stream", reply: llmtest.Reply{Chunks: chunks("one ", "two ", "three"), CutAfter: 2}, key: secretKey, wantRetryable: true, wantText: "one two "},
		{name: "cut before the finish", reply: llmtest.Reply{Chunks: chunks("all"), CutAfter: 1, UsageEveryChunk: true}, key: secretKey, wantRetryable: true, wantText: "all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			srv.Enqueue(tt.reply)
			resp, err := newAdapter(srv, tt.key, nil).Stream(t.Context(), hello, nil)
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			if e.Status != tt.wantStatus || e.Retryable != tt.wantRetryable || e.Provider != "xai" {
				t.Errorf("error = {Provider:%q Status:%d Retryable:%v}, want {Provider:\"xai\" Status:%d Retryable:%v}", e.Provider, e.Status, e.Retryable, tt.wantStatus, tt.wantRetryable)
			}
			if e.RetryAfter != tt.wantRetryAfter || e.ContextOverflow != tt.wantOverflow {
				t.Errorf("error = {RetryAfter:%v ContextOverflow:%v}, want {RetryAfter:%v ContextOverflow:%v}", e.RetryAfter, e.ContextOverflow, tt.wantRetryAfter, tt.wantOverflow)
			}
			if resp.Text != tt.wantText {
				t.Errorf("partial Text = %q, want %q", resp.Text, tt.wantText)
			}
			for _, k := range []string{secretKey, tt.key} {
				if k != "" && strings.Contains(err.Error(), k) {
					t.Errorf("error text %q contains the API key", err)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1 (the adapter must not retry)", n)
			}
		})
	}
}

// TestStreamRetryAfterVisible checks the caller can read the provider's
// Retry-After through the error chain to schedule its own retry.
func TestStreamRetryAfterVisible(t *testing.T) {
	srv := llmtest.NewOpenAI(t, secretKey)
	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: 2 * time.Second})
	_, err := newAdapter(srv, secretKey, nil).Stream(t.Context(), hello, nil)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("Stream() error = %v, want one wrapping *openai.Error", err)
	}
	if got := apiErr.Response.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q, want %q", got, "2")
	}
}

// cancelOnHeaders is a transport that cancels a context once response
// headers arrive, so a test can cancel exactly while the body is streaming.
type cancelOnHeaders struct {
	cancel context.CancelFunc
}

func (c cancelOnHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	c.cancel()
	return res, err
}

// streamAsync runs Stream in a goroutine and fails the test if it has not
// returned within guard.
func streamAsync(t *testing.T, ctx context.Context, o *llm.OpenAI, onText func(string)) (llm.Response, error, time.Duration) {
	t.Helper()
	type result struct {
		resp llm.Response
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := o.Stream(ctx, hello, onText)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err, time.Since(start)
	case <-time.After(guard):
		t.Fatalf("Stream() did not return within %v", guard)
		return llm.Response{}, nil, 0
	}
}

func TestStreamCancel(t *testing.T) {
	stalled := llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "first"}, {Text: "never", Delay: time.Hour}}}
	tests := []struct {
		name     string
		reply    llmtest.Reply
		when     string // "before", "headers" or "text"
		wantText string
	}{
		{name: "before the call", reply: llmtest.Reply{Hang: true}, when: "before"},
		{name: "hang after headers", reply: llmtest.Reply{Hang: true}, when: "headers"},
		{name: "stalled mid-stream", reply: stalled, when: "text", wantText: "first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			srv.Enqueue(tt.reply)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var client *http.Client
			onText := func(string) {}
			switch tt.when {
			case "before":
				cancel()
			case "headers":
				client = &http.Client{Transport: cancelOnHeaders{cancel: cancel}}
			case "text":
				onText = func(string) { cancel() }
			}
			resp, err, _ := streamAsync(t, ctx, newAdapter(srv, secretKey, client), onText)
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable || !errors.Is(err, context.Canceled) {
				t.Errorf("Stream() error = %v, want a non-retryable *llm.Error wrapping context.Canceled", err)
			}
			if resp.Text != tt.wantText {
				t.Errorf("partial Text = %q, want %q", resp.Text, tt.wantText)
			}
		})
	}
}

// rawServer serves body with the given status and content type to every
// request; "{{key}}" in body is replaced by the request's bearer token, to
// play a provider that echoes credentials.
func rawServer(t testing.TB, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		b := strings.ReplaceAll(body, "{{key}}", key)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(status)
		io.WriteString(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

const (
	sseContent = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n"
	sseFinish  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	sseUsage   = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}` + "\n\n"
	sseDone    = "data: [DONE]\n\n"
)

// TestStreamRawBodies drives the adapter with hand-written replies,
// including the ones a faithful stand-in never sends.
func TestStreamRawBodies(t *testing.T) {
	const sse = "text/event-stream"
	tests := []struct {
		name          string
		status        int
		contentType   string
		body          string
		want          llm.Response
		wantErr       bool
		wantStatus    int
		wantRetryable bool
	}{
		{name: "complete", status: 200, contentType: sse, body: sseContent + sseFinish + sseUsage + sseDone,
			want: llm.Response{Text: "hi", Model: "m", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 7, OutputTokens: 1}}},
		{name: "CRLF and comments", status: 200, contentType: sse, body: ": keep-alive\r\n\r\n" + strings.ReplaceAll(sseContent+sseFinish+sseDone, "\n", "\r\n"),
			want: llm.Response{Text: "hi", Model: "m", FinishReason: "stop"}},
		{name: "done without finish_reason", status: 200, contentType: sse, body: sseContent + "data:[DONE]\n\n",
			want: llm.Response{Text: "hi", Model: "m"}},
		{name: "finish_reason without done", status: 200, contentType: sse, body: sseContent + sseFinish,
			want: llm.Response{Text: "hi", Model: "m", FinishReason: "stop"}},
		{name: "ends early", status: 200, contentType: sse, body: sseContent,
			want: llm.Response{Text: "hi", Model: "m"}, wantErr: true, wantRetryable: true},
		{name: "not an event stream", status: 200, contentType: "application/json", body: `{"id":"c1","object":"chat.completion","choices":[]}`,
			want: llm.Response{Model: "grok-test"}, wantErr: true, wantRetryable: true},
		{name: "malformed chunk", status: 200, contentType: sse, body: sseContent + "data: {not json\n\n" + sseDone,
			want: llm.Response{Text: "hi", Model: "m"}, wantErr: true},
		{name: "error event", status: 200, contentType: sse, body: sseContent + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n",
			want: llm.Response{Text: "hi", Model: "m"}, wantErr: true},
		{name: "proxy error page", status: 502, contentType: "text/html", body: "<html><body>Bad Gateway</body></html>",
			want: llm.Response{Model: "grok-test"}, wantErr: true, wantStatus: 502, wantRetryable: true},
		{name: "empty error body", status: 500, contentType: "application/json", body: "",
			want: llm.Response{Model: "grok-test"}, wantErr: true, wantStatus: 500, wantRetryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := rawServer(t, tt.status, tt.contentType, tt.body)
			o := llm.NewOpenAI(llm.Config{Provider: "xai", Model: "grok-test", BaseURL: url, APIKey: secretKey}, nil)
			got, err := o.Stream(t.Context(), hello, nil)
			t.Logf("error text: %v", err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stream() response mismatch (-want +got):\n%s", diff)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Stream() error = %v, want nil", err)
				}
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			if e.Status != tt.wantStatus || e.Retryable != tt.wantRetryable {
				t.Errorf("error = {Status:%d Retryable:%v} (%v), want {Status:%d Retryable:%v}", e.Status, e.Retryable, err, tt.wantStatus, tt.wantRetryable)
			}
		})
	}
}

// TestErrorNeverContainsKey plays providers that echo the key back.
func TestErrorNeverContainsKey(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
	}{
		{"json error", 401, "application/json", `{"error":{"message":"Incorrect API key provided: {{key}}","type":"invalid_request_error","param":null,"code":"{{key}}"}}`},
		{"html error", 403, "text/html", "<p>denied for {{key}}</p>"},
		{"stream error event", 200, "text/event-stream", sseContent + `data: {"error":{"message":"bad key {{key}}"}}` + "\n\n"},
		{"malformed chunk", 200, "text/event-stream", "data: {{key}}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := rawServer(t, tt.status, tt.contentType, tt.body)
			o := llm.NewOpenAI(llm.Config{Provider: "openai", BaseURL: url, APIKey: secretKey}, nil)
			_, err := o.Stream(t.Context(), hello, nil)
			t.Logf("error text: %v", err)
			if err == nil {
				t.Fatal("Stream() error = nil, want an error")
			}
			for _, text := range []string{err.Error(), fmt.Sprint(err), fmt.Sprintf("%+v", err)} {
				if strings.Contains(text, secretKey) {
					t.Errorf("error text %q contains the API key", text)
				}
			}
		})
	}
}

// TestStreamIgnoresAmbientEnv checks that only Config reaches the wire:
// the SDK's own OPENAI_* variables must not add a key, organization or
// headers (a keyless Ollama must not receive an OpenAI key, xAI must not
// receive an OpenAI organization).
func TestStreamIgnoresAmbientEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-0123456789")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_PROJECT_ID", "proj-ambient")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Ambient: yes")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	headers := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseContent+sseFinish+sseDone)
	}))
	t.Cleanup(srv.Close)

	o := llm.NewOpenAI(llm.Config{Provider: "openai", Model: "llama3.2", BaseURL: srv.URL + "/v1"}, nil)
	if _, err := o.Stream(t.Context(), hello, nil); err != nil {
		t.Fatalf("Stream() error = %v", err)
	}
	h := <-headers
	for _, name := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project", "X-Ambient"} {
		if v := h.Get(name); v != "" {
			t.Errorf("request carried %s: %q, want none", name, v)
		}
	}
}

// TestStreamConcurrent runs calls in parallel on one adapter.
func TestStreamConcurrent(t *testing.T) {
	srv := llmtest.NewOpenAI(t, secretKey)
	o := newAdapter(srv, secretKey, nil)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	texts := make([]string, n)
	for i := range n {
		wg.Go(func() {
			req := llm.Request{Messages: []llm.Message{{Role: "user", Content: fmt.Sprintf("call %d", i)}}}
			resp, err := o.Stream(t.Context(), req, nil)
			errs[i], texts[i] = err, resp.Text
		})
	}
	wg.Wait()
	for i := range n {
		if want := fmt.Sprintf("echo: call %d", i); errs[i] != nil || texts[i] != want {
			t.Errorf("call %d = %q, %v; want %q, nil", i, texts[i], errs[i], want)
		}
	}
}

// FuzzStreamBody feeds arbitrary event-stream bodies to Stream: it must
// never panic, report text consistently, and fail only with *llm.Error.
func FuzzStreamBody(f *testing.F) {
	for _, seed := range []string{
		sseContent + sseFinish + sseUsage + sseDone,
		sseContent,
		sseContent + "data:[DONE]\n\n",
		"data: {not json\n\n",
		`data: {"error":{"message":"x"}}` + "\n\n",
		`data: {"choices":[{"index":5,"delta":{"content":"x"}}]}` + "\n\n" + sseDone,
		`data: {"choices":[{"index":0,"delta":{"content":"a","refusal":"b"},"finish_reason":"stop"}],"usage":null}` + "\n\n",
		"event: message\ndata: {\"choices\":[]}\ndata: \n\n",
		": comment\r\n\r\ndata: [DONE]",
		"",
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" + sseDone,
		`data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","function":{"name":"g","arguments":"[x"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":"0","function":null}]}}]}` + "\n\n" + sseDone,
	} {
		f.Add(seed)
	}
	var body atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, *body.Load())
	}))
	f.Cleanup(srv.Close)
	o := llm.NewOpenAI(llm.Config{Provider: "openai", BaseURL: srv.URL + "/v1"}, nil)

	f.Fuzz(func(t *testing.T, b string) {
		body.Store(&b)
		var deltas strings.Builder
		resp, err := o.Stream(t.Context(), hello, func(s string) {
			if s == "" {
				t.Error("onText called with an empty delta")
			}
			deltas.WriteString(s)
		})
		if got := deltas.String(); got != resp.Text {
			t.Errorf("onText saw %q, Response.Text = %q", got, resp.Text)
		}
		if err != nil {
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Errorf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			return
		}
		if resp.FinishReason == "" && !strings.Contains(b, "[DONE]") {
			t.Errorf("Stream() succeeded on %q with neither a finish_reason nor [DONE]", b)
		}
		for i, c := range resp.ToolCalls {
			var obj map[string]any
			if c.ID == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				t.Errorf("ToolCalls[%d] = {ID:%q Arguments:%q}, want an id and a JSON object", i, c.ID, c.Arguments)
			}
		}
	})
}

// BenchmarkStream measures the adapter over real HTTP with a 100-chunk
// reply.
func BenchmarkStream(b *testing.B) {
	const n = 100
	srv := llmtest.NewOpenAI(b, "")
	reply := llmtest.Reply{Chunks: make([]llmtest.Chunk, n)}
	for i := range reply.Chunks {
		reply.Chunks[i].Text = "tok "
	}
	o := newAdapter(srv, "", nil)
	b.ReportAllocs()
	for b.Loop() {
		srv.Enqueue(reply)
		resp, err := o.Stream(b.Context(), hello, func(string) {})
		if err != nil || len(resp.Text) != 4*n {
			b.Fatalf("Stream() = %d bytes, %v; want %d bytes, nil", len(resp.Text), err, 4*n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
}

// TestOpenAIConformance runs the shared provider suite against the chat
// completions adapter and stand-in.
func TestOpenAIConformance(t *testing.T) {
	for _, provider := range []string{llm.ProviderXAI, llm.ProviderOpenAI} {
		t.Run(provider, func(t *testing.T) {
			llmtest.RunConformance(t,
				func(t *testing.T, key string) llmtest.Backend { return llmtest.NewOpenAI(t, key) },
				func(baseURL, key string) llmtest.Streamer {
					return llm.NewOpenAI(llm.Config{Provider: provider, BaseURL: baseURL, APIKey: key}, nil)
				})
		})
	}
}
