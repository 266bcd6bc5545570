package llmtest_test

import (
	"bufio"
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

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

const key = "sk-test-0123456789"

// post sends body to srv's path with the given bearer key ("" for none).
func post(t testing.TB, srv *llmtest.Server, method, path, bearer, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, strings.TrimSuffix(srv.URL, "/v1")+path, strings.NewReader(body))
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

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, res *http.Response) apiError {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var e apiError
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatalf("decoding error body: %v", err)
	}
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error body = %+v, want message and type", e)
	}
	return e
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

const validBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// toolsBody is a valid request declaring tools (a comma-separated list of
// JSON objects).
func toolsBody(tools string) string {
	return `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + tools + `]}`
}

// messagesBody is a request with messages (a comma-separated list of JSON
// objects).
func messagesBody(msgs string) string {
	return `{"model":"m","messages":[` + msgs + `]}`
}

// assistantCalls is an assistant message calling function f once per id
// (each a JSON string).
func assistantCalls(ids ...string) string {
	var calls []string
	for _, id := range ids {
		calls = append(calls, `{"id":`+id+`,"type":"function","function":{"name":"f","arguments":"{}"}}`)
	}
	return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
}

func TestServerRejects(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		bearer     string
		body       string
		wantStatus int
		wantParam  string
		wantCode   string
	}{
		{"other path", "POST", "/v1/completions", key, validBody, 404, "", ""},
		{"other method", "GET", "/v1/chat/completions", key, "", 404, "", ""},
		{"no /v1 prefix", "POST", "/chat/completions", key, validBody, 404, "", ""},
		{"no key", "POST", "/v1/chat/completions", "", validBody, 401, "", ""},
		{"wrong key", "POST", "/v1/chat/completions", "sk-wrong", validBody, 401, "", "invalid_api_key"},
		{"not JSON", "POST", "/v1/chat/completions", key, "{", 400, "", ""},
		{"trailing garbage", "POST", "/v1/chat/completions", key, validBody + "x", 400, "", ""},
		{"no model", "POST", "/v1/chat/completions", key, `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", ""},
		{"empty model", "POST", "/v1/chat/completions", key, `{"model":"","messages":[{"role":"user","content":"hi"}]}`, 400, "model", ""},
		{"no messages", "POST", "/v1/chat/completions", key, `{"model":"m"}`, 400, "messages", ""},
		{"empty messages", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[]}`, 400, "messages", ""},
		{"bad role", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, 400, "messages[0].role", ""},
		{"missing role", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"content":"hi"}]}`, 400, "messages[0].role", ""},
		{"bad content", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"user","content":42}]}`, 400, "messages[0].content", ""},
		{"null user content", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"user","content":null}]}`, 400, "messages[0].content", ""},
		{"stream_options without stream", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, 400, "stream_options", ""},
		{"stream of the wrong type", "POST", "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, 400, "", ""},
		{"tool without type", "POST", "/v1/chat/completions", key, toolsBody(`{"function":{"name":"f"}}`), 400, "tools[0].type", ""},
		{"tool of another type", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"web_search"}`), 400, "tools[0].type", ""},
		{"tool without function", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function"}`), 400, "tools[0].function", ""},
		{"tool without name", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"f"}},{"type":"function","function":{"description":"d"}}`), 400, "tools[1].function.name", ""},
		{"tool name with a dot", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"mcp.search"}}`), 400, "tools[0].function.name", ""},
		{"tool name too long", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}`), 400, "tools[0].function.name", ""},
		{"tool parameters not an object", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"f","parameters":[]}}`), 400, "tools[0].function.parameters", ""},
		{"tool parameters of type string", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}`), 400, "tools[0].function.parameters", ""},
		{"tool parameters without type", "POST", "/v1/chat/completions", key, toolsBody(`{"type":"function","function":{"name":"f","parameters":{"properties":{}}}}`), 400, "tools[0].function.parameters", ""},
		{"too many tools", "POST", "/v1/chat/completions", key, toolsBody(strings.TrimSuffix(strings.Repeat(`{"type":"function","function":{"name":"f"}},`, 129), ",")), 400, "tools", ""},
		{"tool result without a call", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}`), 400, "messages[1].role", ""},
		{"tool result without call id", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`) + `,{"role":"tool","content":"x"}`), 400, "messages[2].tool_call_id", ""},
		{"tool result for another call", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`) + `,{"role":"tool","tool_call_id":"c2","content":"x"}`), 400, "messages[2].tool_call_id", ""},
		{"call left unanswered", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`, `"c2"`) + `,{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"next"}`), 400, "messages.[3].role", ""},
		{"conversation ends on calls", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`)), 400, "messages.[2].role", ""},
		{"tool call without id", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`), 400, "messages[1].tool_calls[0].id", ""},
		{"tool call without type", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}`), 400, "messages[1].tool_calls[0].type", ""},
		{"tool call without arguments", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}]}`), 400, "messages[1].tool_calls[0].function.arguments", ""},
		{"duplicate call ids", "POST", "/v1/chat/completions", key, messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`, `"c1"`)), 400, "messages[1].tool_calls[1].id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, key)
			res := post(t, srv, tt.method, tt.path, tt.bearer, tt.body)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			e := decodeError(t, res)
			if got := deref(e.Error.Param); got != tt.wantParam {
				t.Errorf("param = %q, want %q", got, tt.wantParam)
			}
			if got := deref(e.Error.Code); got != tt.wantCode {
				t.Errorf("code = %q, want %q", got, tt.wantCode)
			}
			if strings.Contains(e.Error.Message, key) || (tt.bearer != "" && strings.Contains(e.Error.Message, tt.bearer)) {
				t.Errorf("error message %q echoes the key", e.Error.Message)
			}
		})
	}
}

