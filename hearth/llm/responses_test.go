package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// responsesKey is the key the Responses stand-ins require.
const responsesKey = "xai-RESPONSES-secret-0123456789abcdef"

func newResponses(baseURL, key string, client *http.Client, serverTools ...string) *llm.Responses {
	return llm.NewResponses(llm.Config{Provider: llm.ProviderXAI, Model: "grok-test", BaseURL: baseURL, APIKey: key, ServerTools: serverTools}, client)
}

func responsesChunks(texts ...string) []llmtest.Chunk {
	out := make([]llmtest.Chunk, len(texts))
	for i, s := range texts {
		out[i] = llmtest.Chunk{Text: s}
	}
	return out
}

// responsesStream runs one call and returns its result and onText deltas.
func responsesStream(t *testing.T, m *llm.Responses, req llm.Request) (llm.Response, []string, error) {
	t.Helper()
	var deltas []string
	resp, err := m.Stream(t.Context(), req, func(s string) { deltas = append(deltas, s) })
	return resp, deltas, err
}

var responsesHello = []llm.Message{
	{Role: llm.RoleSystem, Content: "be brief"},
	{Role: llm.RoleUser, Content: "say hello"},
}

func TestResponsesConformance(t *testing.T) {
	llmtest.RunConformance(t,
		func(t *testing.T, key string) llmtest.Backend { return llmtest.NewResponses(t, key) },
		func(baseURL, key string) llmtest.Streamer { return newResponses(baseURL, key, nil) })
}

func TestResponsesNameModel(t *testing.T) {
	tests := []struct {
		cfg       llm.Config
		wantName  string
		wantModel string
	}{
		{llm.Config{}, "xai", llm.DefaultXAIModel},
		{llm.Config{Provider: llm.ProviderXAI, Model: "grok-4.5"}, "xai", "grok-4.5"},
		{llm.Config{Provider: llm.ProviderOpenAI}, "openai", llm.DefaultOpenAIModel},
	}
	for _, tt := range tests {
		m := llm.NewResponses(tt.cfg, nil)
		if m.Name() != tt.wantName || m.Model() != tt.wantModel {
			t.Errorf("NewResponses(%v): Name() = %q, Model() = %q; want %q, %q", tt.cfg, m.Name(), m.Model(), tt.wantName, tt.wantModel)
		}
	}
}

