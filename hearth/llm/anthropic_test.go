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

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

const anthKey = "sk-ant-SECRET-0123456789abcdef"

// anthDurations bound the timing tests: generous for -race on a loaded
// machine, small enough to notice a call that does not abort.
const (
	anthShortTimeout = 200 * time.Millisecond
	anthGuard        = 10 * time.Second
)

func newAnthropicAdapter(baseURL, key string, client *http.Client) *llm.Anthropic {
	return llm.NewAnthropic(llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-test", BaseURL: baseURL, APIKey: key}, client)
}

// anthHello has 4 words: input_tokens is 4 in the stand-in's accounting.
var anthHello = llm.Request{Messages: []llm.Message{
	{Role: llm.RoleSystem, Content: "be brief"},
	{Role: llm.RoleUser, Content: "say hello"},
}}

func anthChunks(texts ...string) []llmtest.Chunk {
	out := make([]llmtest.Chunk, len(texts))
	for i, s := range texts {
		out[i] = llmtest.Chunk{Text: s}
	}
	return out
}

func TestAnthropicConformance(t *testing.T) {
	llmtest.RunConformance(t,
		func(t *testing.T, key string) llmtest.Backend { return llmtest.NewAnthropic(t, key) },
		func(baseURL, key string) llmtest.Streamer {
			return llm.NewAnthropic(llm.Config{Provider: llm.ProviderAnthropic, BaseURL: baseURL, APIKey: key}, nil)
		})
}

func TestAnthropicDefaults(t *testing.T) {
	tests := []struct {
		name      string
		cfg       llm.Config
		wantModel string
	}{
		{"defaults", llm.Config{Provider: llm.ProviderAnthropic}, llm.DefaultAnthropicModel},
		{"configured model", llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-opus-5"}, "claude-opus-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := llm.NewAnthropic(tt.cfg, nil)
			if a.Name() != "anthropic" || a.Model() != tt.wantModel {
				t.Errorf("Name(), Model() = %q, %q; want %q, %q", a.Name(), a.Model(), "anthropic", tt.wantModel)
			}
		})
	}
}