func TestServerErrorReplies(t *testing.T) {
	tests := []struct {
		reply          llmtest.Reply
		wantRetryAfter string
		wantMs         string
		wantType       string
		wantCode       string
		wantParam      string
		wantMessage    string // substring
	}{
		{reply: llmtest.Reply{Status: 429, RetryAfter: 1500 * time.Millisecond}, wantRetryAfter: "2", wantMs: "1500", wantType: "requests", wantCode: "rate_limit_exceeded"},
		{reply: llmtest.Reply{Status: 429}, wantType: "requests", wantCode: "rate_limit_exceeded"},
		{reply: llmtest.Reply{Status: 429, ErrorCode: "insufficient_quota"}, wantType: "requests", wantCode: "insufficient_quota"},
		{reply: llmtest.Reply{Status: 500}, wantType: "server_error"},
		{reply: llmtest.Reply{Status: 400}, wantType: "invalid_request_error"},
		{reply: llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, wantType: "invalid_request_error", wantCode: "context_length_exceeded", wantParam: "messages", wantMessage: "maximum context length"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.reply.Status, tt.reply.ErrorCode), func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, "")
			srv.Enqueue(tt.reply)
			res := post(t, srv, "POST", "/v1/chat/completions", "", validBody)
			if res.StatusCode != tt.reply.Status {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.reply.Status)
			}
			if got := res.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetryAfter)
			}
			if got := res.Header.Get("Retry-After-Ms"); got != tt.wantMs {
				t.Errorf("retry-after-ms = %q, want %q", got, tt.wantMs)
			}
			e := decodeError(t, res)
			if e.Error.Type != tt.wantType || deref(e.Error.Code) != tt.wantCode || deref(e.Error.Param) != tt.wantParam {
				t.Errorf("error = {type:%q code:%q param:%q}, want {type:%q code:%q param:%q}", e.Error.Type, deref(e.Error.Code), deref(e.Error.Param), tt.wantType, tt.wantCode, tt.wantParam)
			}
			if !strings.Contains(e.Error.Message, tt.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", e.Error.Message, tt.wantMessage)
			}
		})
	}
}

