package httpdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
)

// curlSSE posts body to /engine/chat with `curl -N` (a client nobody here
// wrote) and returns the status line's code and the stream's events.
func curlSSE(t *testing.T, th *testHearth, body string) (int, []sseEvent) {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is required in CI")
		}
		t.Skip("curl is not installed")
	}
	cmd := exec.CommandContext(t.Context(), curl, "-sS", "-N", "-X", "POST",
		"-H", "Authorization: Bearer "+testToken, "-H", "Content-Type: application/json",
		"--data-binary", "@-", "-w", "\n%{http_code}", th.url+"/engine/chat")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl: %v", err)
	}
	i := bytes.LastIndexByte(out, '\n')
	var code int
	fmt.Sscan(string(out[i+1:]), &code)
	return code, readSSE(t, bytes.NewReader(out[:i+1]))
}

var engineSchemas = map[string]string{
	"text-delta":  "engine_text_delta",
	"tool-call":   "engine_tool_call",
	"tool-result": "engine_tool_result",
	"done":        "engine_done",
	"error":       "engine_error",
}

// checkEvents checks each event against its schema (ARCH-4) and returns
// the names in order and the text deltas joined.
func checkEvents(t *testing.T, evs []sseEvent) ([]string, string) {
	t.Helper()
	var names []string
	var text strings.Builder
	for _, ev := range evs {
		s, ok := engineSchemas[ev.Name]
		if !ok {
			t.Fatalf("unknown event %q", ev.Name)
		}
		if err := Validate(s, []byte(ev.Data)); err != nil {
			t.Fatalf("event %s: %v\n%s", ev.Name, err, ev.Data)
		}
		if ev.Name == "text-delta" {
			var d textDelta
			json.Unmarshal([]byte(ev.Data), &d)
			text.WriteString(d.Content)
		}
		if len(names) == 0 || names[len(names)-1] != ev.Name {
			names = append(names, ev.Name)
		}
	}
	return names, text.String()
}

const engineBody = `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello engine"}],"metadata":{"correlation_id":"req_xyz789","trigger":"message","client_context":{"path":"/finances"}}}`

func TestEngineChatCurl(t *testing.T) {
	th := startHearth(t, nil)
	th.model.replies <- chunks("Hi ", "there")
	code, evs := curlSSE(t, th, engineBody)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	names, text := checkEvents(t, evs)
	if strings.Join(names, ",") != "text-delta,done" || text != "Hi there" {
		t.Fatalf("events %v, text %q", names, text)
	}
	var done doneEvent
	json.Unmarshal([]byte(evs[len(evs)-1].Data), &done)
	recs := th.history(t)
	if done.CorrelationID != "req_xyz789" || done.ConversationID != recs[0].Conv || done.ConversationID == "" || done.TurnID != recs[0].ID || done.ReplyID != recs[1].ID || done.Usage.PromptTokens != 7 {
		t.Fatalf("done = %+v, journal %+v", done, recs)
	}
}

// fakeTools offers one read tool, lookup, which finds something or fails
// with a message that names a path (which must not reach the stream).
type fakeTools struct{ fail bool }

func (fakeTools) List(context.Context) ([]tools.Spec, error) {
	return []tools.Spec{{Name: "lookup", Description: "looks up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`), Effect: tools.ReadOnly, Permission: tools.Safe}}, nil
}

func (f *fakeTools) Call(context.Context, string, json.RawMessage) (tools.Result, error) {
	if f.fail {
		return tools.Result{Text: "cannot open /etc/secret", IsError: true}, nil
	}
	return tools.Result{Text: "found it"}, nil
}

func TestEngineChatToolEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    bool
		outcome string
	}{
		{"ok", false, `"output":"found it"`},
		{"tool fails", true, `"error":"` + safeMessages[codeToolError] + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := &fakeTools{fail: tc.fail}
			th := startHearth(t, func(c *testConfig) { c.Config.Tools = tools })
			th.model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}}, nil
			}
			th.model.replies <- chunks("done looking")
			code, evs := curlSSE(t, th, engineBody)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			names, text := checkEvents(t, evs)
			if strings.Join(names, ",") != "tool-call,tool-result,text-delta,done" || text != "done looking" {
				t.Fatalf("events %v text %q", names, text)
			}
			if !strings.Contains(evs[1].Data, tc.outcome) || strings.Contains(evs[1].Data, "/etc/secret") {
				t.Fatalf("tool-result = %s", evs[1].Data)
			}
			if !strings.Contains(evs[0].Data, `"arguments":{"q":"x"}`) {
				t.Fatalf("tool-call = %s", evs[0].Data)
			}
		})
	}
}

