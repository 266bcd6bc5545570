package llmtest_test

import (
	"bufio"
	"bytes"
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

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

const rsKey = "xai-test-responses-0123456789"

// rsDo sends body to srv's path with the given bearer key ("" for none).
func rsDo(t testing.TB, ctx context.Context, srv *llmtest.ResponsesServer, method, path, bearer, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(srv.BaseURL(), "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func rsPost(t testing.TB, srv *llmtest.ResponsesServer, body string) *http.Response {
	t.Helper()
	return rsDo(t, t.Context(), srv, http.MethodPost, "/v1/responses", rsKey, body)
}

// rsError is the JSON error body.
type rsError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func rsDecodeError(t *testing.T, res *http.Response) rsError {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body struct {
		Error *rsError `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Error == nil {
		t.Fatalf("decoding the error body: %v (error object %v)", err, body.Error)
	}
	return *body.Error
}

func rsDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

const rsValid = `{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}]}`

func TestResponsesServerRejects(t *testing.T) {
	tests := []struct {
		name       string
		method     string // "" means POST
		path       string // "" means /v1/responses
		bearer     string
		body       string
		wantStatus int
		wantParam  string
		wantCode   string
		wantIn     string // part of the message
	}{
		{name: "no key", body: rsValid, wantStatus: 401, wantIn: "didn't provide an API key"},
		{name: "wrong key", bearer: "sk-wrong", body: rsValid, wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "not JSON", bearer: rsKey, body: "{", wantStatus: 400, wantIn: "parse the JSON body"},
		{name: "no model", bearer: rsKey, body: `{"input":"hi"}`, wantStatus: 400, wantParam: "model"},
		{name: "empty model", bearer: rsKey, body: `{"model":"","input":"hi"}`, wantStatus: 400, wantParam: "model"},
		{name: "instructions", bearer: rsKey, body: `{"model":"m","instructions":"be brief","input":"hi"}`, wantStatus: 400, wantParam: "instructions", wantIn: "not supported"},
		{name: "no input", bearer: rsKey, body: `{"model":"m"}`, wantStatus: 400, wantParam: "input"},
		{name: "empty input", bearer: rsKey, body: `{"model":"m","input":[]}`, wantStatus: 400, wantParam: "input"},
		{name: "input of the wrong type", bearer: rsKey, body: `{"model":"m","input":5}`, wantStatus: 400, wantParam: "input"},
		{name: "unknown role", bearer: rsKey, body: `{"model":"m","input":[{"role":"robot","content":"x"}]}`, wantStatus: 400, wantParam: "input[0].role"},
		{name: "message without role", bearer: rsKey, body: `{"model":"m","input":[{"type":"message","content":"x"}]}`, wantStatus: 400, wantParam: "input[0].role"},
		{name: "message without content", bearer: rsKey, body: `{"model":"m","input":[{"role":"user"}]}`, wantStatus: 400, wantParam: "input[0].content"},
		{name: "content of the wrong type", bearer: rsKey, body: `{"model":"m","input":[{"role":"user","content":{"a":1}}]}`, wantStatus: 400, wantParam: "input[0].content"},
		{name: "item without type or role", bearer: rsKey, body: `{"model":"m","input":[{"content":"x"}]}`, wantStatus: 400, wantParam: "input[0].type"},
		{name: "unknown item type", bearer: rsKey, body: `{"model":"m","input":[{"type":"telepathy"}]}`, wantStatus: 400, wantParam: "input[0].type"},
		{name: "function call without call_id", bearer: rsKey, body: `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, wantStatus: 400, wantParam: "input[0].call_id"},
		{name: "function call without name", bearer: rsKey, body: `{"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`, wantStatus: 400, wantParam: "input[0].name"},
		{name: "function call without arguments", bearer: rsKey, body: `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`, wantStatus: 400, wantParam: "input[0].arguments"},
		{name: "output without call_id", bearer: rsKey, body: `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, wantStatus: 400, wantParam: "input[0].call_id"},
		{name: "output without output", bearer: rsKey, body: `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, wantStatus: 400, wantParam: "input[0].output"},
		{name: "output without its call", bearer: rsKey, body: `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c","output":"x"}]}`, wantStatus: 400, wantParam: "input", wantIn: "No tool call found for function call output with call_id c"},
		{name: "chat completions tool form", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`, wantStatus: 400, wantParam: "tools[0].name"},
		{name: "bad tool name", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"a b"}]}`, wantStatus: 400, wantParam: "tools[0].name"},
		{name: "duplicate tool", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, wantStatus: 400, wantParam: "tools[1].name"},
		{name: "parameters not an object schema", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"array"}}]}`, wantStatus: 400, wantParam: "tools[0].parameters"},
		{name: "unknown tool type", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"mind_reading"}]}`, wantStatus: 400, wantParam: "tools[0].type"},
		{name: "mcp without a server", bearer: rsKey, body: `{"model":"m","input":"hi","tools":[{"type":"mcp"}]}`, wantStatus: 400, wantParam: "tools[0]"},
		{name: "unknown previous response", bearer: rsKey, body: `{"model":"m","input":"hi","previous_response_id":"resp_nope"}`, wantStatus: 404, wantParam: "previous_response_id", wantCode: "not_found", wantIn: "Response with id 'resp_nope' not found"},
		{name: "empty previous response", bearer: rsKey, body: `{"model":"m","input":"hi","previous_response_id":""}`, wantStatus: 400, wantParam: "previous_response_id"},
		{name: "unknown path", path: "/v1/chat/completions", bearer: rsKey, body: rsValid, wantStatus: 404, wantIn: "Invalid URL"},
		{name: "wrong method", method: http.MethodPut, bearer: rsKey, body: rsValid, wantStatus: 404, wantIn: "Invalid URL"},
		{name: "get unknown response", method: http.MethodGet, path: "/v1/responses/resp_nope", bearer: rsKey, wantStatus: 404, wantCode: "not_found"},
		{name: "delete unknown response", method: http.MethodDelete, path: "/v1/responses/resp_nope", bearer: rsKey, wantStatus: 404, wantCode: "not_found"},
		{name: "get without key", method: http.MethodGet, path: "/v1/responses/resp_nope", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, rsKey)
			method, path := tt.method, tt.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/responses"
			}
			res := rsDo(t, t.Context(), srv, method, path, tt.bearer, tt.body)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			e := rsDecodeError(t, res)
			if rsDeref(e.Param) != tt.wantParam || rsDeref(e.Code) != tt.wantCode || !strings.Contains(e.Message, tt.wantIn) || e.Type == "" {
				t.Errorf("error = {message:%q type:%q param:%q code:%q}, want param %q, code %q, message containing %q", e.Message, e.Type, rsDeref(e.Param), rsDeref(e.Code), tt.wantParam, tt.wantCode, tt.wantIn)
			}
		})
	}
}