func TestResponsesStream(t *testing.T) {
	weather := llmtest.ToolCall{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Zürich","note":"a \"quote\""}`}
	clock := llmtest.ToolCall{ID: "call_c", Name: "get_time", Arguments: `{"zone":"Europe/Zurich"}`}
	// responsesHello has 4 words: input_tokens is 4 in the stand-in's
	// accounting; output_tokens counts chunks and calls.
	tests := []struct {
		name       string
		reply      *llmtest.Reply // nil: the stand-in's default echo
		wantDeltas []string
		want       llm.Response
	}{
		{
			name:       "plain text",
			reply:      &llmtest.Reply{Chunks: responsesChunks("Hel", "lo, ", "wörld")},
			wantDeltas: []string{"Hel", "lo, ", "wörld"},
			want:       llm.Response{Text: "Hello, wörld", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
		{
			name:       "default echo",
			wantDeltas: []string{"echo: ", "say ", "hello"},
			want:       llm.Response{Text: "echo: say hello", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3}},
		},
		{
			name:       "empty deltas are not reported",
			reply:      &llmtest.Reply{Chunks: responsesChunks("", "x", "", "y")},
			wantDeltas: []string{"x", "y"},
			want:       llm.Response{Text: "xy", Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 4}},
		},
		{
			name:  "empty reply",
			reply: &llmtest.Reply{},
			want:  llm.Response{Model: "grok-test", FinishReason: "stop", Usage: &llm.Usage{InputTokens: 4}},
		},
		{
			name:  "tool call",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1},
				ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: json.RawMessage(weather.Arguments)}}},
		},
		{
			name:  "parallel calls in fragments",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather, clock}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 2},
				ToolCalls: []llm.ToolCall{
					{ID: "call_w", Name: "get_weather", Arguments: json.RawMessage(weather.Arguments)},
					{ID: "call_c", Name: "get_time", Arguments: json.RawMessage(clock.Arguments)},
				}},
		},
		{
			name:  "parallel calls whole",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{clock, weather}, WholeToolCalls: true},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 2},
				ToolCalls: []llm.ToolCall{
					{ID: "call_c", Name: "get_time", Arguments: json.RawMessage(clock.Arguments)},
					{ID: "call_w", Name: "get_weather", Arguments: json.RawMessage(weather.Arguments)},
				}},
		},
		{
			name:       "text and calls",
			reply:      &llmtest.Reply{Chunks: responsesChunks("Let me ", "check."), ToolCalls: []llmtest.ToolCall{clock}},
			wantDeltas: []string{"Let me ", "check."},
			want: llm.Response{Text: "Let me check.", Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 3},
				ToolCalls: []llm.ToolCall{{ID: "call_c", Name: "get_time", Arguments: json.RawMessage(clock.Arguments)}}},
		},
		{
			name:  "call without arguments",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_n", Name: "now"}}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1},
				ToolCalls: []llm.ToolCall{{ID: "call_n", Name: "now", Arguments: json.RawMessage("{}")}}},
		},
		{
			name:  "call with generated id",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "now", Arguments: `{}`}}},
			want: llm.Response{Model: "grok-test", FinishReason: "tool_calls", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 1},
				ToolCalls: []llm.ToolCall{{ID: "call_llmtest000001", Name: "now", Arguments: json.RawMessage("{}")}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, responsesKey)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			got, deltas, err := responsesStream(t, newResponses(srv.BaseURL(), responsesKey, nil), llm.Request{Messages: responsesHello})
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("onText calls mismatch (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(got.ResponseID, "resp_") {
				t.Errorf("Response.ResponseID = %q, want a resp_ id", got.ResponseID)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(llm.Response{}, "ResponseID")); diff != "" {
				t.Errorf("Stream() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// responsesCapture records the JSON bodies of the requests it passes on.
type responsesCapture struct {
	next http.RoundTripper

	mu     sync.Mutex
	bodies []map[string]any
}

func (c *responsesCapture) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		var v map[string]any
		json.Unmarshal(b, &v)
		c.mu.Lock()
		c.bodies = append(c.bodies, v)
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *responsesCapture) body(t *testing.T, i int) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.bodies) {
		t.Fatalf("captured %d request bodies, want at least %d", len(c.bodies), i+1)
	}
	return c.bodies[i]
}

// roundTripConversation is a conversation with every kind of message.
var roundTripConversation = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are mnemo."},
	{Role: llm.RoleUser, Content: "weather and time in Zürich?"},
	{Role: llm.RoleAssistant, Content: "Checking.", ToolCalls: []llm.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich"}`)},
		{ID: "call_2", Name: "get_time", Arguments: json.RawMessage(`{"zone":"Europe/Zurich"}`)},
	}},
	{Role: llm.RoleTool, ToolCallID: "call_1", Content: `{"temp_c":18}`},
	{Role: llm.RoleTool, ToolCallID: "call_2", Content: "unknown zone", IsError: true},
	{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "now"}}},
	{Role: llm.RoleTool, ToolCallID: "call_3", Content: "12:00"},
	{Role: llm.RoleAssistant, Content: "It is 18°C at noon."},
	{Role: llm.RoleUser, Content: "thanks"},
}

