package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

// fakeTools is an agent.Tools with one safe and one confirm tool.
type fakeTools struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeTools) List(context.Context) ([]tools.Spec, error) {
	obj := json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`)
	return []tools.Spec{
		{Name: "lookup", Description: "look up", Parameters: obj, Effect: tools.ReadOnly, Permission: tools.Safe},
		{Name: "save", Description: "save", Parameters: obj, Effect: tools.WritesLocal, Permission: tools.Confirm},
		{Name: "fail", Description: "fails", Parameters: obj, Effect: tools.ReadOnly, Permission: tools.Safe},
	}, nil
}

func (f *fakeTools) Call(_ context.Context, name string, args json.RawMessage) (tools.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
	if name == "fail" {
		return tools.Result{Text: "disk on fire", IsError: true}, nil
	}
	return tools.Result{Text: name + " ok " + string(args)}, nil
}

func toolCall(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// askThenAnswer scripts one tool round: the model asks for calls, then
// answers with final once it sees the results.
func askThenAnswer(m *scriptModel, text string, calls []llm.ToolCall, final string) {
	m.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		if text != "" {
			onText(text)
		}
		return llm.Response{Text: text, ToolCalls: calls, ResponseID: "resp_1"}, nil
	}
	m.replies <- chunks(final)
}

func types(msgs []ipc.Msg) []string {
	var out []string
	for _, m := range msgs {
		t := m.Type()
		if s, ok := m.(*ipc.Status); ok {
			t += ":" + s.State
		}
		out = append(out, t)
	}
	return out
}

func TestToolTurnIsStreamedAndJournaled(t *testing.T) {
	model := newScriptModel()
	ft := &fakeTools{}
	th := startHearth(t, "", func(c *Config) { c.Model = model; c.Tools = ft })
	c := dial(t, th.addr)
	askThenAnswer(model, "let me look", []llm.ToolCall{toolCall("c1", "lookup", `{"q":"tea","password":"hunter2","reason":"owner asked"}`)}, "found tea")
	c.Send(&ipc.Message{Content: "what tea?", Ref: "r"})
	got := recvUntil(t, c, isDone)

	want := []string{"turn", "status:thinking", "token", "turn", "status:tool", "tool_call", "tool_result", "status:thinking", "token", "done"}
	if diff := cmp.Diff(want, types(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	step := got[3].(*ipc.TurnStored).Turn
	if step.Role != ipc.RoleAgent || step.Content != "let me look" || len(step.ToolCalls) != 1 || step.ToolCalls[0].Reason != "owner asked" {
		t.Errorf("step turn = %+v", step)
	}
	call := got[5].(*ipc.ToolCall)
	args, _ := json.Marshal(call.Arguments)
	if call.Name != "lookup" || call.Reason != "owner asked" || strings.Contains(string(args), "hunter2") || strings.Contains(string(args), "reason") {
		t.Errorf("tool_call = %+v args %s: want the name, the reason, redacted arguments without the reason", call, args)
	}
	res := got[6].(*ipc.ToolResult)
	if res.Name != "lookup" || !strings.HasPrefix(res.Result, "lookup ok") || res.Error != "" {
		t.Errorf("tool_result = %+v", res)
	}
	done := got[len(got)-1].(*ipc.Done)
	if done.Turn.Content != "found tea" {
		t.Errorf("done = %+v", done.Turn)
	}

	// The journal holds user, step, tool outcome, answer; the model's
	// second request carried the step and the result.
	recs, err := th.journal.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, r := range recs {
		roles = append(roles, r.Role)
	}
	if diff := cmp.Diff([]string{"user", "agent", "tool", "agent"}, roles); diff != "" {
		t.Errorf("journal roles (-want +got):\n%s", diff)
	}
	if tr := recs[2].Tool; tr == nil || tr.CallID != "c1" || tr.Reason != "owner asked" || strings.Contains(string(tr.Arguments), "hunter2") {
		t.Errorf("tool record = %+v", tr)
	}
	if recs[1].ResponseID != "resp_1" {
		t.Errorf("step record response id = %q, want resp_1", recs[1].ResponseID)
	}
	req := model.lastRequest()
	last := req.Messages[len(req.Messages)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "c1" {
		t.Errorf("last message of the second request = %+v, want the tool result", last)
	}
	if req.Continue == nil || req.Continue.ResponseID != "resp_1" {
		t.Errorf("second request continues from %+v, want resp_1", req.Continue)
	}

	// A client connecting now sees the tool turn in history.
	h := dial(t, th.addr).History()
	var tool *ipc.Turn
	for i := range h.Turns {
		if h.Turns[i].Role == ipc.RoleTool {
			tool = &h.Turns[i]
		}
	}
	if tool == nil || tool.Tool == nil || tool.Tool.Name != "lookup" {
		t.Errorf("history tool turn = %+v", tool)
	}
}

func TestFailedToolIsReportedAndTurnGoesOn(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *Config) { c.Model = model; c.Tools = &fakeTools{} })
	c := dial(t, th.addr)
	askThenAnswer(model, "", []llm.ToolCall{toolCall("c1", "fail", `{"reason":"try"}`)}, "it failed, sorry")
	c.Send(&ipc.Message{Content: "do it"})
	got := recvUntil(t, c, isDone)
	var codes []string
	for _, m := range got {
		if e, ok := m.(*ipc.Error); ok {
			codes = append(codes, e.Code)
		}
		if r, ok := m.(*ipc.ToolResult); ok && r.Error != "disk on fire" {
			t.Errorf("tool_result = %+v, want the tool's error", r)
		}
	}
	if diff := cmp.Diff([]string{ipc.CodeToolError}, codes); diff != "" {
		t.Errorf("error codes (-want +got):\n%s", diff)
	}
	if d := got[len(got)-1].(*ipc.Done); d.Turn.Content != "it failed, sorry" {
		t.Errorf("final answer = %q", d.Turn.Content)
	}
}

func TestConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *bool
		wantRan bool
	}{
		{"approved", ptr(true), true},
		{"declined", ptr(false), false},
		{"no answer", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := newScriptModel()
			ft := &fakeTools{}
			th := startHearth(t, "", func(c *Config) {
				c.Model = model
				c.Tools = ft
				c.ConfirmTimeout = 200 * time.Millisecond
			})
			owner, other := dial(t, th.addr), dial(t, th.addr)
			askThenAnswer(model, "", []llm.ToolCall{toolCall("c9", "save", `{"path":"x","reason":"keep it"}`)}, "ok")
			owner.Send(&ipc.Message{Content: "save it"})
			got := recvUntil(t, owner, func(m ipc.Msg) bool { _, ok := m.(*ipc.ConfirmRequest); return ok })
			req := got[len(got)-1].(*ipc.ConfirmRequest)
			if req.ID != "c9" || req.Name != "save" || req.Reason != "keep it" || req.Effect != string(tools.WritesLocal) {
				t.Errorf("confirm_request = %+v", req)
			}
			if tc.answer != nil {
				other.Send(&ipc.Confirm{ID: req.ID, Approve: *tc.answer}) // any client may answer
			}
			recvUntil(t, owner, isDone)
			ft.mu.Lock()
			ran := len(ft.calls) == 1
			ft.mu.Unlock()
			if ran != tc.wantRan {
				t.Errorf("tool ran = %v, want %v", ran, tc.wantRan)
			}
			recs, _ := th.journal.Tail(10)
			tr := recs[2].Tool
			if tr == nil || (tc.answer == nil && (tr.Confirmed == nil || *tr.Confirmed)) || (tc.answer != nil && (tr.Confirmed == nil || *tr.Confirmed != *tc.answer)) {
				t.Errorf("journaled confirmation = %+v, want %v", tr, tc.answer)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCancel(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *Config) { c.Model = model })
	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		onText("I was saying")
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	a, b := dial(t, th.addr), dial(t, th.addr)
	a.Send(&ipc.Message{Content: "talk", Ref: "t"})
	recvUntil(t, b, func(m ipc.Msg) bool { _, ok := m.(*ipc.Token); return ok })
	b.Send(&ipc.Cancel{})
	got := recvUntil(t, a, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	var done *ipc.Done
	for _, m := range got {
		if d, ok := m.(*ipc.Done); ok {
			done = d
		}
	}
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeCancelled || e.Ref != "t" {
		t.Errorf("error = %+v, want cancelled", e)
	}
	if done == nil || !done.Turn.Incomplete || done.Turn.Content != "I was saying" {
		t.Errorf("done = %+v, want the partial reply, incomplete", done)
	}
	// Nothing to cancel now.
	b.Send(&ipc.Cancel{Ref: "again"})
	got = recvUntil(t, b, func(m ipc.Msg) bool { e, ok := m.(*ipc.Error); return ok && e.Ref == "again" })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeBadRequest {
		t.Errorf("second cancel = %+v, want bad_request", e)
	}
}

func TestContextOverflowError(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *Config) { c.Model = model })
	model.replies <- func(context.Context, llm.Request, func(string)) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Provider: "p", Status: 400, ContextOverflow: true, Err: errors.New("too long")}
	}
	c := dial(t, th.addr)
	c.Send(&ipc.Message{Content: "x"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeContextOverflow || strings.Contains(e.Message, "too long\"") {
		t.Errorf("error = %+v, want context_overflow with the fixed message", e)
	}
}

func TestSearch(t *testing.T) {
	th := startHearth(t, "", func(c *Config) {
		c.Search = func(_ context.Context, req tools.SearchRequest) ([]tools.Hit, error) {
			if req.Query == "boom" {
				return nil, errors.New("/var/lib/index corrupt")
			}
			return []tools.Hit{{ID: "1", Role: "user", Text: "about " + req.Query, Score: float64(req.K)}}, nil
		}
	})
	c := dial(t, th.addr)
	c.Send(&ipc.Search{Query: "tea", Ref: "s"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.SearchResults); return ok })
	res := got[len(got)-1].(*ipc.SearchResults)
	want := &ipc.SearchResults{Ref: "s", Results: []ipc.SearchHit{{Turn: ipc.Turn{ID: "1", Role: "user", Content: "about tea", Mode: ipc.ModeText}, Score: defaultSearchResults}}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("search results (-want +got):\n%s", diff)
	}
	c.Send(&ipc.Search{Query: "boom", Ref: "b"})
	got = recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeInternal || strings.Contains(e.Message, "/var") {
		t.Errorf("failed search = %+v", e)
	}
}

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

func TestPreferencesSwapModelWithoutRestart(t *testing.T) {
	files := map[string]string{}
	var mu sync.Mutex
	read := func(name string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}
	env := map[string]string{"XAI_API_KEY": "xk", "ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"}
	r := newModelResolver(newPrefsReader(read, nil), func(k string) string { return env[k] }, nil)
	check := func(wantProvider, wantModel string) {
		t.Helper()
		m, err := r.Resolve()
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if m.Name() != wantProvider || m.Model() != wantModel {
			t.Errorf("model = %s %s, want %s %s", m.Name(), m.Model(), wantProvider, wantModel)
		}
	}
	check("xai", llm.DefaultXAIModel)
	files[PreferencesFile] = `{"model":"grok-4.5"}`
	check("xai", "grok-4.5")
	files[PreferencesFile] = `{"provider":"anthropic","model":"claude-opus-4"}`
	check("anthropic", "claude-opus-4")
	files[PreferencesFile] = `{"provider":"openai"}`
	check("openai", llm.DefaultOpenAIModel)
	files[PreferencesFile] = `{not json`
	check("xai", llm.DefaultXAIModel) // a broken file is ignored, not fatal
	files[PreferencesFile] = `{"provider":"mystery"}`
	if _, err := r.Resolve(); err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Errorf("unknown provider preference: err = %v", err)
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

func TestRelevantMemoriesReachTheModelNotTheJournal(t *testing.T) {
	model := newScriptModel()
	var gotQuery string
	var gotExclude map[string]bool
	var appended []string
	var mu sync.Mutex
	th := startHearth(t, "", func(c *Config) {
		c.Model = model
		c.Context = func() ([]llm.Message, error) { return []llm.Message{{Role: "system", Content: "anchor"}}, nil }
		c.Memories = func(_ context.Context, req MemoryRequest) string {
			mu.Lock()
			defer mu.Unlock()
			gotQuery, gotExclude = req.Query, req.Exclude
			return "<!-- mnemo:injected -->\n- you planted tomatoes in May"
		}
		c.OnAppend = func(id string) {
			mu.Lock()
			appended = append(appended, id)
			mu.Unlock()
		}
	})
	c := dial(t, th.addr)
	c.Send(&ipc.Message{Content: "what did I plant?"})
	got := recvUntil(t, c, isDone)
	user := got[0].(*ipc.TurnStored).Turn
	done := got[len(got)-1].(*ipc.Done).Turn
	sys := model.lastRequest().Messages[0]
	if !strings.Contains(sys.Content, "anchor") || !strings.Contains(sys.Content, "planted tomatoes") {
		t.Errorf("system message = %q, want the anchor and the memories", sys.Content)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotQuery != "what did I plant?" || !gotExclude[user.ID] {
		t.Errorf("memories asked for %q excluding %v", gotQuery, gotExclude)
	}
	if diff := cmp.Diff([]string{user.ID, done.ID}, appended); diff != "" {
		t.Errorf("records announced to the indexer (-want +got):\n%s", diff)
	}
	recs, _ := th.journal.Tail(10)
	for _, r := range recs {
		if strings.Contains(r.Text, "tomatoes") {
			t.Errorf("injected memories reached the journal: %+v", r)
		}
	}
}

// TestPreferencesChangeContextBudgetNextTurn edits the context budget in
// preferences.json between messages: the next turn runs with the new total
// and shares (a smaller recent window, other memory allowances), with no
// restart; a broken edit falls back to the base budget. What is injected
// never reaches the journal.
func TestPreferencesChangeContextBudgetNextTurn(t *testing.T) {
	model := newScriptModel()
	files := &prefsFiles{}
	var mu sync.Mutex
	var reqs []MemoryRequest
	th := startHearth(t, "", func(c *Config) {
		c.Model = model
		c.ResolveBudget = (&budgetResolver{prefs: newPrefsReader(files.read, c.Log), base: DefaultContextBudget()}).Resolve
		c.Memories = func(_ context.Context, req MemoryRequest) string {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			return fmt.Sprintf("%s\n- injected memory %d", InjectedSentinel, len(reqs))
		}
	})
	c := dial(t, th.addr)
	send := func(text string) (user, reply ipc.Turn) {
		t.Helper()
		c.Send(&ipc.Message{Content: text})
		got := recvUntil(t, c, isDone)
		for _, m := range got {
			if s, ok := m.(*ipc.TurnStored); ok {
				user = s.Turn
			}
		}
		return user, got[len(got)-1].(*ipc.Done).Turn
	}
	lastMemoryRequest := func() MemoryRequest {
		mu.Lock()
		defer mu.Unlock()
		return reqs[len(reqs)-1]
	}
	userTexts := func() []string {
		var out []string
		for _, m := range model.lastRequest().Messages {
			if m.Role == llm.RoleUser {
				out = append(out, m.Content[:min(len(m.Content), 8)])
			}
		}
		return out
	}

	long := "first " + strings.Repeat("long words ", 400) // about 1100 tokens, and its echo as many
	first, firstReply := send(long)
	if got := lastMemoryRequest(); got.Turns != 3600 || got.Tools != 2400 {
		t.Errorf("first turn allowances = %d/%d, want the default 3600/2400", got.Turns, got.Tools)
	}

	files.set(`{"context":{"budget_tokens":2000,"shares":{"recent":50,"memories":30,"tools":20}}}`)
	second, _ := send("second")
	got := lastMemoryRequest()
	if got.Turns != 600 || got.Tools != 400 {
		t.Errorf("after the edit allowances = %d/%d, want 600/400", got.Turns, got.Tools)
	}
	if diff := cmp.Diff([]string{"second"}, userTexts()); diff != "" {
		t.Errorf("with 1000 recent tokens the model saw user turns (-want +got):\n%s", diff)
	}
	if got.Exclude[first.ID] || got.Exclude[firstReply.ID] || !got.Exclude[second.ID] {
		t.Errorf("excluded %v: want the window (the second turn) only, so older turns may be recalled", got.Exclude)
	}
	if sys := model.lastRequest().Messages[0]; sys.Role != llm.RoleSystem || !strings.Contains(sys.Content, "injected memory 2") {
		t.Errorf("first message = %s %.80q, want the injected memories", sys.Role, sys.Content)
	}

	files.set(`{"context":{"shares":{"recent":95}}}`) // 120%: ignored
	send("third")
	if got := lastMemoryRequest(); got.Turns != 3600 || got.Tools != 2400 {
		t.Errorf("after a broken edit allowances = %d/%d, want the base 3600/2400", got.Turns, got.Tools)
	}
	if diff := cmp.Diff([]string{"first lo", "second", "third"}, userTexts()); diff != "" {
		t.Errorf("with the base budget the model saw user turns (-want +got):\n%s", diff)
	}

	recs, err := th.journal.Tail(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(r.Text, "injected memory") || strings.Contains(r.Text, InjectedSentinel) {
			t.Errorf("injected context reached the journal: %+v", r)
		}
	}
}

// TestSessionOpensWithRelevantMemories restarts hearth over a journal: the
// first turn of the new session carries, once, the memories relevant to
// where the conversation left off (seed 004), which later blocks leave
// out; the per-turn block gets the other half of the memory allowance,
// and nothing injected reaches the journal.
func TestSessionOpensWithRelevantMemories(t *testing.T) {
	dir := t.TempDir()
	model := newScriptModel()
	first := startHearth(t, dir, func(c *Config) { c.Model = model })
	c := dial(t, first.addr)
	c.Send(&ipc.Message{Content: "I planted tomatoes in May"})
	recvUntil(t, c, isDone)
	c.Close()
	first.stop(t)

	var mu sync.Mutex
	var reqs []MemoryRequest
	second := startHearth(t, dir, func(c *Config) {
		c.Model = model
		c.Context = func() ([]llm.Message, error) { return []llm.Message{{Role: "system", Content: "anchor"}}, nil }
		c.Memories = func(_ context.Context, req MemoryRequest) string {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			if req.Session {
				req.Injected["old-tomato-turn"] = true
				return InjectedSentinel + "\n- [2026-05-01] user: the tomatoes need staking"
			}
			return InjectedSentinel + "\n- per-turn memory"
		}
	})
	c = dial(t, second.addr)
	for _, text := range []string{"what should I cook tonight?", "and tomorrow?"} {
		c.Send(&ipc.Message{Content: text})
		recvUntil(t, c, isDone)
	}
	sys := model.lastRequest().Messages[0]
	if !strings.Contains(sys.Content, "anchor") || !strings.Contains(sys.Content, "tomatoes need staking") {
		t.Errorf("system message = %q, want the anchor and the opening memories", sys.Content)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("%d memory requests, want 3 (the opening one, then one per turn): %+v", len(reqs), reqs)
	}
	open, perTurn := reqs[0], reqs[1:]
	if !open.Session || !strings.Contains(open.Query, "I planted tomatoes in May") {
		t.Errorf("opening request = %+v, want a session request for where we left off", open)
	}
	recs, err := second.journal.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	if !open.Exclude[recs[0].ID] {
		t.Errorf("opening request does not leave out the turns already in the window: %v", open.Exclude)
	}
	def := DefaultContextBudget().Allowance()
	for i, r := range perTurn {
		if r.Session || !r.Exclude["old-tomato-turn"] {
			t.Errorf("turn %d: request %+v should be per turn and leave out what the opening block showed", i, r)
		}
		if r.Turns != def.Memories-def.Memories/2 || open.Turns != def.Memories/2 {
			t.Errorf("turn %d: allowances %d (opening) + %d (turn), want the memory share split in two", i, open.Turns, r.Turns)
		}
	}
	for _, r := range recs {
		if strings.Contains(r.Text, "staking") || strings.Contains(r.Text, "per-turn memory") {
			t.Errorf("injected memories reached the journal: %+v", r)
		}
	}
}