// event is one decoded SSE data line.
type event struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// readSSE reads a whole event stream strictly: every event is one
// "data: " line followed by a blank line. It reports whether [DONE] ended
// the stream and the raw JSON of each event.
func readSSE(t *testing.T, r io.Reader) (events []json.RawMessage, done bool, err error) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q, want a data line", line)
		}
		if done {
			t.Fatalf("data %q after [DONE]", data)
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("data line %q not followed by a blank line", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		events = append(events, json.RawMessage(data))
	}
	return events, done, sc.Err()
}

// summary is what a client makes of a stream.
type summary struct {
	Text        string
	Roles       []string
	Finish      string
	Usages      []string // compact usage JSON per event; "-" when absent
	EmptyChoice int      // events with "choices":[]
	Done        bool
}

func summarize(t *testing.T, events []json.RawMessage, done bool) summary {
	t.Helper()
	s := summary{Done: done}
	var first event
	for i, raw := range events {
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("event %d %s: %v", i, raw, err)
		}
		if i == 0 {
			first = e
		}
		if e.Object != "chat.completion.chunk" || e.ID == "" || e.ID != first.ID || e.Created != first.Created || e.Model != "m" {
			t.Errorf("event %d has id=%q object=%q created=%d model=%q, want a chat.completion.chunk of model m sharing the first's id and created", i, e.ID, e.Object, e.Created, e.Model)
		}
		if !strings.Contains(string(raw), `"choices":[`) {
			t.Errorf("event %d %s has no choices array", i, raw)
		}
		switch u := string(e.Usage); u {
		case "":
			s.Usages = append(s.Usages, "-")
		default:
			s.Usages = append(s.Usages, u)
		}
		if len(e.Choices) == 0 {
			s.EmptyChoice++
		}
		for _, c := range e.Choices {
			if c.Delta.Role != "" {
				s.Roles = append(s.Roles, c.Delta.Role)
			}
			if c.Delta.Content != nil {
				s.Text += *c.Delta.Content
			}
			if c.FinishReason != nil {
				s.Finish = *c.FinishReason
			}
		}
	}
	return s
}

func TestServerStream(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"system","content":"two words"},{"role":"user","content":"hi"}],"stream":true%s}`
	const withUsage = `,"stream_options":{"include_usage":true}`
	u := func(prompt, completion int) string {
		return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, completion, prompt+completion)
	}
	tests := []struct {
		name         string
		reply        *llmtest.Reply
		includeUsage bool
		want         summary
	}{
		{
			name:         "openai style with usage",
			reply:        &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}},
			includeUsage: true,
			// role chunk, 2 content chunks, finish chunk, usage chunk
			want: summary{Text: "Hello", Roles: []string{"assistant"}, Finish: "stop", Usages: []string{"null", "null", "null", "null", u(3, 2)}, EmptyChoice: 1, Done: true},
		},
		{
			name:  "openai style without usage",
			reply: &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "x"}}, FinishReason: "length"},
			want:  summary{Text: "x", Roles: []string{"assistant"}, Finish: "length", Usages: []string{"-", "-", "-"}, Done: true},
		},
		{
			name:         "xai style running usage",
			reply:        &llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b"}}, UsageEveryChunk: true},
			includeUsage: true,
			want:         summary{Text: "ab", Roles: []string{"assistant"}, Finish: "stop", Usages: []string{u(3, 1), u(3, 2), u(3, 2)}, Done: true},
		},
		{
			name:  "default echo",
			reply: nil,
			want:  summary{Text: "echo: hi", Roles: []string{"assistant"}, Finish: "stop", Usages: []string{"-", "-", "-", "-"}, Done: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, key)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			opts := ""
			if tt.includeUsage {
				opts = withUsage
			}
			res := post(t, srv, "POST", "/v1/chat/completions", key, strings.Replace(body, "%s", opts, 1))
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
				t.Fatalf("status %d, Content-Type %q; want 200, text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
			}
			events, done, err := readSSE(t, res.Body)
			if err != nil {
				t.Fatalf("reading stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(t, events, done)); diff != "" {
				t.Errorf("stream mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerCut(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}}, CutAfter: 2})
	res := post(t, srv, "POST", "/v1/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	b, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a cut stream: error = %v, want io.ErrUnexpectedEOF", err)
	}
	if got := string(b); !strings.Contains(got, `"content":"b"`) || strings.Contains(got, `"content":"c"`) || strings.Contains(got, "[DONE]") {
		t.Errorf("cut stream = %q, want chunks a and b only, without [DONE]", got)
	}
}

type completion struct {
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index   int `json:"index"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func TestServerNonStreaming(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hel"}, {Text: "lo"}}, FinishReason: "length"})
	res := post(t, srv, "POST", "/v1/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"one "},{"type":"text","text":"two"}]}]}`)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q; want 200, application/json", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var got completion
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := completion{Object: "chat.completion", Model: "m", Choices: []choice{{FinishReason: "length"}}, Usage: usage{2, 2, 4}}
	want.Choices[0].Message.Role, want.Choices[0].Message.Content = "assistant", "Hello"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completion mismatch (-want +got):\n%s", diff)
	}
}

