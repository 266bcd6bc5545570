package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
)

// scripted is a Model answering from a list of responses, recording every
// request.
type scripted struct {
	mu       sync.Mutex
	replies  []func(req llm.Request, onText func(string)) (llm.Response, error)
	requests []llm.Request
}

func (s *scripted) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	s.mu.Lock()
	req.Messages = append([]llm.Message(nil), req.Messages...)
	s.requests = append(s.requests, req)
	if len(s.replies) == 0 {
		s.mu.Unlock()
		return llm.Response{}, errors.New("script exhausted")
	}
	f := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()
	return f(req, onText)
}

func say(text string, calls ...llm.ToolCall) func(llm.Request, func(string)) (llm.Response, error) {
	return func(_ llm.Request, onText func(string)) (llm.Response, error) {
		if text != "" {
			onText(text)
		}
		return llm.Response{Text: text, ToolCalls: calls, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}, nil
	}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// toolbox is a Tools with handlers per name.
type toolbox struct {
	specs []tools.Spec
	run   map[string]func(ctx context.Context, args json.RawMessage) (tools.Result, error)
	mu    sync.Mutex
	calls []string
}

func (tb *toolbox) List(context.Context) ([]tools.Spec, error) { return tb.specs, nil }

func (tb *toolbox) Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	tb.mu.Lock()
	tb.calls = append(tb.calls, name+" "+string(args))
	tb.mu.Unlock()
	return tb.run[name](ctx, args)
}

func newToolbox() *toolbox {
	spec := func(name string, p tools.Permission) tools.Spec {
		return tools.Spec{Name: name, Description: name, Parameters: json.RawMessage(`{"type":"object"}`), Permission: p, Effect: tools.ReadOnly}
	}
	return &toolbox{
		specs: []tools.Spec{spec("echo", tools.Safe), spec("write", tools.Confirm), spec("root", tools.Admin), spec("slow", tools.Safe)},
		run: map[string]func(context.Context, json.RawMessage) (tools.Result, error){
			"echo": func(_ context.Context, a json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "echoed " + string(a)}, nil
			},
			"write": func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "written"}, nil
			},
			"slow": func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				<-ctx.Done()
				return tools.Result{}, ctx.Err()
			},
		},
	}
}

// recorder is an Observer that records events as strings.
type recorder struct {
	mu      sync.Mutex
	events  []string
	approve bool
	stepErr error
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) Text(s string) { r.add("text %s", s) }
func (r *recorder) Step(_ context.Context, s Step) error {
	var names []string
	for _, c := range s.Calls {
		names = append(names, c.Name+"("+c.Reason+")")
	}
	r.add("step %q %s", s.Text, strings.Join(names, ","))
	return r.stepErr
}
func (r *recorder) ToolStart(c Call) { r.add("start %s", c.Name) }
func (r *recorder) ToolDone(_ context.Context, c Call, o Outcome) error {
	conf := ""
	if o.Confirmed != nil {
		conf = fmt.Sprintf(" confirmed=%v", *o.Confirmed)
	}
	r.add("done %s error=%v%s: %s", c.Name, o.Result.IsError, conf, o.Result.Text)
	return nil
}
func (r *recorder) Confirm(context.Context, Call) (bool, error) {
	r.add("confirm?")
	return r.approve, nil
}

