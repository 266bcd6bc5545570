package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

const anthKey = "sk-ant-test-0123456789"

// anthPost sends body to srv's path. apiKey "" sends no x-api-key, version
// "" no anthropic-version.
func anthPost(t testing.TB, ctx context.Context, srv *llmtest.AnthropicServer, method, path, apiKey, version, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, srv.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("X-Api-Key", apiKey)
	}
	if version != "" {
		req.Header.Set("Anthropic-Version", version)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// anthSend posts a well-formed request carrying body.
func anthSend(t testing.TB, srv *llmtest.AnthropicServer, body string) *http.Response {
	t.Helper()
	return anthPost(t, t.Context(), srv, http.MethodPost, "/v1/messages", anthKey, "2023-06-01", body)
}

type anthAPIError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func anthDecodeError(t *testing.T, res *http.Response) anthAPIError {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var e anthAPIError
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatalf("decoding error body: %v", err)
	}
	if e.Type != "error" || e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error body = %+v, want type error with an error type and message", e)
	}
	return e
}

// anthBody builds a request body around messages (JSON text) with extra
// top-level fields.
func anthBody(messages, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"model":"claude-test","max_tokens":100,"messages":` + messages + extra + `}`
}

const anthValid = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`

// anthToolTurn is a valid conversation with one tool round trip.
const anthToolTurn = `[
	{"role":"user","content":"weather?"},
	{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Zürich"}},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
	{"role":"user","content":[
		{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"},
		{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no "},{"type":"text","text":"zone"}]},
		{"type":"text","text":"and?"}
	]}
]`