func TestAnthropicStream(t *testing.T) {
	weather := llmtest.ToolCall{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Zürich ✓","days":[1,2]}`}
	clock := llmtest.ToolCall{ID: "toolu_2", Name: "get_time", Arguments: `{"zone":"Europe/Zurich"}`}
	toLLM := func(calls ...llmtest.ToolCall) []llm.ToolCall {
		var out []llm.ToolCall
		for _, c := range calls {
			out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)})
		}
		return out
	}
	tests := []struct {
		name       string
		reply      *llmtest.Reply // nil: the stand-in's default echo
		wantDeltas []string
		want       llm.Response
	}{
		{
			name:       "plain text",
			reply:      &llmtest.Reply{Chunks: anthChunks("Hel", "lo, ", "wörld")},
			wantDeltas: []string{"Hel", "lo, ", "wörld"},
			want:       llm.Response{Text: "Hello, wörld", Model: "claude-test", FinishReason: "end_turn", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
		{
			name:       "default echo",
			wantDeltas: []string{"echo: ", "say ", "hello"},
			want:       llm.Response{Text: "echo: say hello", Model: "claude-test", FinishReason: "end_turn", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
		{
			name:       "empty deltas are not reported",
			reply:      &llmtest.Reply{Chunks: anthChunks("", "x", "", "y")},
			wantDeltas: []string{"x", "y"},
			want:       llm.Response{Text: "xy", Model: "claude-test", FinishReason: "end_turn", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 4}},
		},
		{
			name:       "max tokens",
			reply:      &llmtest.Reply{Chunks: anthChunks("trunc"), FinishReason: "length"},
			wantDeltas: []string{"trunc"},
			want:       llm.Response{Text: "trunc", Model: "claude-test", FinishReason: "max_tokens", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1}},
		},
		{
			name:  "empty reply",
			reply: &llmtest.Reply{},
			want:  llm.Response{Model: "claude-test", FinishReason: "end_turn", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
		{
			name:  "one tool_use",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather}},
			want:  llm.Response{ToolCalls: toLLM(weather), Model: "claude-test", FinishReason: "tool_use", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
		{
			name:  "parallel tool_use in fragments",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather, clock}},
			want:  llm.Response{ToolCalls: toLLM(weather, clock), Model: "claude-test", FinishReason: "tool_use", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
		{
			name:  "parallel tool_use whole",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{clock, weather}, WholeToolCalls: true},
			want:  llm.Response{ToolCalls: toLLM(clock, weather), Model: "claude-test", FinishReason: "tool_use", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
		{
			name:       "text and tool_use",
			reply:      &llmtest.Reply{Chunks: anthChunks("Let me ", "check."), ToolCalls: []llmtest.ToolCall{weather}},
			wantDeltas: []string{"Let me ", "check."},
			want:       llm.Response{Text: "Let me check.", ToolCalls: toLLM(weather), Model: "claude-test", FinishReason: "tool_use", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 2}},
		},
		{
			name:  "tool_use without input",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "toolu_9", Name: "now"}}},
			want:  llm.Response{ToolCalls: []llm.ToolCall{{ID: "toolu_9", Name: "now", Arguments: json.RawMessage("{}")}}, Model: "claude-test", FinishReason: "tool_use", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			var deltas []string
			got, err := newAnthropicAdapter(srv.BaseURL(), anthKey, nil).Stream(t.Context(), anthHello, func(s string) { deltas = append(deltas, s) })
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

// anthConversation exercises every mapping rule: system messages anywhere,
// an assistant turn with text and calls, consecutive tool results (one an
// error, one empty), a user message right after them, and two user
// messages in a row.
var anthConversation = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are mnemo."},
	{Role: llm.RoleUser, Content: "first"},
	{Role: llm.RoleUser, Content: "and more"},
	{Role: llm.RoleSystem, Content: "Be brief."},
	{Role: llm.RoleAssistant, Content: "Checking \"quotes\"\nand newlines.", ToolCalls: []llm.ToolCall{
		{ID: "toolu_a", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Zürich"}`)},
		{ID: "toolu_b", Name: "get_time"},
		{ID: "toolu_c", Name: "get_time", Arguments: json.RawMessage(`{"zone":"UTC"}`)},
	}},
	{Role: llm.RoleTool, ToolCallID: "toolu_a", Content: `{"temp_c":18}`},
	{Role: llm.RoleTool, ToolCallID: "toolu_b", Content: "no zone given", IsError: true},
	{Role: llm.RoleTool, ToolCallID: "toolu_c"},
	{Role: llm.RoleUser, Content: "thanks ünïcödé"},
	{Role: llm.RoleAssistant, Content: "You're welcome."},
	{Role: llm.RoleAssistant, Content: ""},
	{Role: llm.RoleUser, Content: "bye"},
}

var anthTools = []llm.Tool{
	{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time"},
}

// TestAnthropicWireBody checks the exact request body the adapter sends.
func TestAnthropicWireBody(t *testing.T) {
	bodies := make(chan []byte, 1)
	headers := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		headers <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthSSEHello)
	}))
	t.Cleanup(srv.Close)

	a := newAnthropicAdapter(srv.URL, anthKey, nil)
	if _, err := a.Stream(t.Context(), llm.Request{Messages: anthConversation, Tools: anthTools}, nil); err != nil {
		t.Fatalf("Stream() error = %v", err)
	}
	const want = `{
		"model": "claude-test",
		"max_tokens": 8192,
		"stream": true,
		"system": [{"type": "text", "text": "You are mnemo.\n\nBe brief."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "and more"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Checking \"quotes\"\nand newlines."},
				{"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Zürich"}},
				{"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
				{"type": "tool_use", "id": "toolu_c", "name": "get_time", "input": {"zone": "UTC"}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_a", "is_error": false, "content": [{"type": "text", "text": "{\"temp_c\":18}"}]},
				{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true, "content": [{"type": "text", "text": "no zone given"}]},
				{"type": "tool_result", "tool_use_id": "toolu_c", "is_error": false},
				{"type": "text", "text": "thanks ünïcödé"}
			]},
			{"role": "assistant", "content": [{"type": "text", "text": "You're welcome."}]},
			{"role": "user", "content": [{"type": "text", "text": "bye"}]}
		],
		"tools": [
			{"name": "get_weather", "description": "Weather for a city.", "input_schema": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
			{"name": "get_time", "input_schema": {"type": "object", "properties": {}}}
		]
	}`
	var wantV, gotV any
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	got := <-bodies
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s", diff)
	}
	h := <-headers
	for name, want := range map[string]string{"X-Api-Key": anthKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Authorization": ""} {
		if got := h.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

// TestAnthropicSendsConversation checks the stand-in accepts the mapped
// conversation (alternation, tool pairing) and records it as sent.
func TestAnthropicSendsConversation(t *testing.T) {
	tests := []struct {
		name      string
		baseURL   func(srv *llmtest.AnthropicServer) string
		model     string
		wantModel string
	}{
		{"configured model", func(s *llmtest.AnthropicServer) string { return s.BaseURL() }, "", "claude-test"},
		{"model per request", func(s *llmtest.AnthropicServer) string { return s.BaseURL() }, "claude-opus-5", "claude-opus-5"},
		{"base URL with /v1", func(s *llmtest.AnthropicServer) string { return s.BaseURL() + "/v1/" }, "", "claude-test"},
	}
	want := []llmtest.Message{
		{Role: "system", Content: "You are mnemo.\n\nBe brief."},
		{Role: "user", Content: "firstand more"},
		{Role: "assistant", Content: "Checking \"quotes\"\nand newlines.", ToolCalls: []llmtest.ToolCall{
			{ID: "toolu_a", Name: "get_weather", Arguments: `{"city":"Zürich"}`},
			{ID: "toolu_b", Name: "get_time", Arguments: `{}`},
			{ID: "toolu_c", Name: "get_time", Arguments: `{"zone":"UTC"}`},
		}},
		{Role: "tool", ToolCallID: "toolu_a", Content: `{"temp_c":18}`},
		{Role: "tool", ToolCallID: "toolu_b", Content: "no zone given", IsError: true},
		{Role: "tool", ToolCallID: "toolu_c"},
		{Role: "user", Content: "thanks ünïcödé"},
		{Role: "assistant", Content: "You're welcome."},
		{Role: "user", Content: "bye"},
	}
	wantTools := []llmtest.Tool{
		{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			a := newAnthropicAdapter(tt.baseURL(srv), anthKey, nil)
			resp, err := a.Stream(t.Context(), llm.Request{Model: tt.model, Messages: anthConversation, Tools: anthTools}, nil)
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if resp.Model != tt.wantModel || resp.Text != "echo: bye" {
				t.Errorf("Response Model, Text = %q, %q; want %q, %q", resp.Model, resp.Text, tt.wantModel, "echo: bye")
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Model != tt.wantModel || !r.Stream {
				t.Errorf("request model=%q stream=%v, want model=%q stream=true", r.Model, r.Stream, tt.wantModel)
			}
			if diff := cmp.Diff(want, r.Messages); diff != "" {
				t.Errorf("messages sent mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantTools, r.Tools); diff != "" {
				t.Errorf("tools sent mismatch (-want +got):\n%s", diff)
			}
			if got := r.Header.Get("X-Api-Key"); got != "" {
				t.Errorf("recorded x-api-key = %q, want it removed", got)
			}
		})
	}
}

// TestAnthropicRejectsBadRequest checks requests the adapter cannot map
// fail before anything is sent.
func TestAnthropicRejectsBadRequest(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Content: "hi"}
	tests := []struct {
		name string
		req  llm.Request
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "developer", Content: "x"}}}},
		{"tool result without call id", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool, Content: "x"}}}},
		{"tool call without id", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}}}},
		{"tool call arguments not JSON", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":`)}}}}}},
		{"tool call arguments not an object", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`[1]`)}}}}}},
		{"tool parameters not an object", llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`"string"`)}}}},
		{"tool without name", llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Description: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			_, err := newAnthropicAdapter(srv.BaseURL(), anthKey, nil).Stream(t.Context(), tt.req, nil)
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable || e.Provider != "anthropic" {
				t.Errorf("Stream() error = %#v, want a non-retryable *llm.Error from anthropic", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("got %d requests, want 0", n)
			}
		})
	}
}