func TestServerRecordsAndQueues(t *testing.T) {
	srv := llmtest.NewOpenAI(t, key)
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "first"}}}, llmtest.Reply{Status: 503})
	bodies := []string{
		`{"model":"a","messages":[{"role":"system","content":"s"},{"role":"user","content":"u1"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"b","messages":[{"role":"user","content":[{"type":"text","text":"p"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"q"}]}]}`,
		`{"model":"c","messages":[{"role":"user","content":"u3"}],"stream":true}`,
	}
	var statuses []int
	var texts []string
	for _, b := range bodies {
		res := post(t, srv, "POST", "/v1/chat/completions", key, b)
		statuses = append(statuses, res.StatusCode)
		raw, _ := io.ReadAll(res.Body)
		texts = append(texts, string(raw))
	}
	if diff := cmp.Diff([]int{200, 503, 200}, statuses); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(texts[0], `"content":"first"`) || !strings.Contains(texts[2], `"content":"u3"`) {
		t.Errorf("replies = %q, want the queued reply, then the error, then the echo", texts)
	}
	got := srv.Requests()
	want := []llmtest.RecordedRequest{
		{Model: "a", Messages: []llmtest.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u1"}}, Stream: true, IncludeUsage: true},
		{Model: "b", Messages: []llmtest.Message{{Role: "user", Content: "pq"}}},
		{Model: "c", Messages: []llmtest.Message{{Role: "user", Content: "u3"}}, Stream: true},
	}
	for i := range got {
		if a := got[i].Header.Get("Authorization"); a != "" {
			t.Errorf("request %d kept Authorization %q", i, a)
		}
		if ct := got[i].Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("request %d Content-Type = %q, want application/json", i, ct)
		}
		got[i].Header = nil
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Requests() mismatch (-want +got):\n%s", diff)
	}
	// Requests returns a copy.
	got[0].Messages[0].Content = "changed"
	if srv.Requests()[0].Messages[0].Content != "s" {
		t.Error("Requests() shares memory with the server")
	}
}

func TestServerConcurrent(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "x"}}})
		})
		wg.Go(func() {
			res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(validBody))
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			io.Copy(io.Discard, res.Body)
			_ = srv.Requests()
		})
	}
	wg.Wait()
	if got := len(srv.Requests()); got != n {
		t.Errorf("recorded %d requests, want %d", got, n)
	}
}