func TestResponsesSendsRequest(t *testing.T) {
	srv := llmtest.NewResponses(t, responsesKey)
	capture := &responsesCapture{next: http.DefaultTransport}
	m := newResponses(srv.BaseURL(), responsesKey, &http.Client{Transport: capture}, "web_search", "x_search", "code_interpreter")
	tools := []llm.Tool{
		{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "now"},
	}
	if _, _, err := responsesStream(t, m, llm.Request{Model: "grok-4.5", Messages: roundTripConversation, Tools: tools}); err != nil {
		t.Fatalf("Stream() error = %v", err)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "grok-4.5" || !r.Stream || r.Store == nil || !*r.Store || r.PreviousResponseID != "" {
		t.Errorf("request model=%q stream=%v store=%v previous=%q; want grok-4.5, true, true, none", r.Model, r.Stream, r.Store, r.PreviousResponseID)
	}
	want := []llmtest.Message{
		{Role: "system", Content: "You are mnemo."},
		{Role: "user", Content: "weather and time in Zürich?"},
		{Role: "assistant", Content: "Checking.", ToolCalls: []llmtest.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Zürich"}`},
			{ID: "call_2", Name: "get_time", Arguments: `{"zone":"Europe/Zurich"}`},
		}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"temp_c":18}`},
		{Role: "tool", ToolCallID: "call_2", Content: "error: unknown zone"},
		{Role: "assistant", ToolCalls: []llmtest.ToolCall{{ID: "call_3", Name: "now", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "call_3", Content: "12:00"},
		{Role: "assistant", Content: "It is 18°C at noon."},
		{Role: "user", Content: "thanks"},
	}
	if diff := cmp.Diff(want, r.Messages); diff != "" {
		t.Errorf("recorded messages mismatch (-want +got):\n%s", diff)
	}
	wantTools := []llmtest.Tool{
		{Name: "web_search"},
		{Name: "x_search"},
		{Name: "code_interpreter"},
		{Name: "get_weather", Description: "Weather for a city.", Parameters: tools[0].Parameters},
		{Name: "now", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	if diff := cmp.Diff(wantTools, r.Tools); diff != "" {
		t.Errorf("recorded tools mismatch (-want +got):\n%s", diff)
	}
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("recorded Authorization = %q, want it removed", got)
	}

	// The wire form, beyond what the stand-in normalises.
	body := capture.body(t, 0)
	if _, ok := body["instructions"]; ok {
		t.Errorf("body has instructions = %v; xAI rejects them", body["instructions"])
	}
	input, _ := body["input"].([]any)
	wantItems := []map[string]any{
		{"type": "message", "role": "system", "content": "You are mnemo."},
		{"type": "message", "role": "user", "content": "weather and time in Zürich?"},
		{"type": "message", "role": "assistant", "content": "Checking."},
		{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Zürich"}`},
		{"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": `{"zone":"Europe/Zurich"}`},
		{"type": "function_call_output", "call_id": "call_1", "output": `{"temp_c":18}`},
		{"type": "function_call_output", "call_id": "call_2", "output": "error: unknown zone"},
		{"type": "function_call", "call_id": "call_3", "name": "now", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_3", "output": "12:00"},
		{"type": "message", "role": "assistant", "content": "It is 18°C at noon."},
		{"type": "message", "role": "user", "content": "thanks"},
	}
	var gotItems []map[string]any
	for _, it := range input {
		m, _ := it.(map[string]any)
		gotItems = append(gotItems, m)
	}
	if diff := cmp.Diff(wantItems, gotItems); diff != "" {
		t.Errorf("input items mismatch (-want +got):\n%s", diff)
	}
	wantWireTools := []any{
		map[string]any{"type": "web_search"},
		map[string]any{"type": "x_search"},
		map[string]any{"type": "code_interpreter"},
		map[string]any{"type": "function", "name": "get_weather", "description": "Weather for a city.", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
		}},
		map[string]any{"type": "function", "name": "now", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}},
	}
	if diff := cmp.Diff(wantWireTools, body["tools"]); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	if body["stream"] != true || body["store"] != true {
		t.Errorf("stream = %v, store = %v; want true, true", body["stream"], body["store"])
	}
}

func TestResponsesRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name        string
		msgs        []llm.Message
		serverTools []string
	}{
		{"unknown role", []llm.Message{{Role: "developer", Content: "x"}}, nil},
		{"tool result without call id", []llm.Message{{Role: llm.RoleTool, Content: "x"}}, nil},
		{"tool call without id", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}}, nil},
		{"unknown server tool", responsesHello, []string{"web_search", "telepathy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, responsesKey)
			_, _, err := responsesStream(t, newResponses(srv.BaseURL(), responsesKey, nil, tt.serverTools...), llm.Request{Messages: tt.msgs})
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable {
				t.Errorf("Stream() error = %v, want a non-retryable *llm.Error", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("got %d requests, want 0", n)
			}
		})
	}
}