// TestAnthropicStandInRefusals checks the adapter reports the stand-in's
// validation errors (what the real API refuses) as non-retryable 400s.
func TestAnthropicStandInRefusals(t *testing.T) {
	tests := []struct {
		name string
		msgs []llm.Message
		want string // in the error text
	}{
		{"starts with assistant", []llm.Message{{Role: llm.RoleAssistant, Content: "hi"}, {Role: llm.RoleUser, Content: "x"}}, `first message must use the "user" role`},
		{"unanswered tool_use", []llm.Message{
			{Role: llm.RoleUser, Content: "x"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f"}}},
			{Role: llm.RoleUser, Content: "y"},
		}, "`tool_use` ids were found without `tool_result` blocks"},
		{"result for an unknown call", []llm.Message{
			{Role: llm.RoleUser, Content: "x"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f"}}},
			{Role: llm.RoleTool, ToolCallID: "c2", Content: "r"},
		}, "unexpected `tool_use_id`"},
		{"no messages", nil, "messages: Field required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			_, err := newAnthropicAdapter(srv.BaseURL(), anthKey, nil).Stream(t.Context(), llm.Request{Messages: tt.msgs}, nil)
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Retryable || e.ContextOverflow {
				t.Fatalf("Stream() error = %v, want a non-retryable 400 *llm.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "type=invalid_request_error") {
				t.Errorf("error text %q, want it to contain %q and the error type", err, tt.want)
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	tests := []struct {
		name           string
		reply          llmtest.Reply
		key            string // key the adapter sends; the stand-in wants anthKey
		wantStatus     int
		wantRetryable  bool
		wantRetryAfter time.Duration
		wantOverflow   bool
		wantText       string // partial text returned with the error
		wantCalls      int    // tool calls returned with the error
	}{
		{name: "rate limited", reply: llmtest.Reply{Status: 429, RetryAfter: 2 * time.Second}, key: anthKey, wantStatus: 429, wantRetryable: true, wantRetryAfter: 2 * time.Second},
		{name: "rate limited, retry-after rounded up", reply: llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, key: anthKey, wantStatus: 429, wantRetryable: true, wantRetryAfter: 2 * time.Second},
		{name: "overloaded", reply: llmtest.Reply{Status: 529}, key: anthKey, wantStatus: 529, wantRetryable: true},
		{name: "overloaded with retry-after", reply: llmtest.Reply{Status: 529, RetryAfter: time.Second}, key: anthKey, wantStatus: 529, wantRetryable: true, wantRetryAfter: time.Second},
		{name: "server error", reply: llmtest.Reply{Status: 500}, key: anthKey, wantStatus: 500, wantRetryable: true},
		{name: "timeout error", reply: llmtest.Reply{Status: 504}, key: anthKey, wantStatus: 504, wantRetryable: true},
		{name: "bad request", reply: llmtest.Reply{Status: 400}, key: anthKey, wantStatus: 400},
		{name: "context overflow", reply: llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, key: anthKey, wantStatus: 400, wantOverflow: true},
		{name: "request too large", reply: llmtest.Reply{Status: 413}, key: anthKey, wantStatus: 413, wantOverflow: true},
		{name: "model not found", reply: llmtest.Reply{Status: 404}, key: anthKey, wantStatus: 404},
		{name: "permission", reply: llmtest.Reply{Status: 403}, key: anthKey, wantStatus: 403},
		{name: "wrong key", key: "sk-ant-WRONG-key-0000000000", wantStatus: 401},
		{name: "no key", key: "", wantStatus: 401},
		{name: "cut mid-stream", reply: llmtest.Reply{Chunks: anthChunks("one ", "two ", "three"), CutAfter: 2}, key: anthKey, wantRetryable: true, wantText: "one two "},
		{name: "cut after text and tool calls", reply: llmtest.Reply{Chunks: anthChunks("all"), CutAfter: 1, ToolCalls: []llmtest.ToolCall{{Name: "f"}}}, key: anthKey, wantRetryable: true, wantText: "all", wantCalls: 1},
		{name: "cut after a tool call", reply: llmtest.Reply{CutAfter: 1, ToolCalls: []llmtest.ToolCall{{Name: "f"}, {Name: "g", Arguments: `{"a":1}`}}}, key: anthKey, wantRetryable: true, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			srv.Enqueue(tt.reply)
			resp, err := newAnthropicAdapter(srv.BaseURL(), tt.key, nil).Stream(t.Context(), anthHello, nil)
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			got := fmt.Sprintf("{Provider:%s Status:%d Retryable:%v RetryAfter:%v ContextOverflow:%v}", e.Provider, e.Status, e.Retryable, e.RetryAfter, e.ContextOverflow)
			want := fmt.Sprintf("{Provider:anthropic Status:%d Retryable:%v RetryAfter:%v ContextOverflow:%v}", tt.wantStatus, tt.wantRetryable, tt.wantRetryAfter, tt.wantOverflow)
			if got != want {
				t.Errorf("error = %s, want %s", got, want)
			}
			if resp.Text != tt.wantText || len(resp.ToolCalls) != tt.wantCalls {
				t.Errorf("partial response = %q with %d calls, want %q with %d", resp.Text, len(resp.ToolCalls), tt.wantText, tt.wantCalls)
			}
			for _, k := range []string{anthKey, tt.key} {
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

// TestAnthropicErrorUnwraps checks the caller can reach the SDK's error,
// and through it the reply's headers.
func TestAnthropicErrorUnwraps(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: 3 * time.Second})
	_, err := newAnthropicAdapter(srv.BaseURL(), anthKey, nil).Stream(t.Context(), anthHello, nil)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("Stream() error = %v, want one wrapping *anthropic.Error", err)
	}
	if got := apiErr.Response.Header.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After = %q, want %q", got, "3")
	}
	if apiErr.Type() != "rate_limit_error" {
		t.Errorf("error type = %q, want rate_limit_error", apiErr.Type())
	}
}

// anthCancelOnHeaders is a transport that cancels a context once response
// headers arrive, so a test can cancel exactly while the body streams.
type anthCancelOnHeaders struct {
	cancel context.CancelFunc
}

func (c anthCancelOnHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	c.cancel()
	return res, err
}

// anthStreamAsync runs Stream in a goroutine and fails the test if it has
// not returned within anthGuard.
func anthStreamAsync(t *testing.T, ctx context.Context, a *llm.Anthropic, onText func(string)) (llm.Response, error, time.Duration) {
	t.Helper()
	type result struct {
		resp llm.Response
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := a.Stream(ctx, anthHello, onText)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err, time.Since(start)
	case <-time.After(anthGuard):
		t.Fatalf("Stream() did not return within %v", anthGuard)
		return llm.Response{}, nil, 0
	}
}

func TestAnthropicCancel(t *testing.T) {
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
			srv := llmtest.NewAnthropic(t, anthKey)
			srv.Enqueue(tt.reply)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var client *http.Client
			onText := func(string) {}
			switch tt.when {
			case "before":
				cancel()
			case "headers":
				client = &http.Client{Transport: anthCancelOnHeaders{cancel: cancel}}
			case "text":
				onText = func(string) { cancel() }
			}
			resp, err, _ := anthStreamAsync(t, ctx, newAnthropicAdapter(srv.BaseURL(), anthKey, client), onText)
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

// anthRawServer serves body with the given status, content type and extra
// headers to every request; "{{key}}" in body is replaced by the request's
// x-api-key, to play a provider that echoes credentials.
func anthRawServer(t testing.TB, status int, contentType, body string, header http.Header) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := strings.ReplaceAll(body, "{{key}}", r.Header.Get("X-Api-Key"))
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(status)
		io.WriteString(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// anthEvent renders one server-sent event.
func anthEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

var (
	anthSSEStart     = anthEvent("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_creation_input_tokens":2,"cache_read_input_tokens":1,"output_tokens":1}}}`)
	anthSSEPing      = anthEvent("ping", `{"type": "ping"}`)
	anthSSETextStart = anthEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	anthSSEText      = anthEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
	anthSSETextStop  = anthEvent("content_block_stop", `{"type":"content_block_stop","index":0}`)
	anthSSEEnd       = anthEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`)
	anthSSEToolEnd   = anthEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`)
	anthSSEMaxTokens = anthEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5}}`)
	anthSSEStop      = anthEvent("message_stop", `{"type":"message_stop"}`)
	anthSSEHello     = anthSSEStart + anthSSEPing + anthSSETextStart + anthSSEText + anthSSETextStop + anthSSEEnd + anthSSEStop
)

// anthSSETool renders a tool_use block at index whose input arrives in
// the given fragments.
func anthSSETool(index int, id, name string, fragments ...string) string {
	s := anthEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, index, id, name))
	for _, f := range fragments {
		b, _ := json.Marshal(f)
		s += anthEvent("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, index, b))
	}
	return s + anthEvent("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
}

// TestAnthropicRawBodies drives the adapter with hand-written replies,
// including ones a faithful stand-in never sends.
func TestAnthropicRawBodies(t *testing.T) {
	const sse = "text/event-stream; charset=utf-8"
	usage := &llm.Usage{InputTokens: 10, OutputTokens: 5}
	tests := []struct {
		name          string
		status        int
		contentType   string
		header        http.Header
		body          string
		want          llm.Response
		wantErr       bool
		wantStatus    int
		wantRetryable bool
		wantAfter     time.Duration
		wantInText    string
	}{
		{name: "complete", status: 200, contentType: sse, body: anthSSEHello,
			want: llm.Response{Text: "hi", Model: "claude-x", FinishReason: "end_turn", Usage: usage}},
		{name: "CRLF and comments", status: 200, contentType: sse, body: ": keep-alive\r\n\r\n" + strings.ReplaceAll(anthSSEHello, "\n", "\r\n"),
			want: llm.Response{Text: "hi", Model: "claude-x", FinishReason: "end_turn", Usage: usage}},
		{name: "input tokens in message_delta", status: 200, contentType: sse,
			body: anthSSEStart + anthEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":3}}`) + anthSSEStop,
			want: llm.Response{Model: "claude-x", FinishReason: "end_turn", Usage: &llm.Usage{InputTokens: 25, OutputTokens: 3}}},
		{name: "thinking and unknown blocks are skipped", status: 200, contentType: sse,
			body: anthSSEStart +
				anthEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) +
				anthEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":1}`) +
				anthEvent("future_event", `{"type":"future_event"}`) +
				anthEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":"pre "}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"answer"}}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":2}`) +
				anthSSEEnd + anthSSEStop,
			want: llm.Response{Text: "pre answer", Model: "claude-x", FinishReason: "end_turn", Usage: usage}},
		{name: "tool input whole in content_block_start", status: 200, contentType: sse,
			body: anthSSEStart + anthEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) + anthSSEToolEnd + anthSSEStop,
			want: llm.Response{ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}, Model: "claude-x", FinishReason: "tool_use", Usage: usage}},
		{name: "interleaved tool blocks", status: 200, contentType: sse,
			body: anthSSEStart +
				anthEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}`) +
				anthEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t2","name":"g","input":{}}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"b\""}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":2}"}}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":1}`) +
				anthEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) +
				anthSSEToolEnd + anthSSEStop,
			want: llm.Response{ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}, {ID: "t2", Name: "g", Arguments: json.RawMessage(`{"b":2}`)}}, Model: "claude-x", FinishReason: "tool_use", Usage: usage}},
		{name: "events after message_stop are ignored", status: 200, contentType: sse, body: anthSSEHello + anthSSETextStart + anthSSEText,
			want: llm.Response{Text: "hi", Model: "claude-x", FinishReason: "end_turn", Usage: usage}},
		{name: "tool input cut by max_tokens", status: 200, contentType: sse,
			body: anthSSEStart + anthSSETextStart + anthSSEText + anthSSETextStop + anthSSETool(1, "t1", "f", `{"a":`) + anthSSEMaxTokens + anthSSEStop,
			want: llm.Response{Text: "hi", ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{"_raw":"{\"a\":"}`)}}, Model: "claude-x", FinishReason: "max_tokens", Usage: usage}},
		{name: "tool input not JSON", status: 200, contentType: sse,
			body: anthSSEStart + anthSSETool(0, "t0", "ok", ` {"b": 2} `) + anthSSETool(1, "t1", "f", `{"a":`) + anthSSEToolEnd + anthSSEStop,
			want: llm.Response{ToolCalls: []llm.ToolCall{{ID: "t0", Name: "ok", Arguments: json.RawMessage(`{"b": 2}`)}, {ID: "t1", Name: "f", Arguments: json.RawMessage(`{"_raw":"{\"a\":"}`)}}, Model: "claude-x", FinishReason: "tool_use", Usage: usage}},
		{name: "tool input not an object", status: 200, contentType: sse,
			body: anthSSEStart + anthSSETool(0, "t1", "f", `[1,2]`) + anthSSEToolEnd + anthSSEStop,
			want: llm.Response{ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{"_raw":"[1,2]"}`)}}, Model: "claude-x", FinishReason: "tool_use", Usage: usage}},
		{name: "cut inside a tool block", status: 200, contentType: sse,
			body: anthSSEStart + anthSSETool(0, "t0", "ok", `{}`) + anthEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}`) +
				anthEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`),
			want:    llm.Response{ToolCalls: []llm.ToolCall{{ID: "t0", Name: "ok", Arguments: json.RawMessage(`{}`)}}, Model: "claude-x", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}},
			wantErr: true, wantRetryable: true, wantInText: "without message_stop"},
		{name: "ends without message_stop", status: 200, contentType: sse, body: anthSSEStart + anthSSETextStart + anthSSEText + anthSSETextStop + anthSSEEnd,
			want:    llm.Response{Text: "hi", Model: "claude-x", FinishReason: "end_turn", Usage: usage},
			wantErr: true, wantRetryable: true, wantInText: "without message_stop"},
		{name: "empty stream", status: 200, contentType: sse, body: "",
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantRetryable: true},
		{name: "not an event stream", status: 200, contentType: "application/json", body: `{"id":"msg_1","type":"message","content":[]}`,
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantRetryable: true, wantInText: `Content-Type "application/json"`},
		{name: "malformed event", status: 200, contentType: sse, body: anthSSEStart + anthSSETextStart + anthSSEText + "event: content_block_delta\ndata: {not json\n\n" + anthSSEStop,
			want: llm.Response{Text: "hi", Model: "claude-x", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}, wantErr: true, wantInText: "decoding"},
		{name: "overloaded error event", status: 200, contentType: sse,
			body: anthSSEStart + anthSSETextStart + anthSSEText + anthEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			want: llm.Response{Text: "hi", Model: "claude-x", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}, wantErr: true, wantRetryable: true, wantInText: "anthropic: error event: Overloaded (type=overloaded_error)"},
		{name: "invalid request error event", status: 200, contentType: sse,
			body: anthSSEStart + anthEvent("error", `{"type":"error","error":{"type":"invalid_request_error","message":"nope"}}`),
			want: llm.Response{Model: "claude-x", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}, wantErr: true, wantInText: "nope"},
		{name: "error event not JSON", status: 200, contentType: sse, body: anthSSEStart + anthEvent("error", `boom`),
			want: llm.Response{Model: "claude-x", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}, wantErr: true, wantInText: "boom"},
		{name: "proxy error page", status: 502, contentType: "text/html", body: "<html><body>Bad Gateway</body></html>",
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 502, wantRetryable: true, wantInText: "error body: <html><body>Bad Gateway"},
		{name: "empty error body", status: 500, contentType: "application/json", body: "",
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 500, wantRetryable: true, wantInText: "empty error body"},
		{name: "error with request id", status: 400, contentType: "application/json", header: http.Header{"Request-Id": {"req_42"}},
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"},"request_id":"req_42"}`,
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 400, wantInText: "HTTP 400 Bad Request: messages: bad (type=invalid_request_error request-id=req_42)"},
		{name: "context window message", status: 400, contentType: "application/json",
			body: "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and `max_tokens` exceed context limit: 197779 + 8192 > 200000, decrease input length or `max_tokens` and try again\"}}",
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 400},
		{name: "retry-after-ms wins", status: 429, contentType: "application/json", header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 429, wantRetryable: true, wantAfter: 1500 * time.Millisecond},
		{name: "retry-after as a past date", status: 429, contentType: "application/json", header: http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 429, wantRetryable: true},
		{name: "retry-after garbage", status: 503, contentType: "application/json", header: http.Header{"Retry-After": {"soon"}},
			body: `{"type":"error","error":{"type":"api_error","message":"later"}}`,
			want: llm.Response{Model: "claude-test"}, wantErr: true, wantStatus: 503, wantRetryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := anthRawServer(t, tt.status, tt.contentType, tt.body, tt.header)
			a := newAnthropicAdapter(url, anthKey, nil)
			var deltas strings.Builder
			got, err := a.Stream(t.Context(), anthHello, func(s string) { deltas.WriteString(s) })
			t.Logf("error text: %v", err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stream() response mismatch (-want +got):\n%s", diff)
			}
			if deltas.String() != got.Text {
				t.Errorf("onText saw %q, Response.Text = %q", deltas.String(), got.Text)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stream() error = %v, want error: %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			if e.Status != tt.wantStatus || e.Retryable != tt.wantRetryable || e.RetryAfter != tt.wantAfter {
				t.Errorf("error = {Status:%d Retryable:%v RetryAfter:%v}, want {Status:%d Retryable:%v RetryAfter:%v}", e.Status, e.Retryable, e.RetryAfter, tt.wantStatus, tt.wantRetryable, tt.wantAfter)
			}
			if wantOverflow := tt.name == "context window message"; e.ContextOverflow != wantOverflow {
				t.Errorf("ContextOverflow = %v, want %v", e.ContextOverflow, wantOverflow)
			}
			if !strings.Contains(err.Error(), tt.wantInText) {
				t.Errorf("error text %q, want it to contain %q", err, tt.wantInText)
			}
		})
	}
}