// rsEvent is one server-sent event: its event line and its data.
type rsEvent struct {
	Name string
	Data json.RawMessage
}

// rsReadSSE reads events until the body ends.
func rsReadSSE(t *testing.T, r io.Reader) (events []rsEvent, err error) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var cur rsEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != nil {
				events = append(events, cur)
			}
			cur = rsEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if cur.Data != nil {
				t.Errorf("event %q has more than one data line", cur.Name)
			}
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	return events, sc.Err()
}

// rsCheckEvents checks the framing shared by every stream: each event's
// name is its data's type, sequence numbers count up from 0, and the SDK's
// own accumulator accepts the events. It returns the types in order.
func rsCheckEvents(t *testing.T, events []rsEvent) []string {
	t.Helper()
	var acc responses.ResponseAccumulator
	var types []string
	for i, ev := range events {
		var head struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal(ev.Data, &head); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if head.Type != ev.Name {
			t.Errorf("event %d: event line %q, data type %q", i, ev.Name, head.Type)
		}
		if head.Seq == nil || *head.Seq != i {
			t.Errorf("event %d (%s): sequence_number = %v, want %d", i, head.Type, head.Seq, i)
		}
		var sdk responses.ResponsesServerEventUnion
		if err := json.Unmarshal(ev.Data, &sdk); err != nil {
			t.Errorf("event %d (%s): the SDK cannot decode it: %v", i, head.Type, err)
		}
		if err := acc.AddEvent(sdk); err != nil {
			t.Errorf("event %d (%s): the SDK's accumulator refuses it: %v", i, head.Type, err)
		}
		types = append(types, head.Type)
	}
	if _, err := acc.ReconstructedResponse(); err != nil {
		t.Errorf("the SDK's accumulator reconstructs no response: %v", err)
	}
	return types
}