func TestResponsesContinuation(t *testing.T) {
	srv := llmtest.NewResponses(t, responsesKey)
	var logs bytes.Buffer
	m := newResponses(srv.BaseURL(), responsesKey, nil).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))

	// Turn 1: the model calls a tool.
	call := llmtest.ToolCall{ID: "call_1", Name: "get_time", Arguments: `{"zone":"UTC"}`}
	srv.Enqueue(llmtest.Reply{Chunks: responsesChunks("Looking."), ToolCalls: []llmtest.ToolCall{call}})
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: "what time is it"},
	}
	first, _, err := responsesStream(t, m, llm.Request{Messages: msgs})
	if err != nil {
		t.Fatalf("first Stream() error = %v", err)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: first.Text, ToolCalls: first.ToolCalls})
	from := len(msgs)
	msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "noon"})

	// Turn 2: only the tool result goes out, after the stored response.
	// The stand-in's default reply echoes the last user message of the
	// whole stored conversation, which proves it joined the history.
	second, deltas, err := responsesStream(t, m, llm.Request{Messages: msgs, Continue: &llm.Continuation{ResponseID: first.ResponseID, From: from}})
	if err != nil {
		t.Fatalf("second Stream() error = %v", err)
	}
	if got, want := strings.Join(deltas, ""), "echo: what time is it"; got != want || second.Text != want {
		t.Errorf("second call: onText %q, Text %q; want %q", got, second.Text, want)
	}
	if second.ResponseID == "" || second.ResponseID == first.ResponseID {
		t.Errorf("second ResponseID = %q, want a new id (first was %q)", second.ResponseID, first.ResponseID)
	}
	// input_tokens counts the whole conversation: 2+4 words before, the
	// reply "Looking." and the tool result "noon"; five echo chunks.
	if want := (&llm.Usage{InputTokens: 8, OutputTokens: 5}); !cmp.Equal(want, second.Usage) {
		t.Errorf("second Usage = %+v, want %+v", second.Usage, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	if reqs[0].PreviousResponseID != "" {
		t.Errorf("first request previous_response_id = %q, want none", reqs[0].PreviousResponseID)
	}
	if reqs[1].PreviousResponseID != first.ResponseID {
		t.Errorf("second request previous_response_id = %q, want %q", reqs[1].PreviousResponseID, first.ResponseID)
	}
	if diff := cmp.Diff([]llmtest.Message{{Role: "tool", ToolCallID: "call_1", Content: "noon"}}, reqs[1].Messages); diff != "" {
		t.Errorf("second request messages mismatch (-want +got):\n%s", diff)
	}
	if logs.Len() != 0 {
		t.Errorf("logged %q, want nothing", logs.String())
	}
}

func TestResponsesContinuationFallback(t *testing.T) {
	tests := []struct {
		name         string
		forget       bool            // the stored responses expire
		replies      []llmtest.Reply // enqueued after the first turn
		wantRequests int
		wantErr      int // HTTP status of the expected error, 0 for success
	}{
		{name: "stored response expired", forget: true, wantRequests: 2},
		{name: "400 previous response not found", replies: []llmtest.Reply{{Status: 400, ErrorCode: "previous_response_not_found"}}, wantRequests: 2},
		{name: "fallback fails too", forget: true, replies: []llmtest.Reply{{Status: 503}}, wantRequests: 2, wantErr: 503},
		{name: "model not found is no stale response", replies: []llmtest.Reply{{Status: 404}}, wantRequests: 1, wantErr: 404},
		{name: "other 400", replies: []llmtest.Reply{{Status: 400}}, wantRequests: 1, wantErr: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, responsesKey)
			var logs bytes.Buffer
			m := newResponses(srv.BaseURL(), responsesKey, nil).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
			msgs := []llm.Message{{Role: llm.RoleSystem, Content: "be brief"}, {Role: llm.RoleUser, Content: "first question"}}
			first, _, err := responsesStream(t, m, llm.Request{Messages: msgs})
			if err != nil {
				t.Fatalf("first Stream() error = %v", err)
			}
			if tt.forget {
				srv.ForgetResponses()
			}
			srv.Enqueue(tt.replies...)
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, Content: first.Text},
				llm.Message{Role: llm.RoleUser, Content: "second question"})
			resp, _, err := responsesStream(t, m, llm.Request{Messages: msgs, Continue: &llm.Continuation{ResponseID: first.ResponseID, From: 3}})

			reqs := srv.Requests()[1:]
			if len(reqs) != tt.wantRequests {
				t.Fatalf("the continued call made %d requests, want %d", len(reqs), tt.wantRequests)
			}
			if reqs[0].PreviousResponseID != first.ResponseID || len(reqs[0].Messages) != 1 {
				t.Errorf("first attempt: previous_response_id %q with %d messages, want %q with 1", reqs[0].PreviousResponseID, len(reqs[0].Messages), first.ResponseID)
			}
			if tt.wantRequests == 2 {
				want := []llmtest.Message{
					{Role: "system", Content: "be brief"},
					{Role: "user", Content: "first question"},
					{Role: "assistant", Content: "echo: first question"},
					{Role: "user", Content: "second question"},
				}
				if reqs[1].PreviousResponseID != "" {
					t.Errorf("fallback previous_response_id = %q, want none", reqs[1].PreviousResponseID)
				}
				if diff := cmp.Diff(want, reqs[1].Messages); diff != "" {
					t.Errorf("fallback messages mismatch (-want +got):\n%s", diff)
				}
				if !strings.Contains(logs.String(), "stored response is gone") || !strings.Contains(logs.String(), first.ResponseID) {
					t.Errorf("log = %q, want the fallback logged with the response id", logs.String())
				}
			}
			if strings.Contains(logs.String(), responsesKey) {
				t.Errorf("log %q contains the API key", logs.String())
			}
			if tt.wantErr != 0 {
				var e *llm.Error
				if !errors.As(err, &e) || e.Status != tt.wantErr {
					t.Errorf("Stream() error = %v, want an *llm.Error with status %d", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			if resp.Text != "echo: second question" || resp.ResponseID == "" || resp.ResponseID == first.ResponseID {
				t.Errorf("Stream() = text %q id %q, want the echo of the second question under a new id", resp.Text, resp.ResponseID)
			}
		})
	}
}

func TestResponsesContinuationOutOfRange(t *testing.T) {
	for _, from := range []int{-1, 2, 7} {
		srv := llmtest.NewResponses(t, responsesKey)
		m := newResponses(srv.BaseURL(), responsesKey, nil)
		if _, _, err := responsesStream(t, m, llm.Request{Messages: responsesHello, Continue: &llm.Continuation{ResponseID: "resp_x", From: from}}); err != nil {
			t.Fatalf("From %d: Stream() error = %v", from, err)
		}
		r := srv.Requests()[0]
		if r.PreviousResponseID != "" || len(r.Messages) != len(responsesHello) {
			t.Errorf("From %d: sent previous_response_id %q and %d messages, want none and all %d", from, r.PreviousResponseID, len(r.Messages), len(responsesHello))
		}
	}
}