func TestAnthropicServerRejects(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		apiKey      string
		version     string
		body        string
		wantStatus  int
		wantType    string
		wantMessage string // in the message
		wantRecord  bool
	}{
		{name: "unknown path", path: "/v1/chat/completions", body: anthValid, wantStatus: 404, wantType: "not_found_error", wantMessage: "Not Found"},
		{name: "wrong method", method: http.MethodGet, body: "", wantStatus: 405, wantType: "invalid_request_error", wantMessage: "Method Not Allowed"},
		{name: "no key", apiKey: "-", body: anthValid, wantStatus: 401, wantType: "authentication_error", wantMessage: "x-api-key header is required", wantRecord: true},
		{name: "wrong key", apiKey: "sk-ant-wrong", body: anthValid, wantStatus: 401, wantType: "authentication_error", wantMessage: "invalid x-api-key", wantRecord: true},
		{name: "no version", version: "-", body: anthValid, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "anthropic-version: header is required", wantRecord: true},
		{name: "unknown version", version: "2099-01-01", body: anthValid, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "invalid version", wantRecord: true},
		{name: "not JSON", body: "{", wantStatus: 400, wantType: "invalid_request_error", wantMessage: "error parsing the body", wantRecord: true},
		{name: "no model", body: `{"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "model: Field required", wantRecord: true},
		{name: "empty model", body: `{"model":"","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "model: String should have at least 1 character", wantRecord: true},
		{name: "no max_tokens", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "max_tokens: Field required", wantRecord: true},
		{name: "zero max_tokens", body: `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "max_tokens: Input should be greater than or equal to 1", wantRecord: true},
		{name: "no messages", body: `{"model":"m","max_tokens":1}`, wantStatus: 400, wantType: "invalid_request_error", wantMessage: "messages: Field required", wantRecord: true},
		{name: "empty messages", body: anthBody(`[]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "at least one message is required", wantRecord: true},
		{name: "first is assistant", body: anthBody(`[{"role":"assistant","content":"a"},{"role":"user","content":"u"}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: `first message must use the "user" role`, wantRecord: true},
		{name: "two user messages", body: anthBody(`[{"role":"user","content":"a"},{"role":"user","content":"b"}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: `roles must alternate between "user" and "assistant", but found multiple "user" roles in a row`, wantRecord: true},
		{name: "system role in messages", body: anthBody(`[{"role":"user","content":"a"},{"role":"system","content":"b"}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "messages.1.role: Input should be 'user' or 'assistant'", wantRecord: true},
		{name: "empty content", body: anthBody(`[{"role":"user","content":""}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "all messages must have non-empty content", wantRecord: true},
		{name: "no content", body: anthBody(`[{"role":"user"}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "messages.0.content: Field required", wantRecord: true},
		{name: "content a number", body: anthBody(`[{"role":"user","content":5}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "messages.0.content: Input should be a valid list", wantRecord: true},
		{name: "blank text block", body: anthBody(`[{"role":"user","content":[{"type":"text","text":" \n"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "text content blocks must contain non-whitespace text", wantRecord: true},
		{name: "unknown block", body: anthBody(`[{"role":"user","content":[{"type":"video"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "Input tag 'video'", wantRecord: true},
		{name: "tool_use from the user", body: anthBody(`[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "`tool_use` blocks can only be in `assistant` messages", wantRecord: true},
		{name: "tool_use input not an object", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"x"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "tool_use.input: Input should be a valid dictionary", wantRecord: true},
		{name: "tool_use without id", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "tool_use.id: Field required", wantRecord: true},
		{name: "tool_result from the assistant", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "`tool_result` blocks can only be in `user` messages", wantRecord: true},
		{name: "tool_result without a tool_use", body: anthBody(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x", wantRecord: true},
		{name: "unanswered tool_use", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}},{"type":"tool_use","id":"toolu_2","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2", wantRecord: true},
		{name: "tool_result after text", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1"}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "`tool_result` blocks must come before any other content", wantRecord: true},
		{name: "duplicate tool_use ids", body: anthBody(`[{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}]`, ""), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "`tool_use` ids must be unique", wantRecord: true},
		{name: "system not text", body: anthBody(`[{"role":"user","content":"u"}]`, `"system":[{"type":"image"}]`), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "system: Input should be a valid string", wantRecord: true},
		{name: "bad tool name", body: anthBody(`[{"role":"user","content":"u"}]`, `"tools":[{"name":"get weather","input_schema":{"type":"object"}}]`), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "tools.0.custom.name: String should match pattern", wantRecord: true},
		{name: "duplicate tool names", body: anthBody(`[{"role":"user","content":"u"}]`, `"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]`), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "Tool names must be unique", wantRecord: true},
		{name: "tool without schema", body: anthBody(`[{"role":"user","content":"u"}]`, `"tools":[{"name":"f"}]`), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "tools.0.custom.input_schema: Field required", wantRecord: true},
		{name: "tool schema not an object", body: anthBody(`[{"role":"user","content":"u"}]`, `"tools":[{"name":"f","input_schema":{"type":"string"}}]`), wantStatus: 400, wantType: "invalid_request_error", wantMessage: "tools.0.custom.input_schema.type: Input should be 'object'", wantRecord: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			method, path, apiKey, version := tt.method, tt.path, tt.apiKey, tt.version
			method = anthOr(method, http.MethodPost)
			path = anthOr(path, "/v1/messages")
			apiKey = strings.TrimPrefix(anthOr(apiKey, anthKey), "-")
			version = strings.TrimPrefix(anthOr(version, "2023-06-01"), "-")
			res := anthPost(t, t.Context(), srv, method, path, apiKey, version, tt.body)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			e := anthDecodeError(t, res)
			if e.Error.Type != tt.wantType || !strings.Contains(e.Error.Message, tt.wantMessage) {
				t.Errorf("error = %s %q, want %s containing %q", e.Error.Type, e.Error.Message, tt.wantType, tt.wantMessage)
			}
			if tt.wantRecord && (e.RequestID == "" || res.Header.Get("Request-Id") != e.RequestID) {
				t.Errorf("request_id = %q, request-id header = %q; want the same, non-empty", e.RequestID, res.Header.Get("Request-Id"))
			}
			reqs := srv.Requests()
			if got := len(reqs) == 1; got != tt.wantRecord {
				t.Errorf("recorded %d requests, want recorded: %v", len(reqs), tt.wantRecord)
			}
			for _, r := range reqs {
				if r.Header.Get("X-Api-Key") != "" {
					t.Errorf("recorded x-api-key %q, want it removed", r.Header.Get("X-Api-Key"))
				}
			}
		})
	}
}

func anthOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestAnthropicServerNoKeyRequired(t *testing.T) {
	srv := llmtest.NewAnthropic(t, "")
	res := anthPost(t, t.Context(), srv, http.MethodPost, "/v1/messages", "", "2023-06-01", anthValid)
	if res.StatusCode != http.StatusOK {
		t.Errorf("status = %d without a key on a keyless server, want 200", res.StatusCode)
	}
}

func TestAnthropicServerErrorReplies(t *testing.T) {
	tests := []struct {
		name           string
		reply          llmtest.Reply
		wantRetryAfter string
		wantType       string
		wantMessage    string
	}{
		{"rate limited", llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, "2", "rate_limit_error", "rate limit"},
		{"rate limit code", llmtest.Reply{Status: 429, ErrorCode: "rate_limit_exceeded"}, "", "rate_limit_error", "rate limit"},
		{"overloaded", llmtest.Reply{Status: 529}, "", "overloaded_error", "Overloaded"},
		{"server error", llmtest.Reply{Status: 500}, "", "api_error", "Internal server error"},
		{"gateway timeout", llmtest.Reply{Status: 504}, "", "timeout_error", "timed out"},
		{"context overflow", llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, "", "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"},
		{"bad request", llmtest.Reply{Status: 400}, "", "invalid_request_error", "Invalid request"},
		{"unauthorized", llmtest.Reply{Status: 401}, "", "authentication_error", "invalid x-api-key"},
		{"billing", llmtest.Reply{Status: 402}, "", "billing_error", "credit balance"},
		{"forbidden", llmtest.Reply{Status: 403}, "", "permission_error", "permission"},
		{"not found", llmtest.Reply{Status: 404}, "", "not_found_error", "model: claude-test"},
		{"too large", llmtest.Reply{Status: 413}, "", "request_too_large", "maximum allowed number of bytes"},
		{"other client error", llmtest.Reply{Status: 418}, "", "invalid_request_error", "i'm a teapot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			srv.Enqueue(tt.reply)
			res := anthSend(t, srv, anthValid)
			if res.StatusCode != tt.reply.Status {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.reply.Status)
			}
			if got := res.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("retry-after = %q, want %q", got, tt.wantRetryAfter)
			}
			e := anthDecodeError(t, res)
			if e.Error.Type != tt.wantType || !strings.Contains(e.Error.Message, tt.wantMessage) {
				t.Errorf("error = %s %q, want %s containing %q", e.Error.Type, e.Error.Message, tt.wantType, tt.wantMessage)
			}
		})
	}
}

// anthSSEEvent is one server-sent event as read off the wire.
type anthSSEEvent struct {
	Name string
	Data json.RawMessage
}

// anthReadSSE reads an event stream strictly: every event is an "event: "
// line, a "data: " line whose JSON type matches the event name, and a
// blank line. err is the read error that ended the stream, if any.
func anthReadSSE(t *testing.T, r io.Reader) (events []anthSSEEvent, err error) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			t.Fatalf("line %q, want an event line", sc.Text())
		}
		if !sc.Scan() {
			break
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			t.Fatalf("line %q after event %s, want a data line", sc.Text(), name)
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("data line %q not followed by a blank line", data)
		}
		var typed struct{ Type string }
		if err := json.Unmarshal([]byte(data), &typed); err != nil || typed.Type != name {
			t.Fatalf("event %s carries %s, want JSON of that type", name, data)
		}
		events = append(events, anthSSEEvent{Name: name, Data: json.RawMessage(data)})
	}
	return events, sc.Err()
}

// anthStreamSummary is what a client makes of a stream.
type anthStreamSummary struct {
	Events     []string // event names, with the block type for content_block_start
	Text       string
	Fragments  map[int][]string // input_json_delta fragments by block index
	Tools      []string         // "id name" per tool_use block
	StopReason string
	Input      int64
	Output     int64
}

func anthSummarize(t *testing.T, events []anthSSEEvent) anthStreamSummary {
	t.Helper()
	s := anthStreamSummary{Fragments: map[int][]string{}}
	for _, ev := range events {
		var e struct {
			Index   int `json:"index"`
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
			Delta        struct {
				Type        string
				Text        string
				PartialJSON *string `json:"partial_json"`
				StopReason  string  `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event %s: %v", ev.Name, err)
		}
		name := ev.Name
		switch ev.Name {
		case "message_start":
			s.Input = e.Message.Usage.InputTokens
		case "content_block_start":
			name += ":" + e.ContentBlock.Type
			if e.ContentBlock.Type == "tool_use" {
				s.Tools = append(s.Tools, e.ContentBlock.ID+" "+e.ContentBlock.Name)
			}
		case "content_block_delta":
			name += ":" + e.Delta.Type
			switch e.Delta.Type {
			case "text_delta":
				s.Text += e.Delta.Text
			case "input_json_delta":
				if e.Delta.PartialJSON == nil {
					t.Errorf("input_json_delta without partial_json: %s", ev.Data)
				}
				s.Fragments[e.Index] = append(s.Fragments[e.Index], *e.Delta.PartialJSON)
			}
		case "message_delta":
			s.StopReason = e.Delta.StopReason
			s.Output = e.Usage.OutputTokens
		}
		s.Events = append(s.Events, name)
	}
	return s
}

func TestAnthropicServerStream(t *testing.T) {
	weather := llmtest.ToolCall{ID: "toolu_w", Name: "get_weather", Arguments: `{"city":"Zürich ✓ \"quoted\""}`}
	tests := []struct {
		name  string
		reply *llmtest.Reply // nil: the default echo
		want  anthStreamSummary
	}{
		{
			name:  "text",
			reply: &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}},
			want: anthStreamSummary{
				Events:     []string{"message_start", "ping", "content_block_start:text", "content_block_delta:text_delta", "content_block_delta:text_delta", "content_block_stop", "message_delta", "message_stop"},
				Text:       "Hello",
				Fragments:  map[int][]string{},
				StopReason: "end_turn", Input: 1, Output: 2,
			},
		},
		{
			name: "default echo",
			want: anthStreamSummary{
				Events:     []string{"message_start", "ping", "content_block_start:text", "content_block_delta:text_delta", "content_block_delta:text_delta", "content_block_stop", "message_delta", "message_stop"},
				Text:       "echo: hi",
				Fragments:  map[int][]string{},
				StopReason: "end_turn", Input: 1, Output: 2,
			},
		},
		{
			name:  "length",
			reply: &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}}, FinishReason: "length"},
			want: anthStreamSummary{
				Events:     []string{"message_start", "ping", "content_block_start:text", "content_block_delta:text_delta", "content_block_stop", "message_delta", "message_stop"},
				Text:       "a",
				Fragments:  map[int][]string{},
				StopReason: "max_tokens", Input: 1, Output: 1,
			},
		},
		{
			name:  "text and fragmented tool calls",
			reply: &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "ok"}}, ToolCalls: []llmtest.ToolCall{weather, {Name: "now"}}},
			want: anthStreamSummary{
				Events: []string{"message_start", "ping",
					"content_block_start:text", "content_block_delta:text_delta", "content_block_stop",
					"content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_delta:input_json_delta", "content_block_delta:input_json_delta", "content_block_delta:input_json_delta", "content_block_stop",
					"content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop",
					"message_delta", "message_stop"},
				Text:       "ok",
				Fragments:  map[int][]string{1: {"", `{"city":"Zü`, `rich ✓ \"`, `quoted\""}`}, 2: {""}},
				Tools:      []string{"toolu_w get_weather", "toolu_llmtest000003 now"},
				StopReason: "tool_use", Input: 1, Output: 1,
			},
		},
		{
			name:  "whole tool calls",
			reply: &llmtest.Reply{ToolCalls: []llmtest.ToolCall{weather}, WholeToolCalls: true},
			want: anthStreamSummary{
				Events:     []string{"message_start", "ping", "content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop", "message_delta", "message_stop"},
				Fragments:  map[int][]string{0: {weather.Arguments}},
				Tools:      []string{"toolu_w get_weather"},
				StopReason: "tool_use", Input: 1,
			},
		},
		{
			name:  "empty",
			reply: &llmtest.Reply{},
			want: anthStreamSummary{
				Events:     []string{"message_start", "ping", "message_delta", "message_stop"},
				Fragments:  map[int][]string{},
				StopReason: "end_turn", Input: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			res := anthSend(t, srv, anthBody(`[{"role":"user","content":"hi"}]`, `"stream":true`))
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, Content-Type %q; want 200 and an event stream", res.StatusCode, res.Header.Get("Content-Type"))
			}
			events, err := anthReadSSE(t, res.Body)
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, anthSummarize(t, events)); diff != "" {
				t.Errorf("stream mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicServerCut(t *testing.T) {
	tests := []struct {
		name      string
		reply     llmtest.Reply
		wantText  string
		wantTools int
	}{
		{"mid-text", llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}}, CutAfter: 2}, "ab", 0},
		{"after all text and the tool calls", llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}}, CutAfter: 5, ToolCalls: []llmtest.ToolCall{{Name: "f"}}}, "a", 1},
		{"exactly after the text, then the tool calls", llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}}, CutAfter: 1, ToolCalls: []llmtest.ToolCall{{Name: "f"}, {Name: "g"}}}, "a", 2},
		{"tool calls only", llmtest.Reply{CutAfter: 1, ToolCalls: []llmtest.ToolCall{{Name: "f"}}}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			srv.Enqueue(tt.reply)
			res := anthSend(t, srv, anthBody(`[{"role":"user","content":"hi"}]`, `"stream":true`))
			events, err := anthReadSSE(t, res.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("stream ended with %v, want io.ErrUnexpectedEOF (a dropped connection)", err)
			}
			s := anthSummarize(t, events)
			if s.Text != tt.wantText || len(s.Tools) != tt.wantTools || s.StopReason != "" {
				t.Errorf("before the cut: text %q, %d tools, stop_reason %q; want %q, %d, none", s.Text, len(s.Tools), s.StopReason, tt.wantText, tt.wantTools)
			}
		})
	}
	t.Run("not streaming", func(t *testing.T) {
		srv := llmtest.NewAnthropic(t, anthKey)
		srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}}, CutAfter: 1})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.BaseURL()+"/v1/messages", strings.NewReader(anthValid))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", anthKey)
		req.Header.Set("Anthropic-Version", "2023-06-01")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			t.Errorf("got a reply with status %d, want the connection dropped", res.StatusCode)
		}
	})
}

// TestAnthropicServerHang checks a hanging reply sends headers, then
// nothing until the client goes away.
func TestAnthropicServerHang(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	srv.Enqueue(llmtest.Reply{Hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	res := anthPost(t, ctx, srv, http.MethodPost, "/v1/messages", anthKey, "2023-06-01", anthBody(`[{"role":"user","content":"hi"}]`, `"stream":true`))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", res.StatusCode)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(res.Body)
		read <- err
	}()
	cancel()
	select {
	case err := <-read:
		if err == nil {
			t.Error("reading a hanging reply ended cleanly, want an error after the cancel")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a hanging reply did not end after the client went away")
	}
}

// TestAnthropicServerDelay checks a chunk's Delay is honoured.
func TestAnthropicServerDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	srv := llmtest.NewAnthropic(t, anthKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b", Delay: delay}}})
	start := time.Now()
	res := anthSend(t, srv, anthBody(`[{"role":"user","content":"hi"}]`, `"stream":true`))
	if _, err := io.ReadAll(res.Body); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("reply took %v, want at least the %v delay", took, delay)
	}
}

func TestAnthropicServerNonStreaming(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}, ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":1}`}}})
	res := anthSend(t, srv, anthValid)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", res.StatusCode)
	}
	var got, want any
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(`{
		"id": "msg_llmtest000002", "type": "message", "role": "assistant", "model": "claude-test",
		"content": [{"type": "text", "text": "Hello"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
		"stop_reason": "tool_use", "stop_sequence": null,
		"usage": {"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 2}
	}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message mismatch (-want +got):\n%s", diff)
	}
}

func TestAnthropicServerRecords(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      llmtest.RecordedRequest
		wantReply string // the default echo's text
	}{
		{
			name: "system string and tool round trip",
			body: anthBody(anthToolTurn, `"system":"Be brief.","stream":true,"tools":[{"name":"get_weather","description":"Weather.","input_schema":{"type": "object", "properties": {"city": {"type": "string"}}}},{"type":"web_search_20250305","name":"web_search"}]`),
			want: llmtest.RecordedRequest{
				Model:  "claude-test",
				Stream: true,
				Messages: []llmtest.Message{
					{Role: "system", Content: "Be brief."},
					{Role: "user", Content: "weather?"},
					{Role: "assistant", Content: "Checking.", ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Zürich"}`}, {ID: "toolu_2", Name: "get_time", Arguments: `{}`}}},
					{Role: "tool", ToolCallID: "toolu_1", Content: "18C"},
					{Role: "tool", ToolCallID: "toolu_2", Content: "no zone", IsError: true},
					{Role: "user", Content: "and?"},
				},
				Tools: []llmtest.Tool{{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
			},
			wantReply: "echo: and?",
		},
		{
			name: "system blocks and text blocks",
			body: anthBody(`[{"role":"user","content":[{"type":"text","text":"a "},{"type":"image","source":{}},{"type":"text","text":"b"}]}]`, `"system":[{"type":"text","text":"one "},{"type":"text","text":"two"}]`),
			want: llmtest.RecordedRequest{
				Model: "claude-test",
				Messages: []llmtest.Message{
					{Role: "system", Content: "one two"},
					{Role: "user", Content: "a b"},
				},
			},
			wantReply: "echo: a b",
		},
		{
			name: "invalid requests are recorded as far as they decode",
			body: anthBody(`[{"role":"user","content":"x"},{"role":"user","content":"y"}]`, ""),
			want: llmtest.RecordedRequest{
				Model:    "claude-test",
				Messages: []llmtest.Message{{Role: "user", Content: "x"}, {Role: "user", Content: "y"}},
			},
		},
		{
			name: "undecodable body",
			body: `{"model":`,
			want: llmtest.RecordedRequest{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, anthKey)
			res := anthSend(t, srv, tt.body)
			reply, _ := io.ReadAll(res.Body)
			if tt.wantReply != "" {
				if res.StatusCode != http.StatusOK {
					t.Fatalf("status = %d (%s), want 200", res.StatusCode, reply)
				}
				if !strings.Contains(string(reply), tt.wantReply[len(tt.wantReply)-2:]) {
					t.Errorf("reply %s, want the echo %q", reply, tt.wantReply)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("recorded %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Header.Get("Anthropic-Version") != "2023-06-01" || got.Header.Get("X-Api-Key") != "" {
				t.Errorf("recorded headers %v, want anthropic-version kept and x-api-key removed", got.Header)
			}
			got.Header = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("recorded request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicServerQueueAndCopies(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	srv.Enqueue(llmtest.Reply{Status: 529}, llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "second"}}})
	if res := anthSend(t, srv, anthValid); res.StatusCode != 529 {
		t.Errorf("first reply status = %d, want 529", res.StatusCode)
	}
	res := anthSend(t, srv, anthValid)
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), `"text":"second"`) {
		t.Errorf("second reply = %s, want the second scripted reply", body)
	}
	res = anthSend(t, srv, anthValid)
	body, _ = io.ReadAll(res.Body)
	if !strings.Contains(string(body), `"text":"echo: hi"`) {
		t.Errorf("third reply = %s, want the default echo", body)
	}

	// Requests returns copies: changing them does not change the record.
	reqs := srv.Requests()
	reqs[0].Messages[0].Content = "changed"
	reqs[0].Header.Set("X-Changed", "1")
	if again := srv.Requests(); again[0].Messages[0].Content != "hi" || again[0].Header.Get("X-Changed") != "" {
		t.Errorf("Requests() shares memory with the record: %+v", again[0])
	}
}

// TestAnthropicServerWithSDK drives the stand-in with the official SDK:
// its accumulator checks block indexes and event order strictly.
func TestAnthropicServerWithSDK(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	calls := []llmtest.ToolCall{{ID: "toolu_a", Name: "get_weather", Arguments: `{"city":"Zürich"}`}, {Name: "get_time", Arguments: `{"zone":"UTC"}`}}
	srv.Enqueue(
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Let me "}, {Text: "check."}}, ToolCalls: calls},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "whole"}}, ToolCalls: calls[:1]},
		llmtest.Reply{Status: 429, RetryAfter: time.Second},
	)
	client := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(srv.BaseURL()),
		option.WithAPIKey(anthKey),
		option.WithMaxRetries(0),
	)
	params := anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))},
	}

	stream := client.Messages.NewStreaming(t.Context(), params)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	stream.Close()
	type block struct{ Type, Text, ID, Name, Input string }
	var got []block
	for _, b := range msg.Content {
		got = append(got, block{b.Type, b.Text, b.ID, b.Name, string(b.Input)})
	}
	want := []block{
		{Type: "text", Text: "Let me check."},
		{Type: "tool_use", ID: "toolu_a", Name: "get_weather", Input: `{"city":"Zürich"}`},
		{Type: "tool_use", ID: "toolu_llmtest000003", Name: "get_time", Input: `{"zone":"UTC"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accumulated content mismatch (-want +got):\n%s", diff)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens != 1 || msg.Usage.OutputTokens != 2 || msg.Model != "claude-test" {
		t.Errorf("message stop_reason=%q usage=%d/%d model=%q, want tool_use 1/2 claude-test", msg.StopReason, msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Model)
	}

	whole, err := client.Messages.New(t.Context(), params)
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if len(whole.Content) != 2 || whole.Content[0].Text != "whole" || string(whole.Content[1].Input) != `{"city":"Zürich"}` || whole.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("Messages.New = %+v, want the text and the tool call", whole.Content)
	}

	_, err = client.Messages.New(t.Context(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Type() != "rate_limit_error" || apiErr.RequestID == "" {
		t.Errorf("Messages.New error = %v, want an *anthropic.Error 429 rate_limit_error with a request id", err)
	}
}

func TestAnthropicServerConcurrent(t *testing.T) {
	srv := llmtest.NewAnthropic(t, anthKey)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: fmt.Sprint(i)}}})
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.BaseURL()+"/v1/messages", strings.NewReader(anthBody(`[{"role":"user","content":"hi"}]`, `"stream":true`)))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("X-Api-Key", anthKey)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			if _, err := io.ReadAll(res.Body); err != nil {
				t.Error(err)
			}
			_ = srv.Requests()
		})
	}
	wg.Wait()
	if got := len(srv.Requests()); got != n {
		t.Errorf("recorded %d requests, want %d", got, n)
	}
}

// FuzzAnthropicServerRequest posts arbitrary bodies: the stand-in must
// answer every one with 200 or a 400 JSON error, never fail or hang.
func FuzzAnthropicServerRequest(f *testing.F) {
	for _, seed := range []string{
		anthValid,
		anthBody(anthToolTurn, `"stream":true,"system":"s"`),
		anthBody(anthToolTurn, `"system":[{"type":"text","text":"s"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`),
		anthBody(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]`, ""),
		anthBody(`[{"role":"assistant","content":[]}]`, ""),
		`{"model":"m","max_tokens":-1,"messages":null}`,
		`{"model":null}`,
		`[]`,
		`null`,
		"",
	} {
		f.Add(seed)
	}
	srv := llmtest.NewAnthropic(f, "")
	f.Fuzz(func(t *testing.T, body string) {
		req, err := http.NewRequest(http.MethodPost, srv.BaseURL()+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Anthropic-Version", "2023-06-01")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer res.Body.Close()
		switch res.StatusCode {
		case http.StatusOK:
			if _, err := io.ReadAll(res.Body); err != nil {
				t.Errorf("reading reply: %v", err)
			}
		case http.StatusBadRequest:
			var e anthAPIError
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil || e.Type != "error" || e.Error.Message == "" {
				t.Errorf("400 body: %+v, %v; want an Anthropic error object", e, err)
			}
		default:
			t.Errorf("status = %d for %q, want 200 or 400", res.StatusCode, body)
		}
	})
}