// rsSummary is what a stream said, gathered from its deltas.
type rsSummary struct {
	Text      string
	Calls     []llmtest.ToolCall
	ArgDeltas []int // argument deltas per call
	Terminal  string
	Response  rsResponse
}

type rsResponse struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Status             string  `json:"status"`
	Model              string  `json:"model"`
	Store              bool    `json:"store"`
	PreviousResponseID *string `json:"previous_response_id"`
	IncompleteDetails  *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

func rsSummarize(t *testing.T, events []rsEvent) rsSummary {
	t.Helper()
	var s rsSummary
	byItem := make(map[string]int)
	for _, ev := range events {
		var e struct {
			Type      string          `json:"type"`
			ItemID    string          `json:"item_id"`
			Delta     string          `json:"delta"`
			Arguments string          `json:"arguments"`
			Item      json.RawMessage `json:"item"`
			Response  json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("decoding %s: %v", ev.Data, err)
		}
		switch e.Type {
		case "response.output_text.delta":
			s.Text += e.Delta
		case "response.output_item.added":
			var it struct {
				ID, Type, CallID, Name string
			}
			json.Unmarshal(e.Item, &it)
			var item struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Name   string `json:"name"`
			}
			json.Unmarshal(e.Item, &item)
			if item.Type == "function_call" {
				byItem[item.ID] = len(s.Calls)
				s.Calls = append(s.Calls, llmtest.ToolCall{ID: item.CallID, Name: item.Name})
				s.ArgDeltas = append(s.ArgDeltas, 0)
			}
		case "response.function_call_arguments.delta":
			i, ok := byItem[e.ItemID]
			if !ok {
				t.Fatalf("arguments delta for unknown item %q", e.ItemID)
			}
			s.Calls[i].Arguments += e.Delta
			s.ArgDeltas[i]++
		case "response.function_call_arguments.done":
			if i := byItem[e.ItemID]; s.Calls[i].Arguments != e.Arguments {
				t.Errorf("arguments done = %q, deltas joined = %q", e.Arguments, s.Calls[i].Arguments)
			}
		case "response.completed", "response.incomplete", "response.failed":
			s.Terminal = e.Type
			if err := json.Unmarshal(e.Response, &s.Response); err != nil {
				t.Fatalf("decoding the response: %v", err)
			}
		}
	}
	return s
}