// ARCH-5/6: each failure has its own code, and the message is the code's
// fixed one: never the provider's text, a path or a key.
func TestEngineChatErrorTaxonomy(t *testing.T) {
	leaky := "open /home/owner/.config/mnemo/token: sk-live-SECRET\ngoroutine 1 [running]:"
	callTool := func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}}, nil
	}
	inToolLoop := func(c *testConfig) { c.Config.Tools, c.Config.MaxIterations = &fakeTools{fail: true}, 1 }
	for _, tc := range []struct {
		name  string
		reply replyFunc
		code  string
		names string
		cfg   func(*testConfig)
	}{
		// The model still calls tools when its model calls run out: the
		// turn ends in its tool loop.
		{"tool loop cut at the iteration limit", callTool, codeToolError, "tool-call,tool-result,error", inToolLoop},
		{"provider before text", failing(&llm.Error{Provider: "openai", Status: 500, Err: errors.New(leaky)}), codeProviderError, "error", nil},
		{"provider mid-stream", failing(&llm.Error{Provider: "openai", Status: 500, Err: errors.New(leaky)}, "partial "), codeProviderError, "text-delta,error", nil},
		{"context overflow", failing(&llm.Error{Provider: "openai", Status: 400, Err: errors.New(leaky), ContextOverflow: true}), codeContextOverflow, "error", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := startHearth(t, tc.cfg)
			th.model.replies <- tc.reply
			code, evs := curlSSE(t, th, engineBody)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			names, _ := checkEvents(t, evs)
			if strings.Join(names, ",") != tc.names {
				t.Fatalf("events %v", names)
			}
			var e errorEvent
			json.Unmarshal([]byte(evs[len(evs)-1].Data), &e)
			if e.Code != tc.code || e.Message != safeMessages[tc.code] {
				t.Fatalf("error = %+v", e)
			}
			for _, ev := range evs {
				for _, bad := range []string{"/home", "sk-live", "goroutine", "token"} {
					if strings.Contains(ev.Data, bad) {
						t.Fatalf("event %s leaks %q: %s", ev.Name, bad, ev.Data)
					}
				}
			}
			if !strings.Contains(th.log.String(), "request_id=") {
				t.Fatal("the failure is not logged with its request id")
			}
		})
	}
}

// Pre-stream errors are statuses: 400 invalid, 401, 503 no agent loop.
func TestEngineChatPreStream(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Model, c.NoModel = nil, fmt.Errorf("no model provider: set MNEMO_PROVIDER") })
	for _, tc := range []struct {
		name, body, token string
		status            int
		missing           string
	}{
		{"no correlation id", `{"messages":[{"role":"user","content":"x"}],"metadata":{}}`, testToken, 400, "metadata.correlation_id"},
		{"no messages", `{"metadata":{"correlation_id":"c"}}`, testToken, 400, "messages"},
		{"no user message", `{"messages":[{"role":"system","content":"x"}],"metadata":{"correlation_id":"c"}}`, testToken, 400, "messages[].role=user"},
		{"wrong token", engineBody, "wrong-token-0123456789", 401, ""},
		{"no agent loop", engineBody, testToken, 503, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := th.doWith(t, "POST", "/engine/chat", tc.body, tc.token, "application/json")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			m := readBody(t, resp, "error")
			if tc.missing != "" {
				cl, _ := m["clarify"].(map[string]any)
				if cl == nil || !strings.Contains(fmt.Sprint(cl["missing_fields"]), tc.missing) {
					t.Fatalf("clarify = %v", m)
				}
			}
		})
	}
	resp := th.doWith(t, "POST", "/engine/chat", `{"messages":[{"role":"user","content":"x"}],"metadata":{"correlation_id":"c","conversation_id":"conv_other"}}`, testToken, "application/json")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown conversation: %d", resp.StatusCode)
	}
	io.Copy(io.Discard, resp.Body)
}