// TestAnthropicRetryAfterDate checks a Retry-After given as an HTTP date
// in the future.
func TestAnthropicRetryAfterDate(t *testing.T) {
	url := anthRawServer(t, 429, "application/json", `{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`,
		http.Header{"Retry-After": {"Fri, 01 Jan 2100 00:00:00 GMT"}})
	_, err := newAnthropicAdapter(url, anthKey, nil).Stream(t.Context(), anthHello, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.RetryAfter < 24*time.Hour {
		t.Errorf("Stream() error = %v, want an *llm.Error with a RetryAfter of years", err)
	}
}

// TestAnthropicErrorNeverContainsKey plays providers that echo the key.
func TestAnthropicErrorNeverContainsKey(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
	}{
		{"json error", 401, "application/json", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: {{key}}"}}`},
		{"html error", 403, "text/html", "<p>denied for {{key}}</p>"},
		{"key cut by the snippet", 500, "text/plain", strings.Repeat("x", 190) + "{{key}}"},
		{"stream error event", 200, "text/event-stream", anthSSEStart + anthEvent("error", `{"type":"error","error":{"type":"api_error","message":"bad key {{key}}"}}`)},
		{"error event not JSON", 200, "text/event-stream", anthSSEStart + anthEvent("error", `{{key}}`)},
		{"malformed event", 200, "text/event-stream", "event: message_start\ndata: {{key}}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := anthRawServer(t, tt.status, tt.contentType, tt.body, nil)
			_, err := newAnthropicAdapter(url, anthKey, nil).Stream(t.Context(), anthHello, nil)
			t.Logf("error text: %v", err)
			if err == nil {
				t.Fatal("Stream() error = nil, want an error")
			}
			for _, text := range []string{err.Error(), fmt.Sprint(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%v", errors.Unwrap(err))} {
				if strings.Contains(text, anthKey) || strings.Contains(text, anthKey[:20]) {
					t.Errorf("error text %q contains (part of) the API key", text)
				}
			}
		})
	}
}

// TestAnthropicIgnoresAmbientEnv checks that only Config reaches the wire:
// the SDK's own ANTHROPIC_* variables must not add a key, a token, headers
// or another base URL.
func TestAnthropicIgnoresAmbientEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-ambient-0123456789")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "ambient-token")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Ambient: yes")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := llmtest.NewAnthropic(t, "")
	a := llm.NewAnthropic(llm.Config{Provider: llm.ProviderAnthropic, BaseURL: srv.BaseURL()}, nil)
	if _, err := a.Stream(t.Context(), anthHello, nil); err != nil {
		t.Fatalf("Stream() error = %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	for _, name := range []string{"Authorization", "X-Ambient"} {
		if v := reqs[0].Header.Get(name); v != "" {
			t.Errorf("request carried %s: %q, want none", name, v)
		}
	}
}