func TestResponsesErrors(t *testing.T) {
	tests := []struct {
		name           string
		reply          llmtest.Reply
		key            string // key the adapter sends; the server wants responsesKey
		wantStatus     int
		wantRetryable  bool
		wantRetryAfter time.Duration
		wantOverflow   bool
		wantText       string // partial text returned with the error
		wantFinish     string
	}{
		{name: "rate limited", reply: llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, key: responsesKey, wantStatus: 429, wantRetryable: true, wantRetryAfter: 1500 * time.Millisecond},
		{name: "bad request", reply: llmtest.Reply{Status: 400}, key: responsesKey, wantStatus: 400},
		{name: "context overflow", reply: llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, key: responsesKey, wantStatus: 400, wantOverflow: true},
		{name: "server error", reply: llmtest.Reply{Status: 500}, key: responsesKey, wantStatus: 500, wantRetryable: true},
		{name: "overloaded", reply: llmtest.Reply{Status: 503, RetryAfter: 2 * time.Second}, key: responsesKey, wantStatus: 503, wantRetryable: true, wantRetryAfter: 2 * time.Second},
		{name: "model not found", reply: llmtest.Reply{Status: 404}, key: responsesKey, wantStatus: 404},
		{name: "wrong key", key: "xai-WRONG-key-0000000000", wantStatus: 401},
		{name: "no key", key: "", wantStatus: 401},
		{name: "cut mid-stream", reply: llmtest.Reply{Chunks: responsesChunks("one ", "two ", "three"), CutAfter: 2}, key: responsesKey, wantRetryable: true, wantText: "one two "},
		{name: "cut before the calls", reply: llmtest.Reply{Chunks: responsesChunks("all"), CutAfter: 1, ToolCalls: []llmtest.ToolCall{{Name: "f"}}}, key: responsesKey, wantRetryable: true, wantText: "all"},
		{name: "incomplete", reply: llmtest.Reply{Chunks: responsesChunks("trunc"), FinishReason: "length"}, key: responsesKey, wantText: "trunc", wantFinish: "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, responsesKey)
			srv.Enqueue(tt.reply)
			resp, _, err := responsesStream(t, newResponses(srv.BaseURL(), tt.key, nil), llm.Request{Messages: responsesHello})
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			got := struct {
				Status     int
				Retryable  bool
				RetryAfter time.Duration
				Overflow   bool
				Text       string
				Finish     string
			}{e.Status, e.Retryable, e.RetryAfter, e.ContextOverflow, resp.Text, resp.FinishReason}
			want := got
			want.Status, want.Retryable, want.RetryAfter, want.Overflow, want.Text, want.Finish = tt.wantStatus, tt.wantRetryable, tt.wantRetryAfter, tt.wantOverflow, tt.wantText, tt.wantFinish
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if e.Provider != "xai" {
				t.Errorf("Error.Provider = %q, want xai", e.Provider)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1 (no retries)", n)
			}
			for _, k := range []string{responsesKey, tt.key} {
				if k != "" && strings.Contains(err.Error(), k) {
					t.Errorf("error text %q contains the API key", err)
				}
			}
		})
	}
}

// responsesHeaders is a transport that signals when response headers
// arrive, then cancels the call.
type responsesHeaders struct {
	cancel context.CancelFunc
}

func (c responsesHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c.cancel()
	}
	return res, err
}

func TestResponsesHangCancel(t *testing.T) {
	srv := llmtest.NewResponses(t, responsesKey)
	srv.Enqueue(llmtest.Reply{Hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := newResponses(srv.BaseURL(), responsesKey, &http.Client{Transport: responsesHeaders{cancel: cancel}})
	_, err := m.Stream(ctx, llm.Request{Messages: responsesHello}, nil)
	var e *llm.Error
	if !errors.As(err, &e) || !errors.Is(err, context.Canceled) || e.Retryable {
		t.Errorf("Stream() error = %v, want a non-retryable *llm.Error wrapping context.Canceled", err)
	}
}

// responsesCanned answers every request with one fixed reply.
type responsesCanned struct {
	status int
	header http.Header
	body   string
}

func (c responsesCanned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := c.header.Clone()
	if h == nil {
		h = http.Header{"Content-Type": {"text/event-stream"}}
	}
	return &http.Response{
		StatusCode: c.status,
		Header:     h,
		Body:       io.NopCloser(strings.NewReader(c.body)),
		Request:    r,
	}, nil
}

// sse renders events as a Responses stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		var typ struct {
			Type string `json:"type"`
		}
		json.Unmarshal([]byte(ev), &typ)
		b.WriteString("event: " + typ.Type + "\ndata: " + ev + "\n\n")
	}
	return b.String()
}