func user(s string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: s}} }

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		replies    []func(llm.Request, func(string)) (llm.Response, error)
		approve    bool
		wantText   string
		wantEvents []string
		wantCalls  []string // what reached the tools
	}{
		{
			name:       "plain answer",
			replies:    []func(llm.Request, func(string)) (llm.Response, error){say("hello")},
			wantText:   "hello",
			wantEvents: []string{"text hello"},
		},
		{
			name: "one tool call, reason taken out",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("c1", "echo", `{"x":1,"reason":"to test"}`)),
				say("done"),
			},
			wantText:   "done",
			wantEvents: []string{`step "" echo(to test)`, "start echo", `done echo error=false: echoed {"x":1}`, "text done"},
			wantCalls:  []string{`echo {"x":1}`},
		},
		{
			name: "text beside parallel calls",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("looking", call("a", "echo", `{"n":1,"reason":"r1"}`), call("b", "echo", `{"n":2,"reason":"r2"}`)),
				say("both"),
			},
			wantText: "both",
			wantEvents: []string{"text looking", `step "looking" echo(r1),echo(r2)`,
				"start echo", `done echo error=false: echoed {"n":1}`,
				"start echo", `done echo error=false: echoed {"n":2}`, "text both"},
			wantCalls: []string{`echo {"n":1}`, `echo {"n":2}`},
		},
		{
			name: "unknown tool and admin tool are errors the model reads",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("a", "nope", `{}`), call("b", "root", `{"reason":"x"}`)),
				say("sorry"),
			},
			wantText: "sorry",
			wantEvents: []string{`step "" nope(),root(x)`,
				`done nope error=true: there is no tool named "nope"`,
				`done root error=true: there is no tool named "root"`, "text sorry"},
		},
		{
			name: "invalid arguments",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("a", "echo", `{"x":`)),
				say("ok"),
			},
			wantText: "ok",
			wantEvents: []string{`step "" echo()`,
				"done echo error=true: the arguments are not valid JSON; send a JSON object matching the tool's schema", "text ok"},
		},
		{
			name: "confirm declined",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("a", "write", `{"reason":"save"}`)),
				say("fine"),
			},
			wantText: "fine",
			wantEvents: []string{`step "" write(save)`, "confirm?",
				"done write error=true confirmed=false: the owner did not approve this call; do not retry it unless they ask", "text fine"},
		},
		{
			name: "confirm approved",
			replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("a", "write", `{"reason":"save"}`)),
				say("saved"),
			},
			approve:    true,
			wantText:   "saved",
			wantEvents: []string{`step "" write(save)`, "confirm?", "start write", "done write error=false confirmed=true: written", "text saved"},
			wantCalls:  []string{"write {}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scripted{replies: tt.replies}
			tb := newToolbox()
			rec := &recorder{approve: tt.approve}
			res, err := Run(context.Background(), m, tb, Config{}, user("hi"), rec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Text != tt.wantText {
				t.Errorf("text = %q, want %q", res.Text, tt.wantText)
			}
			if diff := cmp.Diff(tt.wantEvents, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, tb.calls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if want := len(tt.replies); res.Iterations != want || len(m.requests) != want {
				t.Errorf("iterations = %d, requests = %d, want %d", res.Iterations, len(m.requests), want)
			}
			if res.Usage.InputTokens != int64(10*len(tt.replies)) {
				t.Errorf("usage = %+v, want the sum of every call", res.Usage)
			}
		})
	}
}

func TestNextRequestCarriesAssistantTextCallsAndResults(t *testing.T) {
	m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
		say("let me check", call("c1", "echo", `{"q":"tea","reason":"r"}`)),
		say("tea it is"),
	}}
	res, err := Run(context.Background(), m, newToolbox(), Config{}, user("what do I drink?"), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "what do I drink?"},
		{Role: llm.RoleAssistant, Content: "let me check", ToolCalls: []llm.ToolCall{call("c1", "echo", `{"q":"tea","reason":"r"}`)}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: `echoed {"q":"tea"}`},
	}
	if diff := cmp.Diff(want, m.requests[1].Messages); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], res.Messages); diff != "" {
		t.Errorf("result messages (-want +got):\n%s", diff)
	}
	// Every request offers the tools, except admin ones.
	var names []string
	for _, tool := range m.requests[0].Tools {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"echo", "write", "slow"}, names); diff != "" {
		t.Errorf("offered tools (-want +got):\n%s", diff)
	}
}

func TestContinuation(t *testing.T) {
	m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
		func(llm.Request, func(string)) (llm.Response, error) {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "echo", `{}`)}, ResponseID: "resp_1"}, nil
		},
		say("ok"),
	}}
	start := &llm.Continuation{ResponseID: "resp_0", From: 1}
	if _, err := Run(context.Background(), m, newToolbox(), Config{Continue: start}, user("hi"), &recorder{}); err != nil {
		t.Fatal(err)
	}
	if got := m.requests[0].Continue; got != start {
		t.Errorf("first request continues from %+v, want %+v", got, start)
	}
	// The second request builds on resp_1 and sends only the tool result.
	if diff := cmp.Diff(&llm.Continuation{ResponseID: "resp_1", From: 2}, m.requests[1].Continue); diff != "" {
		t.Errorf("second continuation (-want +got):\n%s", diff)
	}
}

func TestNoDefaultIterationCap(t *testing.T) {
	const rounds = 300
	var replies []func(llm.Request, func(string)) (llm.Response, error)
	for i := range rounds {
		replies = append(replies, say("", call(fmt.Sprint(i), "echo", `{}`)))
	}
	replies = append(replies, say("finally"))
	res, err := Run(context.Background(), &scripted{replies: replies}, newToolbox(), Config{}, user("go"), &recorder{})
	if err != nil || res.Text != "finally" || res.Iterations != rounds+1 {
		t.Errorf("Run = %q after %d iterations, %v; want finally after %d", res.Text, res.Iterations, err, rounds+1)
	}
}

