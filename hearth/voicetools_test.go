package hearth_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory"
)

// voiceToolbox is an agent.Tools with a tool of each kind; it records the
// calls that reached it.
type voiceToolbox struct {
	mu      sync.Mutex
	calls   []string
	started chan struct{} // "slow" says it runs
}

func (b *voiceToolbox) List(context.Context) ([]tools.Spec, error) {
	obj := json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`)
	spec := func(name string, p tools.Permission) tools.Spec {
		return tools.Spec{Name: name, Description: "the " + name + " tool", Parameters: obj, Effect: tools.ReadOnly, Permission: p}
	}
	return []tools.Spec{spec("lookup", tools.Safe), spec("save", tools.Confirm), spec("broken", tools.Safe),
		spec("erring", tools.Safe), spec("root", tools.Admin), spec("slow", tools.Safe)}, nil
}

func (b *voiceToolbox) Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	b.mu.Lock()
	b.calls = append(b.calls, name+" "+string(args))
	b.mu.Unlock()
	switch name {
	case "broken":
		return tools.Result{Text: "disk on fire", IsError: true}, nil
	case "erring":
		return tools.Result{}, errors.New("socket closed")
	case "slow":
		close(b.started)
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}
	return tools.Result{Text: name + " ok " + string(args)}, nil
}

func (b *voiceToolbox) ran() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// events subscribes to every class and passes each event to seen; a
// ConfirmAsked is answered with answer, when set. It ends with the test.
func events(t *testing.T, h *hearth.Hearth, answer *bool) <-chan hearth.Event {
	t.Helper()
	sub, err := h.Subscribe(hearth.WatchOptions{Classes: hearth.ClassAll, Name: "watcher"})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan hearth.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sub.Run(context.Background(), func(evs []hearth.Event) error {
			for _, ev := range evs {
				if ca, ok := ev.(*hearth.ConfirmAsked); ok && answer != nil {
					h.Confirm(ca.ID, *answer)
				}
				seen <- ev
			}
			return nil
		})
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	return seen
}

// until collects events until one for which stop is true.
func until(t *testing.T, seen <-chan hearth.Event, stop func(hearth.Event) bool) []hearth.Event {
	t.Helper()
	var got []hearth.Event
	for {
		select {
		case ev := <-seen:
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-time.After(10 * time.Second): // a guard against a hang, not a synchronisation
			t.Fatalf("no closing event after %d events", len(got))
		}
	}
}

func isOutcome(ev hearth.Event) bool { _, ok := ev.(*hearth.ToolOutcome); return ok }

func TestRunVoiceTool(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		tool      string
		args      string
		answer    *bool // a confirmation's answer
		wantOut   string
		wantError bool
		wantRan   []string // what reached the registry
		wantArgs  string   // journaled (reason taken out)
		wantWhy   string   // journaled reason
		confirmed *bool
	}{
		{name: "ok", tool: "lookup", args: `{"q":"tea","reason":"to check"}`, wantOut: `lookup ok {"q":"tea"}`,
			wantRan: []string{`lookup {"q":"tea"}`}, wantArgs: `{"q":"tea"}`, wantWhy: "to check"},
		{name: "no arguments", tool: "lookup", args: "", wantOut: "lookup ok {}", wantRan: []string{"lookup {}"}, wantArgs: "{}"},
		{name: "unknown tool", tool: "nope", args: `{"reason":"x"}`, wantOut: `there is no tool named "nope"`, wantError: true, wantArgs: "{}", wantWhy: "x"},
		{name: "admin tool is not offered", tool: "root", args: `{"reason":"x"}`, wantOut: `there is no tool named "root"`, wantError: true, wantArgs: "{}", wantWhy: "x"},
		{name: "bad JSON", tool: "lookup", args: `{"q":`, wantOut: "the arguments are not valid JSON", wantError: true},
		{name: "tool error result", tool: "broken", args: `{"reason":"r"}`, wantOut: "disk on fire", wantError: true, wantRan: []string{"broken {}"}, wantArgs: "{}", wantWhy: "r"},
		{name: "tool fails", tool: "erring", args: `{"reason":"r"}`, wantOut: "the tool failed: socket closed", wantError: true, wantRan: []string{"erring {}"}, wantArgs: "{}", wantWhy: "r"},
		{name: "confirmation approved", tool: "save", args: `{"x":1,"reason":"keep"}`, answer: &yes, wantOut: `save ok {"x":1}`,
			wantRan: []string{`save {"x":1}`}, wantArgs: `{"x":1}`, wantWhy: "keep", confirmed: &yes},
		{name: "confirmation denied", tool: "save", args: `{"x":1,"reason":"keep"}`, answer: &no, wantOut: "the owner did not approve this call",
			wantError: true, wantArgs: `{"x":1}`, wantWhy: "keep", confirmed: &no},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &memJournal{}
			box := &voiceToolbox{}
			h := runCore(t, hearth.Config{Journal: j, Tools: box, Voice: &fakeMinter{}})
			seen := events(t, h, tc.answer)

			res, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "call_1", Name: tc.tool, Arguments: tc.args, Ref: "vt1"})
			if err != nil {
				t.Fatalf("RunVoiceTool: %v", err)
			}
			if res.CallID != "call_1" || res.IsError != tc.wantError || !strings.Contains(res.Output, tc.wantOut) {
				t.Errorf("result = %+v, want output containing %q, error %v", res, tc.wantOut, tc.wantError)
			}
			if got := box.ran(); !slices.Equal(got, tc.wantRan) {
				t.Errorf("registry ran %q, want %q", got, tc.wantRan)
			}

			// Journaled as a text turn's call is, with mode voice: the
			// step that asked for it, then its outcome.
			recs, _ := j.Tail(10)
			if len(recs) != 2 {
				t.Fatalf("journal holds %d records, want the call and its outcome: %+v", len(recs), recs)
			}
			step, out := recs[0], recs[1]
			if step.Role != memory.RoleAgent || step.Mode != memory.ModeVoice || len(step.ToolCalls) != 1 {
				t.Fatalf("step = %+v", step)
			}
			if c := step.ToolCalls[0]; c.ID != "call_1" || c.Name != tc.tool || c.Reason != tc.wantWhy || (tc.wantArgs != "" && string(c.Arguments) != tc.wantArgs) {
				t.Errorf("journaled call = %+v (args %s)", c, c.Arguments)
			}
			if out.Role != memory.RoleTool || out.Mode != memory.ModeVoice || out.Tool == nil || out.Tool.CallID != "call_1" || out.Tool.Name != tc.tool {
				t.Fatalf("outcome = %+v", out)
			}
			if out.Text != res.Output || (out.Tool.Error != "") != tc.wantError {
				t.Errorf("journaled outcome %q (error %q), answered %q", out.Text, out.Tool.Error, res.Output)
			}
			if (out.Tool.Confirmed == nil) != (tc.confirmed == nil) || tc.confirmed != nil && *out.Tool.Confirmed != *tc.confirmed {
				t.Errorf("confirmed = %v, want %v", out.Tool.Confirmed, tc.confirmed)
			}

			// Another subscriber saw it all, in order.
			var kinds []string
			for _, ev := range until(t, seen, isOutcome) {
				switch e := ev.(type) {
				case *hearth.TurnStored:
					if e.Ref != "vt1" || e.Record.ID != step.ID {
						t.Errorf("TurnStored = %+v", e)
					}
					kinds = append(kinds, "stored")
				case *hearth.ConfirmAsked:
					if e.ID != "call_1" || e.Name != "save" || e.Reason != "keep" {
						t.Errorf("ConfirmAsked = %+v", e)
					}
					kinds = append(kinds, "confirm")
				case *hearth.ToolStarted:
					kinds = append(kinds, "started")
				case *hearth.ToolOutcome:
					if e.Record.ID != out.ID {
						t.Errorf("ToolOutcome = %+v", e)
					}
					kinds = append(kinds, "outcome")
				case *hearth.StateChanged:
					t.Errorf("a voice tool call changed the text turn's state: %+v", e)
				}
			}
			want := []string{"stored"}
			if tc.answer != nil {
				want = append(want, "confirm")
			}
			if len(tc.wantRan) > 0 {
				want = append(want, "started")
			}
			want = append(want, "outcome")
			if !slices.Equal(kinds, want) {
				t.Errorf("events %v, want %v", kinds, want)
			}
		})
	}
}

// TestRunVoiceToolRefused: requests that cannot be answered are problems,
// not results, and run nothing.
func TestRunVoiceToolRefused(t *testing.T) {
	box := &voiceToolbox{}
	plain := runCore(t, hearth.Config{Journal: &memJournal{}, Tools: box})
	_, err := plain.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "c", Name: "lookup", Ref: "r"})
	var p *hearth.Problem
	if !errors.As(err, &p) || p.Code != hearth.CodeNoVoiceProvider || p.Ref != "r" || !strings.Contains(p.Message, "XAI_API_KEY") {
		t.Errorf("without a voice provider: %v, want %s", err, hearth.CodeNoVoiceProvider)
	}
	h := runCore(t, hearth.Config{Journal: &memJournal{}, Tools: box, Voice: &fakeMinter{}})
	for _, id := range []string{"", strings.Repeat("x", 257)} {
		if _, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: id, Name: "lookup"}); !errors.As(err, &p) || p.Code != hearth.CodeBadRequest {
			t.Errorf("call id of %d bytes: %v, want bad_request", len(id), err)
		}
	}
	if got := box.ran(); len(got) != 0 {
		t.Errorf("refused requests ran %q", got)
	}
}

// TestRunVoiceToolCancel: the client leaving cancels the call; the
// outcome is journaled; a second call under the same id while the first
// runs is refused.
func TestRunVoiceToolCancel(t *testing.T) {
	j := &memJournal{}
	box := &voiceToolbox{started: make(chan struct{})}
	h := runCore(t, hearth.Config{Journal: j, Tools: box, Voice: &fakeMinter{}})
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		res hearth.VoiceToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := h.RunVoiceTool(ctx, hearth.VoiceToolCall{CallID: "call_s", Name: "slow", Arguments: `{"reason":"wait"}`})
		done <- answer{res, err}
	}()
	<-box.started
	var p *hearth.Problem
	if _, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "call_s", Name: "lookup"}); !errors.As(err, &p) || p.Code != hearth.CodeBadRequest {
		t.Errorf("same call id while running: %v, want bad_request", err)
	}
	cancel()
	a := <-done
	if a.err != nil || !a.res.IsError {
		t.Fatalf("cancelled call = %+v, %v; want an error result", a.res, a.err)
	}
	recs, _ := j.Tail(10)
	if len(recs) != 2 || recs[1].Tool == nil || recs[1].Tool.Error == "" {
		t.Errorf("journal after a cancelled call: %+v", recs)
	}
	// The id is free again.
	if res, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "call_s", Name: "lookup"}); err != nil || res.IsError {
		t.Errorf("the id after the call ended: %+v, %v", res, err)
	}
}

// blockedModel holds every reply until release is closed.
type blockedModel struct {
	asked   chan struct{}
	release chan struct{}
}

func (m *blockedModel) Name() string  { return "blocked" }
func (m *blockedModel) Model() string { return "blocked-1" }
func (m *blockedModel) Stream(ctx context.Context, _ llm.Request, onText func(string)) (llm.Response, error) {
	m.asked <- struct{}{}
	<-m.release
	onText("done")
	return llm.Response{Text: "done"}, nil
}

// TestRunVoiceToolDuringTextTurn: a voice tool call runs while a text
// turn waits on the model; neither waits for the other.
func TestRunVoiceToolDuringTextTurn(t *testing.T) {
	j := &memJournal{}
	m := &blockedModel{asked: make(chan struct{}, 1), release: make(chan struct{})}
	h := runCore(t, hearth.Config{Journal: j, Models: fixed{m}, Tools: &voiceToolbox{}, Voice: &fakeMinter{}})
	if err := h.Send("m1", "hello"); err != nil {
		t.Fatal(err)
	}
	<-m.asked // the text turn is in flight
	res, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "c1", Name: "lookup", Arguments: `{"reason":"r"}`})
	if err != nil || res.IsError {
		t.Fatalf("voice tool during a text turn: %+v, %v", res, err)
	}
	close(m.release)
	if err := h.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	var roles []string
	recs, _ := j.Tail(10)
	for _, r := range recs {
		roles = append(roles, r.Role+"/"+r.Mode)
	}
	want := []string{"user/text", "agent/voice", "tool/voice", "agent/text"}
	if !slices.Equal(roles, want) {
		t.Errorf("journal %v, want %v", roles, want)
	}
}

// TestVoiceToolsOffered: the voice session is offered exactly the tools
// RunVoiceTool accepts: every tool a text turn offers, no admin tool.
func TestVoiceToolsOffered(t *testing.T) {
	box := &voiceToolbox{}
	h := runCore(t, hearth.Config{Journal: &memJournal{}, Tools: box, Voice: &fakeMinter{}})
	cred, err := h.RequestVoice(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tl := range cred.Tools {
		offered = append(offered, tl.Name)
	}
	if want := []string{"lookup", "save", "broken", "erring", "slow"}; !slices.Equal(offered, want) {
		t.Errorf("offered %v, want %v", offered, want)
	}
	all, _ := box.List(context.Background())
	for _, s := range all {
		if s.Name == "slow" || s.Name == "save" {
			continue // they wait: the table runs them
		}
		res, err := h.RunVoiceTool(context.Background(), hearth.VoiceToolCall{CallID: "c-" + s.Name, Name: s.Name, Arguments: `{"reason":"r"}`})
		unknown := err == nil && strings.Contains(res.Output, "there is no tool named")
		if unknown != !slices.Contains(offered, s.Name) {
			t.Errorf("%s: offered %v, RunVoiceTool answered %+v, %v", s.Name, slices.Contains(offered, s.Name), res, err)
		}
	}
}