const (
	evCreated   = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"grok-x","output":[]}}`
	evCompleted = `{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","model":"grok-x","output":[],"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}}`
)

func TestResponsesRawStreams(t *testing.T) {
	sseHeader := http.Header{"Content-Type": {"text/event-stream"}}
	tests := []struct {
		name           string
		reply          responsesCanned
		want           llm.Response
		wantDeltas     []string
		wantErr        bool
		wantStatus     int
		wantRetryable  bool
		wantRetryAfter time.Duration
		wantOverflow   bool
		wantInError    string
	}{
		{
			name: "reasoning and server-side tool events are ignored",
			reply: responsesCanned{status: 200, body: sse(evCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
				`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"thinking"}`,
				`{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":0,"delta":"hmm"}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}`,
				`{"type":"response.web_search_call.searching","item_id":"ws_1","output_index":1}`,
				`{"type":"response.web_search_call.completed","item_id":"ws_1","output_index":1}`,
				`{"type":"response.x_search_call.completed","item_id":"xs_1","output_index":2}`,
				`{"type":"response.output_text.delta","item_id":"msg_1","output_index":3,"content_index":0,"delta":"Found it."}`,
				`{"type":"response.output_text.annotation.added","item_id":"msg_1","output_index":3,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","url":"https://x.ai"}}`,
				evCompleted)},
			wantDeltas: []string{"Found it."},
			want:       llm.Response{Text: "Found it.", Model: "grok-x", FinishReason: "stop", ResponseID: "resp_1", Usage: &llm.Usage{InputTokens: 5, OutputTokens: 2}},
		},
		{
			name: "output only in the terminal event",
			reply: responsesCanned{status: 200, body: sse(
				`{"type":"response.completed","response":{"id":"resp_2","status":"completed","model":"grok-x","output":[` +
					`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi."}]},` +
					`{"id":"fc_1","type":"function_call","call_id":"call_a","name":"f","arguments":"{\"a\":1}"},` +
					`{"id":"fc_2","type":"function_call","call_id":"call_b","name":"g","arguments":""}]}}`)},
			wantDeltas: []string{"Hi."},
			want: llm.Response{Text: "Hi.", Model: "grok-x", FinishReason: "tool_calls", ResponseID: "resp_2", ToolCalls: []llm.ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"a":1}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{}`)},
			}},
		},
		{
			name: "argument deltas keyed by item id, done is authoritative",
			reply: responsesCanned{status: 200, body: sse(evCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_a","name":"f","arguments":""}}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","call_id":"call_b","name":"g","arguments":""}}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"{\"b\":"}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\":"}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"2}"}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"1}"}`,
				`{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"a\":10}"}`,
				evCompleted)},
			want: llm.Response{Model: "grok-x", FinishReason: "tool_calls", ResponseID: "resp_1", Usage: &llm.Usage{InputTokens: 5, OutputTokens: 2}, ToolCalls: []llm.ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"a":10}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{"b":2}`)},
			}},
		},
		{
			name: "invalid arguments are quoted",
			reply: responsesCanned{status: 200, body: sse(
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_a","name":"f","arguments":"{not json"}}`,
				evCompleted)},
			want: llm.Response{Model: "grok-x", FinishReason: "tool_calls", ResponseID: "resp_1", Usage: &llm.Usage{InputTokens: 5, OutputTokens: 2}, ToolCalls: []llm.ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"_raw":"{not json"}`)},
			}},
		},
		{
			name: "no usage",
			reply: responsesCanned{status: 200, body: sse(
				`{"type":"response.output_text.delta","delta":"x"}`,
				`{"type":"response.completed","response":{"id":"resp_3","status":"completed","model":"grok-x","output":[],"usage":null}}`)},
			wantDeltas: []string{"x"},
			want:       llm.Response{Text: "x", Model: "grok-x", FinishReason: "stop", ResponseID: "resp_3"},
		},
		{
			name:          "stream ends without a terminal event",
			reply:         responsesCanned{status: 200, body: sse(evCreated, `{"type":"response.output_text.delta","delta":"part"}`)},
			wantDeltas:    []string{"part"},
			want:          llm.Response{Text: "part", Model: "grok-test"},
			wantErr:       true,
			wantRetryable: true,
			wantInError:   "without response.completed",
		},
		{
			name:          "JSON instead of a stream",
			reply:         responsesCanned{status: 200, header: http.Header{"Content-Type": {"application/json"}}, body: `{"id":"resp_1","object":"response"}`},
			want:          llm.Response{Model: "grok-test"},
			wantErr:       true,
			wantRetryable: true,
			wantInError:   "not an event stream",
		},
		{
			name: "response.failed",
			reply: responsesCanned{status: 200, body: sse(evCreated, `{"type":"response.output_text.delta","delta":"so"}`,
				`{"type":"response.failed","response":{"id":"resp_1","status":"failed","model":"grok-x","output":[],"error":{"code":"server_error","message":"The model crashed."}}}`)},
			wantDeltas:    []string{"so"},
			want:          llm.Response{Text: "so", Model: "grok-x", ResponseID: "resp_1"},
			wantErr:       true,
			wantRetryable: true,
			wantInError:   "The model crashed.",
		},
		{
			name: "response.failed for the context window",
			reply: responsesCanned{status: 200, body: sse(
				`{"type":"response.failed","response":{"id":"resp_1","status":"failed","model":"grok-x","output":[],"error":{"code":"context_length_exceeded","message":"Too long."}}}`)},
			want:         llm.Response{Model: "grok-x", ResponseID: "resp_1"},
			wantErr:      true,
			wantOverflow: true,
			wantInError:  "Too long.",
		},
		{
			name: "response.incomplete",
			reply: responsesCanned{status: 200, body: sse(`{"type":"response.output_text.delta","delta":"cut"}`,
				`{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","model":"grok-x","output":[],"incomplete_details":{"reason":"content_filter"},"usage":{"input_tokens":1,"output_tokens":1}}}`)},
			wantDeltas:  []string{"cut"},
			want:        llm.Response{Text: "cut", Model: "grok-x", ResponseID: "resp_1", FinishReason: "content_filter", Usage: &llm.Usage{InputTokens: 1, OutputTokens: 1}},
			wantErr:     true,
			wantInError: "content_filter",
		},
		{
			name:          "error event",
			reply:         responsesCanned{status: 200, body: sse(evCreated, `{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":1}`)},
			want:          llm.Response{Model: "grok-test"},
			wantErr:       true,
			wantRetryable: true,
			wantInError:   "Slow down.",
		},
		{
			name:          "error object in the stream",
			reply:         responsesCanned{status: 200, body: "data: {\"error\":{\"message\":\"Overloaded.\",\"code\":\"server_error\"}}\n\n"},
			want:          llm.Response{Model: "grok-test"},
			wantErr:       true,
			wantRetryable: true,
			wantInError:   "Overloaded.",
		},
		{
			name: "xAI error body",
			reply: responsesCanned{status: 400, header: http.Header{"Content-Type": {"application/json"}},
				body: `{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 200000 tokens."}`},
			want:         llm.Response{Model: "grok-test"},
			wantErr:      true,
			wantStatus:   400,
			wantOverflow: true,
			wantInError:  "maximum prompt length is 131072",
		},
		{
			name:           "proxy page with Retry-After date",
			reply:          responsesCanned{status: 502, header: http.Header{"Content-Type": {"text/html"}, "Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, body: "<html><body>Bad Gateway</body></html>"},
			want:           llm.Response{Model: "grok-test"},
			wantErr:        true,
			wantStatus:     502,
			wantRetryable:  true,
			wantRetryAfter: time.Hour,
			wantInError:    "Bad Gateway",
		},
		{
			name:          "retry-after-ms wins",
			reply:         responsesCanned{status: 429, header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"9"}, "Retry-After-Ms": {"250"}}, body: `{"error":{"message":"Slow down.","type":"requests","code":"rate_limit_exceeded"}}`},
			want:          llm.Response{Model: "grok-test"},
			wantErr:       true,
			wantStatus:    429,
			wantRetryable: true,
			// Checked exactly below.
			wantRetryAfter: 250 * time.Millisecond,
			wantInError:    "Slow down.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reply.header == nil {
				tt.reply.header = sseHeader
			}
			m := newResponses("http://responses.invalid/v1", responsesKey, &http.Client{Transport: tt.reply})
			got, deltas, err := responsesStream(t, m, llm.Request{Messages: responsesHello})
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("onText calls mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stream() mismatch (-want +got):\n%s", diff)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Stream() error = %v", err)
				}
				return
			}
			t.Logf("error text: %v", err)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			if e.Status != tt.wantStatus || e.Retryable != tt.wantRetryable || e.ContextOverflow != tt.wantOverflow {
				t.Errorf("error = {Status:%d Retryable:%v ContextOverflow:%v}, want {Status:%d Retryable:%v ContextOverflow:%v}", e.Status, e.Retryable, e.ContextOverflow, tt.wantStatus, tt.wantRetryable, tt.wantOverflow)
			}
			// An HTTP date has a resolution of a second.
			if d := e.RetryAfter - tt.wantRetryAfter; d > 0 || d < -2*time.Second || (tt.wantRetryAfter == 0) != (e.RetryAfter == 0) {
				t.Errorf("RetryAfter = %v, want about %v", e.RetryAfter, tt.wantRetryAfter)
			}
			if !strings.Contains(err.Error(), tt.wantInError) {
				t.Errorf("error text %q does not contain %q", err, tt.wantInError)
			}
		})
	}
}