func TestIterationLimit(t *testing.T) {
	replies := []func(llm.Request, func(string)) (llm.Response, error){
		say("", call("1", "echo", `{}`)), say("", call("2", "echo", `{}`)), say("never"),
	}
	_, err := Run(context.Background(), &scripted{replies: replies}, newToolbox(), Config{MaxIterations: 2}, user("go"), &recorder{})
	if !errors.Is(err, ErrIterationLimit) {
		t.Errorf("err = %v, want ErrIterationLimit", err)
	}
}

func TestToolTimeoutIsAnErrorResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
			say("", call("c", "slow", `{}`)), say("moving on"),
		}}
		rec := &recorder{}
		res, err := Run(context.Background(), m, newToolbox(), Config{ToolTimeout: 5 * time.Second}, user("go"), rec)
		if err != nil || res.Text != "moving on" {
			t.Fatalf("Run = %q, %v", res.Text, err)
		}
		if want := "done slow error=true: the tool did not answer within 5s"; rec.events[2] != want {
			t.Errorf("event = %q, want %q", rec.events[2], want)
		}
	})
}

func TestCancelDuringTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("owner cancelled")
		tb := newToolbox()
		tb.run["slow"] = func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			cancel(cause)
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		}
		m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){say("", call("c", "slow", `{}`)), say("never")}}
		_, err := Run(ctx, m, tb, Config{}, user("go"), &recorder{})
		if !errors.Is(err, cause) {
			t.Errorf("err = %v, want the cancel cause", err)
		}
		if len(m.requests) != 1 {
			t.Errorf("model called %d times after cancel, want 1", len(m.requests))
		}
	})
}

func TestModelErrorKeepsPartialResult(t *testing.T) {
	boom := &llm.Error{Provider: "p", Status: 500, Retryable: true, Err: errors.New("boom")}
	m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
		say("", call("c", "echo", `{}`)),
		func(_ llm.Request, onText func(string)) (llm.Response, error) {
			onText("half")
			return llm.Response{Text: "half"}, boom
		},
	}}
	res, err := Run(context.Background(), m, newToolbox(), Config{}, user("go"), &recorder{})
	if !errors.Is(err, boom) || res.Text != "half" || len(res.Messages) != 2 {
		t.Errorf("Run = %+v, %v; want the partial text, the step's messages and the model's error", res, err)
	}
}

func TestObserverFailureStops(t *testing.T) {
	stop := errors.New("journal full")
	m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){say("", call("c", "echo", `{}`)), say("never")}}
	tb := newToolbox()
	_, err := Run(context.Background(), m, tb, Config{}, user("go"), &recorder{stepErr: stop})
	if !errors.Is(err, stop) || len(tb.calls) != 0 {
		t.Errorf("err = %v, tool calls = %v; want the observer's error before any tool runs", err, tb.calls)
	}
}

func TestConcurrentRunsAreIndependent(t *testing.T) {
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arg := fmt.Sprintf(`{"run":%d}`, i)
			m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
				say("", call("c", "echo", arg)),
				func(req llm.Request, _ func(string)) (llm.Response, error) {
					return llm.Response{Text: req.Messages[len(req.Messages)-1].Content}, nil
				},
			}}
			res, err := Run(context.Background(), m, newToolbox(), Config{}, user(fmt.Sprint(i)), &recorder{})
			if err != nil || res.Text != "echoed "+arg {
				errs <- fmt.Errorf("run %d: %q, %v", i, res.Text, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkToolRoundTrip measures the loop's own overhead for one tool
// round trip (model asks, tool runs, result goes back), with a model and a
// tool that cost nothing.
func BenchmarkToolRoundTrip(b *testing.B) {
	tb := newToolbox()
	rec := nopObserver{}
	msgs := user("go")
	durations := make([]time.Duration, 0, b.N)
	for b.Loop() {
		m := &scripted{replies: []func(llm.Request, func(string)) (llm.Response, error){
			say("", call("c", "echo", `{"reason":"bench"}`)), say("ok"),
		}}
		start := time.Now()
		if _, err := Run(context.Background(), m, tb, Config{}, msgs, rec); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-µs")
}

type nopObserver struct{}

func (nopObserver) Text(string)                                   {}
func (nopObserver) Step(context.Context, Step) error              { return nil }
func (nopObserver) ToolStart(Call)                                {}
func (nopObserver) ToolDone(context.Context, Call, Outcome) error { return nil }
func (nopObserver) Confirm(context.Context, Call) (bool, error)   { return true, nil }
