package ndjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall/indexer"
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
	th := startHearth(t, "", func(c *testConfig) { c.Model = model; c.Tools = ft })
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
	th := startHearth(t, "", func(c *testConfig) { c.Model = model; c.Tools = &fakeTools{} })
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
			th := startHearth(t, "", func(c *testConfig) {
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
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
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
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
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
	th := startHearth(t, "", func(c *testConfig) {
		c.Search = func(_ context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
			if req.Query == "boom" {
				return nil, errors.New("/var/lib/index corrupt")
			}
			return []memory.Hit{{ID: "1", Role: "user", Text: "about " + req.Query, Score: float64(req.K)}}, nil
		}
	})
	c := dial(t, th.addr)
	c.Send(&ipc.Search{Query: "tea", Ref: "s"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.SearchResults); return ok })
	res := got[len(got)-1].(*ipc.SearchResults)
	want := &ipc.SearchResults{Ref: "s", Results: []ipc.SearchHit{{Turn: ipc.Turn{ID: "1", Role: "user", Content: "about tea", Mode: ipc.ModeText}, Score: hearth.DefaultSearchResults}}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("search results (-want +got):\n%s", diff)
	}
	c.Send(&ipc.Search{Query: "boom", Ref: "b"})
	got = recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeInternal || strings.Contains(e.Message, "/var") {
		t.Errorf("failed search = %+v", e)
	}
}

func TestRelevantMemoriesReachTheModelNotTheJournal(t *testing.T) {
	model := newScriptModel()
	var gotQuery string
	var gotExclude map[string]bool
	var appended []string
	var mu sync.Mutex
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = model
		c.Context = func() ([]llm.Message, error) { return []llm.Message{{Role: "system", Content: "anchor"}}, nil }
		c.Memories = func(_ context.Context, req memory.ContextRequest) string {
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

// TestContextBudgetChangesNextTurn changes the context budget between
// messages: the next turn runs with the new total and shares (a smaller
// recent window, other memory allowances), with no restart, and going
// back restores the defaults. What is injected never reaches the journal.
// (That an edit of preferences.json is such a change, and that a broken
// edit gives the base budget, is the daemon's budgetResolver: see its
// TestPreferencesChangeContextBudgetNextTurn.)
func TestContextBudgetChangesNextTurn(t *testing.T) {
	model := newScriptModel()
	var mu sync.Mutex
	var reqs []memory.ContextRequest
	budget := hearth.DefaultContextBudget()
	setBudget := func(b hearth.ContextBudget) {
		mu.Lock()
		defer mu.Unlock()
		budget = b
	}
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = model
		c.ResolveBudget = func() hearth.ContextBudget {
			mu.Lock()
			defer mu.Unlock()
			return budget
		}
		c.Memories = func(_ context.Context, req memory.ContextRequest) string {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			return fmt.Sprintf("%s\n- injected memory %d", indexer.InjectedSentinel, len(reqs))
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
	lastMemoryRequest := func() memory.ContextRequest {
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
	// The default shares: 10% for notes, 5% for older turns (which also
	// get what the notes leave), 10% for tool results.
	if got := lastMemoryRequest(); got.Knowledge != 2400 || got.Turns != 1200 || got.Tools != 2400 {
		t.Errorf("first turn allowances = %d/%d/%d, want the default 2400/1200/2400", got.Knowledge, got.Turns, got.Tools)
	}

	setBudget(hearth.ContextBudget{Tokens: 2000, Shares: hearth.ContextShares{Recent: 50, Memories: 30, Tools: 20}})
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

	setBudget(hearth.DefaultContextBudget())
	send("third")
	if got := lastMemoryRequest(); got.Knowledge != 2400 || got.Turns != 1200 || got.Tools != 2400 {
		t.Errorf("back to the default, allowances = %d/%d/%d, want 2400/1200/2400", got.Knowledge, got.Turns, got.Tools)
	}
	if diff := cmp.Diff([]string{"first lo", "second", "third"}, userTexts()); diff != "" {
		t.Errorf("with the base budget the model saw user turns (-want +got):\n%s", diff)
	}

	recs, err := th.journal.Tail(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(r.Text, "injected memory") || strings.Contains(r.Text, indexer.InjectedSentinel) {
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
	first := startHearth(t, dir, func(c *testConfig) { c.Model = model })
	c := dial(t, first.addr)
	c.Send(&ipc.Message{Content: "I planted tomatoes in May"})
	recvUntil(t, c, isDone)
	c.Close()
	first.stop(t)

	var mu sync.Mutex
	var reqs []memory.ContextRequest
	second := startHearth(t, dir, func(c *testConfig) {
		c.Model = model
		c.Context = func() ([]llm.Message, error) { return []llm.Message{{Role: "system", Content: "anchor"}}, nil }
		c.Memories = func(_ context.Context, req memory.ContextRequest) string {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			if req.Session {
				req.Injected["old-tomato-turn"] = true
				return indexer.InjectedSentinel + "\n- [2026-05-01] user: the tomatoes need staking"
			}
			return indexer.InjectedSentinel + "\n- per-turn memory"
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
	def := hearth.DefaultContextBudget().Allowance()
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