// FuzzServerRequest posts arbitrary bodies: the stand-in must answer every
// one with 200 or a 400 JSON error, never fail or hang.
func FuzzServerRequest(f *testing.F) {
	for _, seed := range []string{
		validBody,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"assistant","content":null},{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"m","messages":[],"n":2}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":3}`,
		`{"model":null}`,
		toolsBody(`{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`),
		toolsBody(`{"type":"function","function":null},{"type":null}`),
		messagesBody(`{"role":"user","content":"hi"},` + assistantCalls(`"c1"`, `"c2"`) + `,{"role":"tool","tool_call_id":"c2","content":"x"},{"role":"tool","tool_call_id":"c1","content":"y"}`),
		messagesBody(`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":null}}]},{"role":"tool","tool_call_id":null}`),
		`[]`,
		`null`,
		"",
	} {
		f.Add(seed)
	}
	srv := llmtest.NewOpenAI(f, "")
	f.Fuzz(func(t *testing.T, body string) {
		res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
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
			var e apiError
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil || e.Error.Message == "" {
				t.Errorf("400 body: %+v, %v; want an OpenAI error object", e, err)
			}
		default:
			t.Errorf("status = %d for %q, want 200 or 400", res.StatusCode, body)
		}
	})
}

// toolEvent is the tool-call part of a streamed chunk.
type toolEvent struct {
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// fragment is one tool-call delta in a readable form: "i id type name |args|"
// with "-" for an absent field.
func fragment(index *int, id, typ, name, args *string) string {
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	i := "-"
	if index != nil {
		i = fmt.Sprint(*index)
	}
	return fmt.Sprintf("%s %s %s %s |%s|", i, s(id), s(typ), s(name), s(args))
}

func TestServerToolCallStream(t *testing.T) {
	calls := []llmtest.ToolCall{
		{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Zürich"}`},
		{Name: "now"},
	}
	tests := []struct {
		name          string
		reply         llmtest.Reply
		wantChunks    [][]string // tool-call deltas per chunk that has any
		wantFinish    string
		wantArguments map[string]string // id → concatenated arguments
	}{
		{
			name:  "fragmented",
			reply: llmtest.Reply{ToolCalls: calls},
			wantChunks: [][]string{
				{"0 call_a function get_weather ||"},
				{`0 - - - |{"city"|`},
				{`0 - - - |:"Züri|`},
				{`0 - - - |ch"}|`},
				{"1 call_llmtest000001 function now ||"},
			},
			wantFinish:    "tool_calls",
			wantArguments: map[string]string{"call_a": `{"city":"Zürich"}`, "call_llmtest000001": ""},
		},
		{
			name:  "whole",
			reply: llmtest.Reply{ToolCalls: calls, WholeToolCalls: true, FinishReason: "stop"},
			wantChunks: [][]string{
				{`0 call_a function get_weather |{"city":"Zürich"}|`, "1 call_llmtest000001 function now ||"},
			},
			wantFinish:    "stop",
			wantArguments: map[string]string{"call_a": `{"city":"Zürich"}`, "call_llmtest000001": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, "")
			srv.Enqueue(tt.reply)
			res := post(t, srv, "POST", "/v1/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
			events, done, err := readSSE(t, res.Body)
			if err != nil || !done {
				t.Fatalf("reading stream: done=%v, %v", done, err)
			}
			var (
				got    [][]string
				finish string
				args   = make(map[string]string)
				byIdx  = make(map[int]string)
			)
			for _, raw := range events {
				var e toolEvent
				if err := json.Unmarshal(raw, &e); err != nil {
					t.Fatalf("event %s: %v", raw, err)
				}
				for _, c := range e.Choices {
					if c.FinishReason != nil {
						finish = *c.FinishReason
					}
					var frags []string
					for _, tc := range c.Delta.ToolCalls {
						frags = append(frags, fragment(tc.Index, tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments))
						if tc.Index == nil {
							continue
						}
						if tc.ID != nil {
							byIdx[*tc.Index] = *tc.ID
						}
						if tc.Function.Arguments != nil {
							args[byIdx[*tc.Index]] += *tc.Function.Arguments
						}
					}
					if frags != nil {
						got = append(got, frags)
					}
				}
			}
			if diff := cmp.Diff(tt.wantChunks, got); diff != "" {
				t.Errorf("tool-call chunks mismatch (-want +got):\n%s", diff)
			}
			if finish != tt.wantFinish {
				t.Errorf("finish_reason = %q, want %q", finish, tt.wantFinish)
			}
			if diff := cmp.Diff(tt.wantArguments, args); diff != "" {
				t.Errorf("arguments mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerToolCallCut checks CutAfter with tool calls: the calls go out,
// the finish does not.
func TestServerToolCallCut(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}}, ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}, CutAfter: 5})
	res := post(t, srv, "POST", "/v1/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	b, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a cut stream: error = %v, want io.ErrUnexpectedEOF", err)
	}
	if got := string(b); !strings.Contains(got, `"id":"c1"`) || strings.Contains(got, `"finish_reason":"`) || strings.Contains(got, "[DONE]") {
		t.Errorf("cut stream = %q, want the tool call without a finish or [DONE]", got)
	}
}

func TestServerNonStreamingToolCalls(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	srv.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}})
	res := post(t, srv, "POST", "/v1/chat/completions", "", validBody)
	var got struct {
		Choices []struct {
			Message struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 {
		t.Fatalf("got %d choices, want 1", len(got.Choices))
	}
	c := got.Choices[0]
	if string(c.Message.Content) != "null" || c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("choice = %+v, want content null, one tool call, finish tool_calls", c)
	}
	tc := c.Message.ToolCalls[0]
	if tc.ID != "c1" || tc.Type != "function" || tc.Function.Name != "f" || tc.Function.Arguments != `{"a":1}` {
		t.Errorf("tool call = %+v, want c1 function f {\"a\":1}", tc)
	}
	if got.Usage.CompletionTokens != 1 {
		t.Errorf("completion_tokens = %d, want 1 (one tool call)", got.Usage.CompletionTokens)
	}
}

