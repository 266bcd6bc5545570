package hearth

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
)

// What the model sees of the conversation: pure functions of the core.

func TestBuildContext(t *testing.T) {
	ts := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	rec := func(role, text string) journal.Record { return journal.Record{Role: role, Text: text, TS: ts} }
	step := func(text, resp string, ids ...string) journal.Record {
		r := rec("agent", text)
		r.ResponseID = resp
		for _, id := range ids {
			r.ToolCalls = append(r.ToolCalls, journal.ToolCall{ID: id, Name: "lookup", Arguments: json.RawMessage(`{"q":1}`), Reason: "why"})
		}
		return r
	}
	result := func(id string) journal.Record {
		r := rec("tool", "result "+id)
		r.Tool = &journal.ToolResult{CallID: id, Name: "lookup"}
		return r
	}
	system := []llm.Message{{Role: "system", Content: "anchor"}}
	tests := []struct {
		name     string
		recent   []journal.Record
		turns    int
		tokens   int // 0: no limit
		want     []string
		wantCont *llm.Continuation
	}{
		{
			name:   "window starts at a user turn",
			recent: []journal.Record{rec("user", "a"), step("", "", "c1"), result("c1"), rec("agent", "A"), rec("user", "b")},
			turns:  3,
			want:   []string{"system:anchor", "user:b"},
		},
		{
			name:     "calls with their results, reason restored, continuation after the last response",
			recent:   []journal.Record{rec("user", "a"), step("looking", "resp_9", "c1", "c2"), result("c1"), result("c2"), rec("agent", "done"), rec("user", "b")},
			turns:    10,
			want:     []string{"system:anchor", "user:a", `assistant:looking[c1 {"q":1,"reason":"why"},c2 {"q":1,"reason":"why"}]`, "tool:c1:result c1", "tool:c2:result c2", "assistant:done", "user:b"},
			wantCont: &llm.Continuation{ResponseID: "resp_9", From: 3},
		},
		{
			name:   "a crash mid-tool: unanswered calls are dropped, their text kept",
			recent: []journal.Record{rec("user", "a"), step("looking", "", "c1", "c2"), result("c1"), rec("user", "b")},
			turns:  10,
			want:   []string{"system:anchor", "user:a", "assistant:looking", "user:b"},
		},
		{
			name:   "a tight budget drops the older exchange, its tool pair and its continuation",
			recent: []journal.Record{rec("user", "a"), step("looking", "resp_9", "c1"), result("c1"), rec("agent", "done"), rec("user", "b")},
			turns:  10,
			tokens: 2,
			want:   []string{"system:anchor", "user:b"},
		},
		{
			name:     "a budget that fits the pair keeps it whole",
			recent:   []journal.Record{rec("user", "a"), step("looking", "resp_9", "c1"), result("c1"), rec("agent", "done"), rec("user", "b")},
			turns:    10,
			tokens:   20,
			want:     []string{"system:anchor", "user:a", `assistant:looking[c1 {"q":1,"reason":"why"}]`, "tool:c1:result c1", "assistant:done", "user:b"},
			wantCont: &llm.Continuation{ResponseID: "resp_9", From: 3},
		},
		{
			name:   "voice transcripts count as the user's and the agent's words",
			recent: []journal.Record{{Role: "user", Text: "spoken", Mode: "voice"}, {Role: "agent", Text: "said", Mode: "voice"}},
			turns:  10,
			want:   []string{"system:anchor", "user:spoken", "assistant:said"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens := tt.tokens
			if tokens == 0 {
				tokens = math.MaxInt
			}
			msgs, cont := buildContext(system, contextWindow(tt.recent, tt.turns, tokens))
			var got []string
			for _, m := range msgs {
				s := m.Role + ":"
				if m.Role == llm.RoleTool {
					s += m.ToolCallID + ":"
				}
				s += m.Content
				if len(m.ToolCalls) > 0 {
					var cs []string
					for _, c := range m.ToolCalls {
						cs = append(cs, c.ID+" "+string(c.Arguments))
					}
					s += "[" + strings.Join(cs, ",") + "]"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCont, cont); diff != "" {
				t.Errorf("continuation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContextWindow(t *testing.T) {
	// rec is a record of the given estimated tokens, its id its label.
	rec := func(id, role string, tokens int) journal.Record {
		return journal.Record{ID: id, Role: role, Text: strings.Repeat("x", 4*tokens)}
	}
	step := func(id, callID string) journal.Record {
		r := rec(id, "agent", 0)
		r.ToolCalls = []journal.ToolCall{{ID: callID, Name: "look", Arguments: json.RawMessage(`{"q":"12345678"}`), Reason: "whyy"}} // 1 + 4 + 1 tokens
		return r
	}
	result := func(id, callID string, tokens int) journal.Record {
		r := rec(id, "tool", tokens)
		r.Tool = &journal.ToolResult{CallID: callID, Name: "look"}
		return r
	}
	conversation := []journal.Record{rec("u1", "user", 10), rec("a1", "agent", 10), rec("u2", "user", 10), rec("a2", "agent", 10)}
	withTools := []journal.Record{rec("u1", "user", 5), step("s1", "c1"), result("t1", "c1", 10), rec("a1", "agent", 4), rec("u2", "user", 5)}
	tests := []struct {
		name   string
		recent []journal.Record
		turns  int
		tokens int
		want   []string
	}{
		{"everything fits", conversation, 100, 40, []string{"u1", "a1", "u2", "a2"}},
		{"the oldest exchange is dropped when over budget", conversation, 100, 39, []string{"u2", "a2"}},
		{"a budget ending mid-exchange starts at the next user turn", conversation, 100, 30, []string{"u2", "a2"}},
		{"the newest user turn always, even alone over budget", []journal.Record{rec("u1", "user", 1), rec("a1", "agent", 1), rec("u2", "user", 100)}, 100, 20, []string{"u2"}},
		{"and what follows it", []journal.Record{rec("u1", "user", 1), rec("u2", "user", 50), step("s1", "c1"), result("t1", "c1", 50)}, 100, 20, []string{"u2", "s1", "t1"}},
		{"a zero allowance still sends the newest user turn", conversation, 100, 0, []string{"u2", "a2"}},
		{"a tool call and its result stay together (both in)", withTools, 100, 30, []string{"u1", "s1", "t1", "a1", "u2"}},
		{"a tool call and its result stay together (both out)", withTools, 100, 29, []string{"u2"}},
		{"the turn cap still applies", conversation, 3, 1000, []string{"u2", "a2"}},
		{"no user turn, no window", []journal.Record{rec("a1", "agent", 1)}, 100, 1000, nil},
		{"nothing yet", nil, 100, 1000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range contextWindow(tt.recent, tt.turns, tt.tokens) {
				got = append(got, r.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("window (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInjectMemories(t *testing.T) {
	sys := llm.Message{Role: "system", Content: "anchor"}
	u1 := llm.Message{Role: "user", Content: "old"}
	a1 := llm.Message{Role: "assistant", Content: "reply"}
	u2 := llm.Message{Role: "user", Content: "new"}
	tests := []struct {
		name  string
		msgs  []llm.Message
		cont  *llm.Continuation
		block string
		want  []llm.Message
	}{
		{"nothing to add", []llm.Message{sys, u2}, nil, "", []llm.Message{sys, u2}},
		{"into the one system message", []llm.Message{sys, u1, a1, u2}, nil, "MEM",
			[]llm.Message{{Role: "system", Content: "anchor\n\nMEM"}, u1, a1, u2}},
		{"before the newest turn when continuing", []llm.Message{sys, u1, a1, u2}, &llm.Continuation{ResponseID: "r", From: 3}, "MEM",
			[]llm.Message{sys, u1, a1, {Role: "system", Content: "MEM"}, u2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, injectMemories(tt.msgs, tt.cont, tt.block)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
