package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// mcpServer serves one MCP tool, "shout", over streamable HTTP, and
// records the Authorization header it was sent.
func mcpServer(t *testing.T) (url string, auth chan string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "shout",
		Description: "Say the text loudly.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text) + "!"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	auth = make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		// The handler keeps each client's session reading until it is
		// closed; hearth is gone, so close them (goleak in TestMain).
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	return srv.URL, auth
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// collect reads one reply to its end, returning every message.
func collect(t *testing.T, c *ipc.Conn) []ipc.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []ipc.Msg
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		got = append(got, m)
		switch m := m.(type) {
		case *ipc.Done:
			if !m.Turn.Incomplete {
				return got
			}
		case *ipc.Error:
			if m.Code != ipc.CodeToolError {
				return got
			}
		}
	}
}

func toolNames(r llmtest.RecordedRequest) []string {
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestMCPToolsFromGateway(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	url, auth := mcpServer(t)
	gateway := filepath.Join(t.TempDir(), "gateway.json")
	entry := map[string]any{"label": "loud", "url": url, "headers": map[string]string{"Authorization": "Bearer ${MCP_AUTH_TOKEN}"}}
	writeJSON(t, gateway, map[string]any{"servers": []any{entry}})
	d := startDaemon(t, t.TempDir(), append(openaiEnv(model), "MCP_AUTH_TOKEN=mcp-secret-token"), "-gateway", gateway)
	c := mustDial(t, d.Addr)

	model.Enqueue(
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "checking"}}, ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "loud__shout", Arguments: `{"text":"hello","reason":"the owner wants it loud"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "It says HELLO!"}}},
	)
	c.Send(&ipc.Message{Content: "shout hello"})
	got := collect(t, c)
	var call *ipc.ToolCall
	var result *ipc.ToolResult
	for _, m := range got {
		switch m := m.(type) {
		case *ipc.ToolCall:
			call = m
		case *ipc.ToolResult:
			result = m
		case *ipc.Error:
			t.Errorf("error event %+v", m)
		}
	}
	if call == nil || call.Name != "loud__shout" || call.Reason != "the owner wants it loud" {
		t.Errorf("tool_call = %+v", call)
	}
	if result == nil || result.Result != "HELLO!" {
		t.Errorf("tool_result = %+v", result)
	}
	if done := got[len(got)-1].(*ipc.Done); done.Turn.Content != "It says HELLO!" {
		t.Errorf("answer = %q", done.Turn.Content)
	}
	if a := <-auth; a != "Bearer mcp-secret-token" {
		t.Errorf("MCP server got Authorization %q", a)
	}
	reqs := model.Requests()
	if names := toolNames(reqs[0]); !contains(names, "loud__shout") || !contains(names, "current_time") || !contains(names, "memory_search") {
		t.Errorf("offered tools = %v", names)
	}
	second := reqs[1].Messages
	if last := second[len(second)-1]; last.Role != "tool" || last.ToolCallID != "call_1" || last.Content != "HELLO!" {
		t.Errorf("tool result sent to the model = %+v", last)
	}
	// The bearer token reaches the MCP server only.
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "mcp-secret-token") {
			t.Errorf("the model was sent the MCP token")
		}
	}
	if strings.Contains(d.Log(), "mcp-secret-token") {
		t.Errorf("hearth logged the MCP token")
	}
	shards, _ := filepath.Glob(filepath.Join(d.Root, "threads", "*.jsonl"))
	for _, s := range shards {
		b, _ := os.ReadFile(s)
		if strings.Contains(string(b), "mcp-secret-token") {
			t.Errorf("the journal holds the MCP token")
		}
	}

	// Remove the server: the next message is offered no MCP tool, with no
	// restart (SWAP-3).
	writeJSON(t, gateway, map[string]any{"servers": []any{}})
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "ok"}}})
	c.Send(&ipc.Message{Content: "again"})
	collect(t, c)
	reqs = model.Requests()
	if names := toolNames(reqs[len(reqs)-1]); contains(names, "loud__shout") {
		t.Errorf("after removal the model is still offered %v", names)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSwapProviderAndModelByPreference changes preferences.json between two
// messages: the next one goes to the other provider and model, with no
// restart and no code change (SWAP-1, SWAP-2).
func TestSwapProviderAndModelByPreference(t *testing.T) {
	openai := llmtest.NewOpenAI(t, "sk-test")
	anthropic := llmtest.NewAnthropic(t, "ak-test")
	root := t.TempDir()
	env := append(openaiEnv(openai), "ANTHROPIC_API_KEY=ak-test", "ANTHROPIC_BASE_URL="+anthropic.BaseURL())
	d := startDaemon(t, root, env)
	c := mustDial(t, d.Addr)

	c.Send(&ipc.Message{Content: "first"})
	if text, _, herr := reply(t, c); herr != nil || text != "echo: first" {
		t.Fatalf("first reply %q, %v", text, herr)
	}
	writeJSON(t, filepath.Join(root, "preferences.json"), map[string]string{"provider": "anthropic", "model": "claude-test-1"})
	c.Send(&ipc.Message{Content: "second"})
	text, done, herr := reply(t, c)
	if herr != nil || text != "echo: second" {
		t.Fatalf("second reply %q, %v", text, herr)
	}
	if n := len(anthropic.Requests()); n != 1 {
		t.Fatalf("anthropic got %d requests, want 1", n)
	}
	if m := anthropic.Requests()[0].Model; m != "claude-test-1" || done.Model == "" {
		t.Errorf("anthropic asked for model %q (done says %q)", m, done.Model)
	}
	// The conversation carried over: the first exchange is in the context.
	msgs := anthropic.Requests()[0].Messages
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Role+":"+m.Content)
	}
	if !contains(texts, "user:first") || !contains(texts, "assistant:echo: first") {
		t.Errorf("anthropic context = %q", texts)
	}
	if n := len(openai.Requests()); n != 1 {
		t.Errorf("openai got %d requests, want only the first", n)
	}
}

// TestXAIResponsesContinuesAcrossRestart: xAI keeps the conversation state
// (store + previous_response_id); after a restart hearth continues from the
// journaled response id and sends only what is new; when the stored
// response is gone, it falls back to the local history in the same turn.
func TestXAIResponsesContinuesAcrossRestart(t *testing.T) {
	xai := llmtest.NewResponses(t, "xai-key")
	root := t.TempDir()
	env := []string{"XAI_API_KEY=xai-key", "XAI_BASE_URL=" + xai.BaseURL()}
	d := startDaemon(t, root, env)
	c := mustDial(t, d.Addr)
	c.Send(&ipc.Message{Content: "remember the tomatoes"})
	if _, _, herr := reply(t, c); herr != nil {
		t.Fatal(herr)
	}
	d.Stop(t)

	d = startDaemon(t, root, env)
	c = mustDial(t, d.Addr)
	c.Send(&ipc.Message{Content: "what did I say?"})
	if _, _, herr := reply(t, c); herr != nil {
		t.Fatal(herr)
	}
	reqs := xai.Requests()
	second := reqs[len(reqs)-1]
	if second.PreviousResponseID == "" || second.Store == nil || !*second.Store {
		t.Fatalf("after restart: previous_response_id %q, store %v", second.PreviousResponseID, second.Store)
	}
	if len(second.Messages) != 1 || second.Messages[0].Content != "what did I say?" {
		t.Errorf("after restart hearth sent %+v, want only the new message", second.Messages)
	}

	xai.ForgetResponses()
	c.Send(&ipc.Message{Content: "and now?"})
	if text, _, herr := reply(t, c); herr != nil || text == "" {
		t.Fatalf("after the stored response expired: %q, %v", text, herr)
	}
	reqs = xai.Requests()
	last := reqs[len(reqs)-1]
	if last.PreviousResponseID != "" || len(last.Messages) < 5 {
		t.Errorf("fallback request: previous_response_id %q with %d messages, want none and the full history", last.PreviousResponseID, len(last.Messages))
	}
}

// leak matches what must never appear in an error a client sees: paths,
// Go stack traces, keys and tokens.
var leak = regexp.MustCompile(`(/[a-z]+/|\.go:\d|goroutine \d|sk-|xai-key|ak-test|Bearer|127\.0\.0\.1|panic)`)

// TestErrorEventsAreSafe drives every failure a turn can meet and scans
// each error event a client receives.
func TestErrorEventsAreSafe(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-secret-test")
	url, _ := mcpServer(t)
	gateway := filepath.Join(t.TempDir(), "gateway.json")
	writeJSON(t, gateway, map[string]any{"servers": []any{map[string]any{"label": "loud", "url": url}}})
	d := startDaemon(t, t.TempDir(), []string{"MNEMO_PROVIDER=openai", "OPENAI_BASE_URL=" + model.URL, "OPENAI_API_KEY=sk-secret-test"}, "-gateway", gateway)
	c := mustDial(t, d.Addr)

	model.Enqueue(
		llmtest.Reply{Status: 500},
		llmtest.Reply{Status: 500},
		llmtest.Reply{Status: 500}, // retries exhausted: provider_error
		llmtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"},
		llmtest.Reply{Status: 401},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "nope__missing", Arguments: `{}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "fine"}}},
	)
	var codes []string
	for _, q := range []string{"a", "b", "c", "d"} {
		c.Send(&ipc.Message{Content: q})
		for _, m := range collect(t, c) {
			if e, ok := m.(*ipc.Error); ok {
				codes = append(codes, e.Code)
				if leak.MatchString(e.Message) {
					t.Errorf("error %s leaks: %q", e.Code, e.Message)
				}
			}
		}
	}
	want := []string{ipc.CodeProviderError, ipc.CodeContextOverflow, ipc.CodeProviderError, ipc.CodeToolError}
	if strings.Join(codes, ",") != strings.Join(want, ",") {
		t.Errorf("error codes = %v, want %v", codes, want)
	}
}