func TestResponsesServerStream(t *testing.T) {
	long := `{"city":"Zürich","units":"C","note":"ünïcödé ✓ and \"quotes\""}`
	textEvents := []string{
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
	}
	tests := []struct {
		name           string
		reply          llmtest.Reply
		wantText       string
		wantCalls      []llmtest.ToolCall
		wantFragmented []bool   // per call: arguments in several deltas
		wantOutput     []string // output item types
		wantTerminal   string
		wantUsage      [2]int64
	}{
		{
			name:         "text",
			reply:        llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}},
			wantText:     "Hello",
			wantOutput:   []string{"message"},
			wantTerminal: "response.completed",
			wantUsage:    [2]int64{1, 2},
		},
		{
			name:           "text and fragmented calls",
			reply:          llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}, ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: long}, {Name: "g", Arguments: "{}"}}},
			wantText:       "Hello",
			wantCalls:      []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: long}, {ID: "call_llmtest000001", Name: "g", Arguments: "{}"}},
			wantFragmented: []bool{true, false},
			wantOutput:     []string{"message", "function_call", "function_call"},
			wantTerminal:   "response.completed",
			wantUsage:      [2]int64{1, 4},
		},
		{
			name:           "whole calls only",
			reply:          llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: long}}, WholeToolCalls: true},
			wantCalls:      []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: long}},
			wantFragmented: []bool{false},
			wantOutput:     []string{"function_call"},
			wantTerminal:   "response.completed",
			wantUsage:      [2]int64{1, 1},
		},
		{
			name:         "length",
			reply:        llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}, FinishReason: "length"},
			wantText:     "Hello",
			wantOutput:   []string{"message"},
			wantTerminal: "response.incomplete",
			wantUsage:    [2]int64{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, rsKey)
			srv.Enqueue(tt.reply)
			res := rsPost(t, srv, rsValid)
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, Content-Type %q; want 200, text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
			}
			events, err := rsReadSSE(t, res.Body)
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			types := rsCheckEvents(t, events)
			s := rsSummarize(t, events)

			want := []string{"response.created", "response.in_progress"}
			if tt.wantText != "" {
				want = append(want, textEvents...)
			}
			for _, n := range s.ArgDeltas {
				want = append(want, "response.output_item.added")
				for range n {
					want = append(want, "response.function_call_arguments.delta")
				}
				want = append(want, "response.function_call_arguments.done", "response.output_item.done")
			}
			want = append(want, tt.wantTerminal)
			if diff := cmp.Diff(want, types); diff != "" {
				t.Errorf("event types mismatch (-want +got):\n%s", diff)
			}
			if s.Text != tt.wantText {
				t.Errorf("text = %q, want %q", s.Text, tt.wantText)
			}
			if diff := cmp.Diff(tt.wantCalls, s.Calls); diff != "" {
				t.Errorf("calls mismatch (-want +got):\n%s", diff)
			}
			var fragmented []bool
			for _, n := range s.ArgDeltas {
				fragmented = append(fragmented, n > 1)
			}
			if diff := cmp.Diff(tt.wantFragmented, fragmented); diff != "" {
				t.Errorf("fragmented arguments per call mismatch (-want +got):\n%s", diff)
			}
			r := s.Response
			if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Model != "m" || !r.Store || r.PreviousResponseID != nil {
				t.Errorf("response id=%q object=%q model=%q store=%v previous=%v; want resp_…, response, m, true, null", r.ID, r.Object, r.Model, r.Store, r.PreviousResponseID)
			}
			var outTypes []string
			for i, it := range r.Output {
				outTypes = append(outTypes, it.Type)
				if it.Status != "completed" || it.ID == "" {
					t.Errorf("output[%d] id=%q status=%q, want an id and completed", i, it.ID, it.Status)
				}
			}
			if diff := cmp.Diff(tt.wantOutput, outTypes); diff != "" {
				t.Errorf("output item types mismatch (-want +got):\n%s", diff)
			}
			if r.Usage == nil || r.Usage.InputTokens != tt.wantUsage[0] || r.Usage.OutputTokens != tt.wantUsage[1] || r.Usage.TotalTokens != tt.wantUsage[0]+tt.wantUsage[1] {
				t.Errorf("usage = %+v, want input %d, output %d", r.Usage, tt.wantUsage[0], tt.wantUsage[1])
			}
			if tt.wantTerminal == "response.incomplete" {
				if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
					t.Errorf("status %q, incomplete_details %+v; want incomplete, max_output_tokens", r.Status, r.IncompleteDetails)
				}
			} else if r.Status != "completed" || r.IncompleteDetails != nil {
				t.Errorf("status %q, incomplete_details %+v; want completed, null", r.Status, r.IncompleteDetails)
			}
		})
	}
}