func TestResponsesKeyNeverInErrors(t *testing.T) {
	// Providers and proxies sometimes echo what they were sent.
	bodies := []responsesCanned{
		{status: 401, header: http.Header{"Content-Type": {"application/json"}}, body: `{"error":{"message":"Incorrect API key provided: ` + responsesKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{status: 400, header: http.Header{"Content-Type": {"application/json"}}, body: `{"code":"bad","error":"key ` + responsesKey + ` is wrong"}`},
		{status: 500, header: http.Header{"Content-Type": {"text/plain"}}, body: "Authorization: Bearer " + responsesKey},
		{status: 200, body: sse(`{"type":"error","code":"x","message":"key ` + responsesKey + `"}`)},
		{status: 200, body: sse(`{"type":"response.failed","response":{"id":"r","error":{"code":"server_error","message":"key ` + responsesKey + `"}}}`)},
		{status: 200, body: "data: {\"error\":\"" + responsesKey + "\"}\n\n"},
		// A stale continuation: the fallback is logged with the error.
		{status: 404, header: http.Header{"Content-Type": {"application/json"}}, body: `{"error":{"message":"Response with id 'resp_1' not found for ` + responsesKey + `","type":"invalid_request_error","code":"not_found"}}`},
	}
	for i, c := range bodies {
		if c.header == nil {
			c.header = http.Header{"Content-Type": {"text/event-stream"}}
		}
		var logs bytes.Buffer
		m := newResponses("http://responses.invalid/v1", responsesKey, &http.Client{Transport: c}).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
		_, err := m.Stream(t.Context(), llm.Request{Messages: responsesHello, Continue: &llm.Continuation{ResponseID: "resp_1", From: 1}}, nil)
		if err == nil {
			t.Fatalf("body %d: Stream() error = nil, want an error", i)
		}
		for _, text := range []string{err.Error(), logs.String()} {
			if strings.Contains(text, responsesKey) || strings.Contains(text, responsesKey[:12]) {
				t.Errorf("body %d: %q shows the API key", i, text)
			}
		}
	}
}

func TestResponsesConcurrent(t *testing.T) {
	srv := llmtest.NewResponses(t, responsesKey)
	m := newResponses(srv.BaseURL(), responsesKey, nil)
	const n = 8
	var wg sync.WaitGroup
	texts := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := m.Stream(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("question ", i)}}}, nil)
			texts[i], errs[i] = resp.Text, err
		})
	}
	wg.Wait()
	for i := range n {
		if want := fmt.Sprint("echo: question ", i); errs[i] != nil || texts[i] != want {
			t.Errorf("call %d: text %q, error %v; want %q", i, texts[i], errs[i], want)
		}
	}
}