// TestServerRecordsToolTraffic checks tools, assistant tool calls and tool
// results are recorded normalised.
func TestServerRecordsToolTraffic(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	body := `{"model":"m","stream":true,"messages":[
		{"role":"system","content":"s"},
		{"role":"user","content":"u"},
		{"role":"assistant","content":"looking","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
			{"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},
		{"role":"tool","tool_call_id":"c1","content":"one"},
		{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"error: "},{"type":"text","text":"two"}]}],
		"tools":[
			{"type":"function","function":{"name":"f","description":"F does f.","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}},
			{"type":"function","function":{"name":"g"}}]}`
	res := post(t, srv, "POST", "/v1/chat/completions", "", body)
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	io.Copy(io.Discard, res.Body)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	got.Header = nil
	want := llmtest.RecordedRequest{
		Model: "m",
		Messages: []llmtest.Message{
			{Role: "system", Content: "s"},
			{Role: "user", Content: "u"},
			{Role: "assistant", Content: "looking", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Name: "g"}}},
			{Role: "tool", ToolCallID: "c1", Content: "one"},
			{Role: "tool", ToolCallID: "c2", Content: "error: two"},
		},
		Tools: []llmtest.Tool{
			{Name: "f", Description: "F does f.", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)},
			{Name: "g"},
		},
		Stream: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded request mismatch (-want +got):\n%s", diff)
	}
	// Requests returns deep copies.
	got.Messages[2].ToolCalls[0].Name = "changed"
	got.Tools[0].Parameters[0] = 'X'
	again := srv.Requests()[0]
	if again.Messages[2].ToolCalls[0].Name != "f" || again.Tools[0].Parameters[0] != '{' {
		t.Error("Requests() shares tool calls or parameters with the server")
	}
}

func TestServerBaseURL(t *testing.T) {
	srv := llmtest.NewOpenAI(t, "")
	if srv.BaseURL() != srv.URL || !strings.HasSuffix(srv.URL, "/v1") {
		t.Errorf("BaseURL() = %q, URL = %q; want equal, ending in /v1", srv.BaseURL(), srv.URL)
	}
}
