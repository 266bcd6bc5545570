package httpdoor

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// engineTurn posts one message to /engine/chat (in conversation conv
// when set) and returns its done event.
func engineTurn(t *testing.T, th *testHearth, conv, content string) doneEvent {
	t.Helper()
	meta := map[string]any{"correlation_id": "corr"}
	if conv != "" {
		meta["conversation_id"] = conv
	}
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}, "metadata": meta})
	resp := th.do(t, "POST", "/engine/chat", string(body))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("engine/chat: %d %s", resp.StatusCode, b)
	}
	evs := readSSE(t, resp.Body)
	names, _ := checkEvents(t, evs)
	if names[len(names)-1] != "done" {
		t.Fatalf("engine/chat events %v", names)
	}
	var done doneEvent
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &done); err != nil {
		t.Fatal(err)
	}
	return done
}

// userMessages are the user messages the model was sent in its last
// request.
func (m *scriptModel) lastUsers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, msg := range m.requests[len(m.requests)-1].Messages {
		if msg.Role == llm.RoleUser {
			out = append(out, msg.Content)
		}
	}
	return out
}

// TestEngineChatConversations: without an id /engine/chat starts a new
// conversation that done names; with it, the conversation resumes (the
// model sees its earlier turns, not another's); the list and the history
// show it; an unknown id is 404 before anything streams.
func TestEngineChatConversations(t *testing.T) {
	th := startHearth(t, nil)
	first := engineTurn(t, th, "", "plan a trip to Lisbon")
	if first.ConversationID == "" || first.ConversationID == "main" {
		t.Fatalf("a new conversation's id: %q", first.ConversationID)
	}
	other := engineTurn(t, th, "", "unrelated question")
	if other.ConversationID == first.ConversationID {
		t.Fatal("two requests without an id share a conversation")
	}
	again := engineTurn(t, th, first.ConversationID, "and in May?")
	if again.ConversationID != first.ConversationID {
		t.Fatalf("resumed as %q", again.ConversationID)
	}
	if got := th.model.lastUsers(); !slices.Equal(got, []string{"plan a trip to Lisbon", "and in May?"}) {
		t.Errorf("the resumed turn's window: %q", got)
	}

	m := readBody(t, th.do(t, "GET", "/v1/conversations", nil), "conversation_list")
	data := m["data"].([]any)
	if len(data) != 3 { // main, and the two new ones
		t.Fatalf("listed %d conversations: %v", len(data), data)
	}
	top := data[0].(map[string]any)
	if top["id"] != first.ConversationID || top["title"] != "plan a trip to Lisbon" || top["turns"] != float64(4) {
		t.Errorf("the most recent conversation: %v", top)
	}

	path := "/v1/conversations/" + first.ConversationID
	h := readBody(t, th.do(t, "GET", path, nil), "conversation_history")
	msgs := h["messages"].([]any)
	var texts []string
	for _, x := range msgs {
		texts = append(texts, x.(map[string]any)["content"].(string))
	}
	if len(texts) != 4 || texts[0] != "plan a trip to Lisbon" || texts[2] != "and in May?" || h["more"] != false {
		t.Errorf("history: %q, more %v", texts, h["more"])
	}
	h = readBody(t, th.do(t, "GET", path+"?limit=2", nil), "conversation_history")
	if n := len(h["messages"].([]any)); n != 2 || h["messages"].([]any)[0].(map[string]any)["content"] != "and in May?" {
		t.Errorf("?limit=2: %v", h["messages"])
	}
	firstID := msgs[0].(map[string]any)["id"].(string)
	h = readBody(t, th.do(t, "GET", path+"?after="+firstID+"&limit=1", nil), "conversation_history")
	if n := len(h["messages"].([]any)); n != 1 || h["more"] != true {
		t.Errorf("?after&limit=1: %v, more %v", h["messages"], h["more"])
	}

	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/conversations/nope", "", 404, "conversation_not_found"},
		{"GET", "/v1/conversations/Bad%20Id", "", 404, "conversation_not_found"},
		{"GET", path + "?limit=0", "", 422, "out_of_range"},
		{"GET", path + "?limit=x", "", 422, "out_of_range"},
		{"POST", "/engine/chat", `{"messages":[{"role":"user","content":"x"}],"metadata":{"correlation_id":"c","conversation_id":"nope"}}`, 404, "conversation_not_found"},
		{"POST", "/v1/chat/completions", `{"model":"mnemo","messages":[{"role":"user","content":"x"}],"metadata":{"conversation_id":"nope"}}`, 404, "conversation_not_found"},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		resp := th.do(t, tc.method, tc.path, body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
			continue
		}
		e := readBody(t, resp, "error")
		if code := e["error"].(map[string]any)["code"]; code != tc.code {
			t.Errorf("%s %s: code %v, want %s", tc.method, tc.path, code, tc.code)
		}
	}
}

// TestChatCompletionsConversation: /v1/chat/completions stays on main
// unless metadata.conversation_id or the X-Conversation-ID header names a
// conversation, which the turn then goes to.
func TestChatCompletionsConversation(t *testing.T) {
	th := startHearth(t, nil)
	conv := engineTurn(t, th, "", "first in conv").ConversationID
	post := func(body string, header string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", th.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set(conversationHeader, header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		readBody(t, resp, "chat_completion")
	}
	msg := func(text string) string {
		return fmt.Sprintf(`{"model":"mnemo","messages":[{"role":"user","content":%q}]`, text)
	}
	post(msg("by metadata")+`,"metadata":{"conversation_id":"`+conv+`"}}`, "")
	post(msg("by header")+"}", conv)
	post(msg("on main")+"}", "")
	recs := th.history(t)
	where := map[string]string{}
	for _, r := range recs {
		where[r.Text] = r.Conv
	}
	for text, want := range map[string]string{"first in conv": conv, "by metadata": conv, "by header": conv, "on main": ""} {
		if got := where[text]; got != want {
			t.Errorf("%q stored in conversation %q, want %q", text, got, want)
		}
	}
}

// TestConversationRoutesAuthz: listing and reading conversations is
// conversation read: the owner and a collaborator may, a service may not.
func TestConversationRoutesAuthz(t *testing.T) {
	st, toks := pairedStore(t)
	th := startHearth(t, func(c *testConfig) { c.Door.Auth = st })
	for _, tc := range []struct {
		actor auth.Actor
		want  int
	}{
		{auth.ActorOwner, 200},
		{auth.ActorCollaborator, 200},
		{auth.ActorSystemAgent, 200},
		{auth.ActorBackgroundAgent, 200},
		{auth.ActorExternalAgent, 403},
		{auth.ActorService, 403},
	} {
		for _, path := range []string{"/v1/conversations", "/v1/conversations/main"} {
			resp := th.doWith(t, "GET", path, nil, toks[tc.actor], "")
			if resp.StatusCode != tc.want {
				t.Errorf("%s GET %s: %d, want %d", tc.actor, path, resp.StatusCode, tc.want)
			}
			io.Copy(io.Discard, resp.Body)
		}
	}
}