func FuzzResponsesStream(f *testing.F) {
	f.Add(sse(evCreated, `{"type":"response.output_text.delta","delta":"hi"}`, evCompleted))
	f.Add(sse(`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c","name":"f"}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\""}`, evCompleted))
	f.Add(sse(`{"type":"response.function_call_arguments.delta","delta":"}"}`, `{"type":"response.function_call_arguments.done","arguments":"[]"}`))
	f.Add(sse(`{"type":"response.failed","response":{"error":{"code":5,"message":null}}}`))
	f.Add(sse(`{"type":"error","code":null}`))
	f.Add(sse(`{"type":"response.incomplete","response":{"incomplete_details":null}}`))
	f.Add("data: {\"error\":[1]}\n\n")
	f.Add("event: x\ndata: [DONE]\n\n")
	f.Add("data: {\"type\":\"response.output_text.delta\",\"delta\":\"\\ud800\"}\n\n")
	f.Add("data: not json\n\n")
	f.Add(": comment\n\nretry: 10\n\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		m := newResponses("http://responses.invalid/v1", responsesKey, &http.Client{Transport: responsesCanned{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}}, body: body}})
		resp, err := m.Stream(t.Context(), llm.Request{Messages: responsesHello}, func(string) {})
		if err != nil {
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v (%T), want *llm.Error", err, err)
			}
			return
		}
		if resp.FinishReason == "" {
			t.Errorf("successful Stream() has no FinishReason")
		}
		for i, tc := range resp.ToolCalls {
			if !json.Valid(tc.Arguments) || !bytes.HasPrefix(bytes.TrimSpace(tc.Arguments), []byte("{")) {
				t.Errorf("ToolCalls[%d].Arguments = %q, want a JSON object", i, tc.Arguments)
			}
		}
	})
}
