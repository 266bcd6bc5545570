package httpdoor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm"
)

// otherModel is a second configured provider: it answers with its name.
type otherModel struct{}

func (otherModel) Name() string  { return "other" }
func (otherModel) Model() string { return "other-2" }
func (otherModel) Stream(_ context.Context, _ llm.Request, onText func(string)) (llm.Response, error) {
	onText("from other-2")
	return llm.Response{Text: "from other-2", Model: "other-2"}, nil
}

// TestModelChoice: a chat request's model picks, for its turn only, one
// of the configured models by either of the names GET /v1/models lists;
// none or "mnemo" is the conversation's; any other name is 404
// model_not_found and stores nothing. After it all, the conversation's
// model is still its own.
func TestModelChoice(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Others = append(c.Others, otherModel{}) })
	resp := th.do(t, "GET", "/v1/models", nil)
	var ids []string
	for _, m := range readBody(t, resp, "model_list")["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	if got := strings.Join(ids, ","); got != "mnemo,script-1,script/script-1,other-2,other/other-2" {
		t.Fatalf("/v1/models lists %s", got)
	}
	stored := 0
	for _, tt := range []struct {
		route, model string
		want         string // the reply's start; "" for 404
	}{
		{"/v1/chat/completions", "mnemo", "echo: "},
		{"/v1/chat/completions", "script-1", "echo: "},
		{"/v1/chat/completions", "other-2", "from other-2"},
		{"/v1/chat/completions", "other/other-2", "from other-2"},
		{"/v1/chat/completions", "other/script-1", ""},
		{"/v1/chat/completions", "gpt-4o", ""},
		{"/engine/chat", "", "echo: "},
		{"/engine/chat", "other/other-2", "from other-2"},
		{"/engine/chat", "script/script-1", "echo: "},
		{"/engine/chat", "claude", ""},
	} {
		t.Run(strings.ReplaceAll(tt.route+" "+tt.model, "/", "_"), func(t *testing.T) {
			var body map[string]any
			msgs := []map[string]string{{"role": "user", "content": "which model?"}}
			if tt.route == "/engine/chat" {
				body = map[string]any{"messages": msgs, "metadata": map[string]any{"correlation_id": "c1"}}
			} else {
				body = map[string]any{"messages": msgs}
			}
			if tt.model != "" {
				body["model"] = tt.model
			}
			resp := th.do(t, "POST", tt.route, body)
			if tt.want == "" {
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("status %d, want 404", resp.StatusCode)
				}
				m := readBody(t, resp, "error")
				if e := m["error"].(map[string]any); e["code"] != "model_not_found" || e["param"] != "model" {
					t.Fatalf("error %v, want model_not_found on param model", e)
				}
				if n := len(th.history(t)); n != stored {
					t.Fatalf("a refused request was stored: %d records, want %d", n, stored)
				}
				return
			}
			stored += 2
			var text string
			if tt.route == "/engine/chat" {
				_, text = checkEvents(t, readSSE(t, resp.Body))
			} else {
				b, _ := io.ReadAll(resp.Body)
				var out chatCompletion
				if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				text = *out.Choices[0].Message.Content
				if want := map[bool]string{true: "other-2", false: "script-1"}[strings.HasPrefix(tt.want, "from other")]; out.Model != want {
					t.Errorf("answer's model %q, want %q", out.Model, want)
				}
			}
			if !strings.HasPrefix(text, tt.want) {
				t.Fatalf("reply %q, want it from %q", text, tt.want)
			}
		})
	}
	if m := readBody(t, th.do(t, "GET", "/v1/stats", nil), "stats"); m["model"] != "script-1" {
		t.Fatalf("the conversation's model is now %v, want script-1 still", m["model"])
	}
}