// TestResponsesServerSDK drives the stand-in with the openai-go SDK's own
// Responses client: streaming, retrieval and deletion.
func TestResponsesServerSDK(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "It is "}, {Text: "noon."}}, ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}})
	client := responses.NewResponseService(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey(rsKey), option.WithMaxRetries(0))

	stream := client.NewStreaming(t.Context(), responses.ResponseNewParams{
		Model: "grok-test",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what time is it")},
	})
	var (
		text      string
		completed *responses.Response
	)
	for stream.Next() {
		ev := stream.Current()
		switch v := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			text += v.Delta
		case responses.ResponseCompletedEvent:
			completed = &v.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text != "It is noon." || completed == nil {
		t.Fatalf("text %q, completed %v; want the text and a completed response", text, completed)
	}
	if len(completed.Output) != 2 || completed.Output[1].AsFunctionCall().CallID != "call_1" || completed.Usage.OutputTokens != 3 {
		t.Errorf("completed response = %s, want a message and call_1, 3 output tokens", completed.RawJSON())
	}

	got, err := client.Get(t.Context(), completed.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("Get(%s): %v", completed.ID, err)
	}
	if got.ID != completed.ID || got.Status != "completed" || got.OutputText() != "It is noon." {
		t.Errorf("Get(%s) = id %q status %q text %q", completed.ID, got.ID, got.Status, got.OutputText())
	}
	if err := client.Delete(t.Context(), completed.ID); err != nil {
		t.Fatalf("Delete(%s): %v", completed.ID, err)
	}
	_, err = client.Get(t.Context(), completed.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "not_found" {
		t.Errorf("Get after Delete: error %v, want a 404 not_found", err)
	}
}

// rsTurn posts a streaming request and returns the terminal response.
func rsTurn(t *testing.T, srv *llmtest.ResponsesServer, body string) (rsSummary, int) {
	t.Helper()
	res := rsPost(t, srv, body)
	if res.StatusCode != http.StatusOK {
		return rsSummary{}, res.StatusCode
	}
	events, err := rsReadSSE(t, res.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return rsSummarize(t, events), res.StatusCode
}

func TestResponsesServerStore(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "calling"}}, ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}})
	first, status := rsTurn(t, srv, `{"model":"m","stream":true,"input":[{"role":"system","content":"be brief"},{"role":"user","content":"first question"}]}`)
	if status != 200 {
		t.Fatalf("first turn: status %d", status)
	}

	// The continuation may answer the stored call, and the default reply
	// echoes the last user message of the whole stored conversation.
	second, status := rsTurn(t, srv, fmt.Sprintf(`{"model":"m","stream":true,"previous_response_id":%q,"input":[{"type":"function_call_output","call_id":"call_1","output":"done"}]}`, first.Response.ID))
	if status != 200 {
		t.Fatalf("second turn: status %d", status)
	}
	if second.Text != "echo: first question" {
		t.Errorf("second turn text = %q, want the echo of the stored user message", second.Text)
	}
	if p := second.Response.PreviousResponseID; p == nil || *p != first.Response.ID {
		t.Errorf("second response previous_response_id = %v, want %q", p, first.Response.ID)
	}
	// 2 + 2 words before, "calling" and "done".
	if u := second.Response.Usage; u == nil || u.InputTokens != 6 {
		t.Errorf("second turn usage = %+v, want 6 input tokens (the whole conversation)", u)
	}

	// store false keeps nothing.
	unstored, _ := rsTurn(t, srv, `{"model":"m","stream":true,"store":false,"input":"hi"}`)
	if unstored.Response.Store {
		t.Errorf("store false: response store = true")
	}
	if res := rsDo(t, t.Context(), srv, http.MethodGet, "/v1/responses/"+unstored.Response.ID, rsKey, ""); res.StatusCode != 404 {
		t.Errorf("GET of an unstored response: status %d, want 404", res.StatusCode)
	}
	if _, status := rsTurn(t, srv, fmt.Sprintf(`{"model":"m","stream":true,"previous_response_id":%q,"input":"hi"}`, unstored.Response.ID)); status != 404 {
		t.Errorf("continuing an unstored response: status %d, want 404", status)
	}

	// GET returns the stored response.
	res := rsDo(t, t.Context(), srv, http.MethodGet, "/v1/responses/"+second.Response.ID, rsKey, "")
	var got rsResponse
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET: status %d, %v", res.StatusCode, err)
	}
	if diff := cmp.Diff(second.Response, got); diff != "" {
		t.Errorf("GET mismatch (-streamed +got):\n%s", diff)
	}

	// Expiry: every stored response is gone.
	srv.ForgetResponses()
	res = rsPost(t, srv, fmt.Sprintf(`{"model":"m","stream":true,"previous_response_id":%q,"input":"again"}`, second.Response.ID))
	if res.StatusCode != 404 {
		t.Fatalf("continuing after ForgetResponses: status %d, want 404", res.StatusCode)
	}
	e := rsDecodeError(t, res)
	want := rsError{Message: fmt.Sprintf("Response with id '%s' not found", second.Response.ID), Type: "invalid_request_error", Param: new("previous_response_id"), Code: new("not_found")}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("404 body mismatch (-want +got):\n%s", diff)
	}
}