// TestAnthropicConcurrent runs calls in parallel on one adapter.
func TestAnthropicConcurrent(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	a := newAnthropicAdapter(srv.BaseURL(), anthKey, nil)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	texts := make([]string, n)
	for i := range n {
		wg.Go(func() {
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("call %d", i)}}}
			resp, err := a.Stream(t.Context(), req, nil)
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

// FuzzAnthropicStream feeds arbitrary event-stream bodies to Stream: it
// must never panic, report text consistently, fail only with *llm.Error,
// succeed only on a stream with message_stop, and return only tool calls
// whose arguments are JSON objects.
func FuzzAnthropicStream(f *testing.F) {
	for _, seed := range []string{
		anthSSEHello,
		anthSSEStart + anthSSETextStart + anthSSEText,
		anthSSEStart + anthSSETool(0, "t1", "f", "", `{"a":`, `1}`) + anthSSEToolEnd + anthSSEStop,
		anthSSEStart + anthSSETool(0, "t1", "f", `{"a":`) + anthSSEMaxTokens + anthSSEStop,
		anthSSEStart + anthSSETool(3, "t1", "f", `[]`) + anthSSEToolEnd + anthSSEStop,
		anthSSEStart + anthEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		anthEvent("content_block_delta", `{"type":"content_block_delta","index":-1,"delta":{"type":"input_json_delta","partial_json":"x"}}`) + anthSSEStop,
		anthEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":"nope"}}`) + anthSSEStop,
		"event: message_start\ndata: {not json\n\n",
		"data: {\"type\":\"message_stop\"}\n\n",
		": comment\r\n\r\nevent: ping\r\ndata: {}\r\n\r\n",
		"",
	} {
		f.Add(seed)
	}
	var body atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, *body.Load())
	}))
	f.Cleanup(srv.Close)
	a := newAnthropicAdapter(srv.URL, anthKey, nil)

	f.Fuzz(func(t *testing.T, b string) {
		body.Store(&b)
		var deltas strings.Builder
		resp, err := a.Stream(t.Context(), anthHello, func(s string) {
			if s == "" {
				t.Error("onText called with an empty delta")
			}
			deltas.WriteString(s)
		})
		if got := deltas.String(); got != resp.Text {
			t.Errorf("onText saw %q, Response.Text = %q", got, resp.Text)
		}
		for i, c := range resp.ToolCalls {
			var obj map[string]any
			if json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				t.Errorf("ToolCalls[%d].Arguments = %q, not a JSON object", i, c.Arguments)
			}
		}
		if err != nil {
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Errorf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			if strings.Contains(err.Error(), anthKey) {
				t.Errorf("error text %q contains the API key", err)
			}
			return
		}
		if !strings.Contains(b, "message_stop") {
			t.Errorf("Stream() succeeded on %q without a message_stop", b)
		}
	})
}
