package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// engineChat posts a message to /engine/chat (in conversation conv when
// set) and returns the stream and the done event's conversation id.
func engineChat(t *testing.T, base, conv, content string) (string, string) {
	t.Helper()
	meta := map[string]any{"correlation_id": "corr-conv"}
	if conv != "" {
		meta["conversation_id"] = conv
	}
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}, "metadata": meta})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/engine/chat", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+hearthtest.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("engine/chat: %d %s", resp.StatusCode, s)
	}
	i := strings.Index(s, "event: done\ndata: ")
	if i < 0 {
		t.Fatalf("no done event:\n%s", s)
	}
	var done struct {
		ConversationID string `json:"conversation_id"`
	}
	line, _, _ := strings.Cut(s[i+len("event: done\ndata: "):], "\n")
	if err := json.Unmarshal([]byte(line), &done); err != nil {
		t.Fatal(err)
	}
	return s, done.ConversationID
}

// ARCH-3 for conversations, with the real binaries: a conversation
// started on /engine/chat is listed and resumed over NDJSON with its
// history, continued there, read back on HTTP, and after a restart it is
// all still there (mnemo conversations lists it).
func TestConversationAcrossDoorsE2E(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model), "-http", "127.0.0.1:0")
	base := "http://" + httpListening.FindStringSubmatch(d.Log())[1]

	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Lisbon "}, {Text: "it is"}}})
	stream, conv := engineChat(t, base, "", "plan a trip to Lisbon")
	if conv == "" || conv == "main" || deltaText(stream) != "Lisbon it is" {
		t.Fatalf("a new conversation: %q\n%s", conv, stream)
	}

	c := mustDial(t, d.Addr)
	if c.History().ConversationID != "main" || len(c.History().Turns) != 0 {
		t.Fatalf("main's snapshot holds another conversation's turns: %+v", c.History().Turns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recv := func(ok func(ipc.Msg) bool) ipc.Msg {
		t.Helper()
		for {
			m, err := c.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok(m) {
				return m
			}
		}
	}
	c.Send(&ipc.Conversations{Ref: "l1"})
	list := recv(func(m ipc.Msg) bool { return m.Type() == ipc.TypeConversationList }).(*ipc.ConversationList)
	if len(list.Conversations) != 2 || list.Conversations[0].ID != conv || list.Conversations[0].Title != "plan a trip to Lisbon" || list.Conversations[0].Turns != 2 {
		t.Fatalf("conversation_list: %+v", list.Conversations)
	}
	c.Send(&ipc.Resume{ConversationID: conv, Ref: "r1"})
	h := recv(func(m ipc.Msg) bool { _, ok := m.(*ipc.History); return ok }).(*ipc.History)
	if h.ConversationID != conv || len(h.Turns) != 2 || h.Turns[0].Content != "plan a trip to Lisbon" || h.Turns[1].Content != "Lisbon it is" {
		t.Fatalf("history on resume: %+v", h)
	}
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "May is mild"}}})
	c.Send(&ipc.Message{Content: "and in May?", Ref: "m1"})
	recv(func(m ipc.Msg) bool { return m.Type() == ipc.TypeDone })
	// The model was sent the conversation's earlier turns.
	reqs := model.Requests()
	seen := ""
	for _, m := range reqs[len(reqs)-1].Messages {
		seen += m.Content + "|"
	}
	if !strings.Contains(seen, "plan a trip to Lisbon") {
		t.Errorf("the NDJSON turn's request lacks the HTTP turn: %s", seen)
	}

	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "pack light"}}})
	if _, again := engineChat(t, base, conv, "what to pack?"); again != conv {
		t.Fatalf("resumed as %q", again)
	}
	getHistory := func(base string) []string {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/v1/conversations/"+conv, nil)
		req.Header.Set("Authorization", "Bearer "+hearthtest.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range out.Messages {
			texts = append(texts, m.Content)
		}
		return texts
	}
	want := "plan a trip to Lisbon|Lisbon it is|and in May?|May is mild|what to pack?|pack light"
	if got := strings.Join(getHistory(base), "|"); got != want {
		t.Fatalf("HTTP history: %s", got)
	}
	c.Close()
	d.Stop(t)

	// After a restart: listed by mnemo, the same history.
	d = startDaemon(t, root, openaiEnv(model), "-http", "127.0.0.1:0")
	base = "http://" + httpListening.FindStringSubmatch(d.Log())[1]
	if got := strings.Join(getHistory(base), "|"); got != want {
		t.Fatalf("HTTP history after a restart: %s", got)
	}
	out := runMnemo(t, d.Addr, "conversations")
	if !strings.Contains(out, conv) || !strings.Contains(out, "plan a trip to Lisbon") {
		t.Fatalf("mnemo conversations:\n%s", out)
	}
	out = runMnemo(t, d.Addr, "history", "--conversation", conv)
	if !strings.Contains(out, "what to pack?") || strings.Count(out, "\n") < 6 {
		t.Fatalf("mnemo history --conversation:\n%s", out)
	}
	d.Stop(t)
}