func TestResponsesServerDelete(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	turn, _ := rsTurn(t, srv, rsValid)
	res := rsDo(t, t.Context(), srv, http.MethodDelete, "/v1/responses/"+turn.Response.ID, rsKey, "")
	var body struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
		t.Fatalf("DELETE: status %d, %v", res.StatusCode, err)
	}
	if body.ID != turn.Response.ID || body.Object != "response" || !body.Deleted {
		t.Errorf("DELETE = %+v, want the id, object response, deleted true", body)
	}
	if _, status := rsTurn(t, srv, fmt.Sprintf(`{"model":"m","stream":true,"previous_response_id":%q,"input":"hi"}`, turn.Response.ID)); status != 404 {
		t.Errorf("continuing a deleted response: status %d, want 404", status)
	}
}

func TestResponsesServerRecords(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	first, _ := rsTurn(t, srv, `{"model":"m","stream":true,"input":"hello"}`)
	body := fmt.Sprintf(`{"model":"grok","stream":true,"store":true,"previous_response_id":%q,"input":[
		{"role":"developer","content":"sys"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"},{"type":"input_text","text":"b"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me see"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"x\":1}"},
		{"type":"function_call","call_id":"c2","name":"g","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"one"},
		{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"two"}]},
		{"type":"function_call","call_id":"c3","name":"h","arguments":"{}"},
		{"type":"function_call_output","call_id":"c3","output":"error: three"}],
		"tools":[{"type":"web_search"},{"type":"x_search"},{"type":"function","name":"f","description":"does f","parameters":{"type":"object","properties":{}}}]}`, first.Response.ID)
	if res := rsPost(t, srv, body); res.StatusCode != 200 {
		t.Fatalf("status %d: %+v", res.StatusCode, rsDecodeError(t, res))
	}
	rsDo(t, t.Context(), srv, http.MethodPost, "/v1/responses", "", `{"model":"unauthorized","input":"x","store":false}`)

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	r := reqs[1]
	wantMsgs := []llmtest.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "ab"},
		{Role: "assistant", Content: "let me see", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}, {ID: "c2", Name: "g", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c1", Content: "one"},
		{Role: "tool", ToolCallID: "c2", Content: "two"},
		{Role: "assistant", ToolCalls: []llmtest.ToolCall{{ID: "c3", Name: "h", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c3", Content: "error: three"},
	}
	if diff := cmp.Diff(wantMsgs, r.Messages); diff != "" {
		t.Errorf("recorded messages mismatch (-want +got):\n%s", diff)
	}
	wantTools := []llmtest.Tool{{Name: "web_search"}, {Name: "x_search"}, {Name: "f", Description: "does f", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
	if diff := cmp.Diff(wantTools, r.Tools); diff != "" {
		t.Errorf("recorded tools mismatch (-want +got):\n%s", diff)
	}
	if r.Model != "grok" || !r.Stream || r.Store == nil || !*r.Store || r.PreviousResponseID != first.Response.ID {
		t.Errorf("recorded model=%q stream=%v store=%v previous=%q", r.Model, r.Stream, r.Store, r.PreviousResponseID)
	}
	if r.Header.Get("Authorization") != "" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("recorded headers %v, want Content-Type and no Authorization", r.Header)
	}
	if u := reqs[2]; u.Model != "unauthorized" || u.Store == nil || *u.Store || reqs[0].Store != nil {
		t.Errorf("recorded store = %v (unauthorized request) and %v (none sent), want false and nil", u.Store, reqs[0].Store)
	}

	// Requests returns copies.
	reqs[1].Messages[2].ToolCalls[0].Name = "changed"
	*reqs[2].Store = true
	again := srv.Requests()
	if again[1].Messages[2].ToolCalls[0].Name != "f" || *again[2].Store {
		t.Errorf("changing the result of Requests changed the server's record")
	}
}

func TestResponsesServerErrorReplies(t *testing.T) {
	tests := []struct {
		reply            llmtest.Reply
		wantCode         string
		wantRetryAfter   string
		wantRetryAfterMs string
	}{
		{llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, "rate_limit_exceeded", "2", "1500"},
		{llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, "context_length_exceeded", "", ""},
		{llmtest.Reply{Status: 503}, "server_error", "", ""},
		{llmtest.Reply{Status: 403, ErrorCode: "forbidden_model"}, "forbidden_model", "", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.reply.Status, tt.wantCode), func(t *testing.T) {
			srv := llmtest.NewResponses(t, rsKey)
			srv.Enqueue(tt.reply)
			res := rsPost(t, srv, rsValid)
			if res.StatusCode != tt.reply.Status {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.reply.Status)
			}
			if got := res.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetryAfter)
			}
			if got := res.Header.Get("Retry-After-Ms"); got != tt.wantRetryAfterMs {
				t.Errorf("Retry-After-Ms = %q, want %q", got, tt.wantRetryAfterMs)
			}
			if e := rsDecodeError(t, res); rsDeref(e.Code) != tt.wantCode || e.Message == "" {
				t.Errorf("error = %+v, want code %q and a message", e, tt.wantCode)
			}
		})
	}
}

func TestResponsesServerCut(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}}, CutAfter: 2})
	res := rsPost(t, srv, rsValid)
	events, err := rsReadSSE(t, res.Body)
	if err == nil {
		t.Errorf("reading a cut stream: no error, want the connection dropped")
	}
	s := rsSummarize(t, events)
	if s.Text != "ab" || s.Terminal != "" {
		t.Errorf("cut stream: text %q, terminal %q; want ab and none", s.Text, s.Terminal)
	}
	// A cut response is not stored.
	if _, status := rsTurn(t, srv, `{"model":"m","stream":true,"previous_response_id":"resp_llmtest000001","input":"x"}`); status != 404 {
		t.Errorf("continuing a cut response: status %d, want 404", status)
	}
}

func TestResponsesServerHang(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	srv.Enqueue(llmtest.Reply{Hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	res := rsDo(t, ctx, srv, http.MethodPost, "/v1/responses", rsKey, rsValid)
	if res.StatusCode != 200 {
		t.Fatalf("status %d, want 200 headers before the hang", res.StatusCode)
	}
	cancel()
	if _, err := io.ReadAll(res.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("reading a hanging stream after cancel: %v, want context.Canceled", err)
	}
}

func TestResponsesServerNonStreaming(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hi "}, {Text: "there"}}, ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}})
	res := rsPost(t, srv, `{"model":"m","input":"hello"}`)
	var r rsResponse
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != 200 {
		t.Fatalf("status %d, %v", res.StatusCode, err)
	}
	if r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Content[0].Text != "Hi there" || r.Output[1].CallID != "call_1" || r.Usage == nil || r.Usage.OutputTokens != 3 {
		t.Errorf("response = %+v, want the text, call_1 and usage", r)
	}
}

func TestResponsesServerConcurrent(t *testing.T) {
	srv := llmtest.NewResponses(t, rsKey)
	const n = 8
	var wg sync.WaitGroup
	bodies := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "x"}}})
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.BaseURL()+"/responses", strings.NewReader(fmt.Sprintf(`{"model":"m","stream":true,"input":"q%d"}`, i)))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+rsKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			bodies[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	if got := len(srv.Requests()); got != n {
		t.Errorf("recorded %d requests, want %d", got, n)
	}
	for i, body := range bodies {
		if errs[i] != nil || !strings.Contains(body, "response.completed") {
			t.Errorf("request %d: error %v, body %q; want a completed stream", i, errs[i], body)
		}
	}
}

func FuzzResponsesServerRequest(f *testing.F) {
	srv := llmtest.NewResponses(f, "")
	for _, seed := range []string{
		rsValid,
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"mcp","server_url":"u","server_label":"l"}]}`,
		`{"model":"m","input":"hi","previous_response_id":"resp_llmtest000001"}`,
		`{"model":"m","input":[{"role":"user","content":null}]}`,
		`{"model":"m","instructions":null,"input":[{"role":"user","content":[{"type":"text"}]}]}`,
		`[]`, `null`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.BaseURL()+"/responses", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("reading the reply: %v", err)
		}
		switch res.StatusCode {
		case 200:
		case 400, 404:
			if !json.Valid(bytes.TrimSpace(b)) {
				t.Errorf("status %d with a body that is not JSON: %q", res.StatusCode, b)
			}
		default:
			t.Errorf("status %d for %q, want 200, 400 or 404", res.StatusCode, body)
		}
	})
}
