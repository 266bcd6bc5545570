// Package agent is the generic agent loop: call the model, run the tools it
// asks for, feed the results back, and repeat until the model answers
// without asking for more. It builds no prompts, chooses no context and
// persists nothing: the caller hands it the conversation and an Observer
// that streams, journals and asks the owner.
//
// A Run holds no shared state, so any number run concurrently.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
)

// Model streams one model call. llm adapters implement it.
type Model interface {
	Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)
}

// Tools lists and runs tools. *tools.Registry implements it.
type Tools interface {
	List(ctx context.Context) ([]tools.Spec, error)
	Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error)
}

// Call is one tool call as the loop runs it.
type Call struct {
	ID     string
	Name   string
	Args   json.RawMessage // without the reason
	Reason string
	Spec   tools.Spec // zero for an unknown tool
}

// Outcome is how a call ended.
type Outcome struct {
	Result    tools.Result
	Duration  time.Duration
	Confirmed *bool // the owner's answer, for confirm tools
}

// Step is an assistant message that asked for tools, before they run.
type Step struct {
	Text       string
	Calls      []Call
	ResponseID string
}

// Observer is told what the loop does, in order. Step and ToolDone are the
// durable points: an error from them stops the run.
type Observer interface {
	Text(s string)
	Step(ctx context.Context, s Step) error
	ToolDone(ctx context.Context, c Call, out Outcome) error
	CallObserver
}

// CallObserver is told of one call as it runs (see RunCall).
type CallObserver interface {
	// ToolStart: the call runs now (approved, when it needed approval).
	ToolStart(c Call)
	// Confirm asks the owner whether a confirm-class call may run; an
	// error or a timeout means no.
	Confirm(ctx context.Context, c Call) (bool, error)
}

// Config bounds a run.
type Config struct {
	// MaxIterations is a safety bound on model calls in one run; 0 means
	// none.
	MaxIterations int
	// ToolTimeout bounds a tool call whose Spec sets none; default 60s.
	ToolTimeout time.Duration
	// Continue is the provider's stored state the first call may build on
	// (see llm.Request.Continue).
	Continue *llm.Continuation
	Log      *slog.Logger
}

// Result is what a run produced.
type Result struct {
	Text       string        // the final answer
	Response   llm.Response  // the last model response
	Usage      llm.Usage     // summed over every model call
	Messages   []llm.Message // assistant and tool messages the run added
	Iterations int
}

// ErrIterationLimit stops a run that reached Config.MaxIterations.
var ErrIterationLimit = errors.New("agent: iteration limit reached")

// Run loops until the model answers without tool calls, ctx ends, or the
// model or observer fails. On failure the partial Result is returned with
// the error.
func Run(ctx context.Context, m Model, ts Tools, cfg Config, msgs []llm.Message, obs Observer) (Result, error) {
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	specs, offered := toolSet(ctx, ts, cfg.Log)

	var res Result
	msgs = msgs[:len(msgs):len(msgs)] // appends never touch the caller's array
	cont := cfg.Continue
	for {
		if cfg.MaxIterations > 0 && res.Iterations >= cfg.MaxIterations {
			return res, ErrIterationLimit
		}
		res.Iterations++
		resp, err := m.Stream(ctx, llm.Request{Messages: msgs, Tools: offered, Continue: cont}, obs.Text)
		if resp.Usage != nil {
			res.Usage.InputTokens += resp.Usage.InputTokens
			res.Usage.OutputTokens += resp.Usage.OutputTokens
		}
		res.Response = resp
		res.Text = resp.Text
		if err != nil {
			return res, err
		}
		if len(resp.ToolCalls) == 0 {
			return res, nil
		}

		// Text beside the calls stays in the assistant message, so the
		// model sees what it said on the next iteration.
		assistant := llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
		msgs = append(msgs, assistant)
		res.Messages = append(res.Messages, assistant)
		calls := make([]Call, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			calls[i] = prepare(tc, specs)
		}
		if err := obs.Step(ctx, Step{Text: resp.Text, Calls: calls, ResponseID: resp.ResponseID}); err != nil {
			return res, err
		}
		from := len(msgs)
		for _, c := range calls {
			out := runCall(ctx, ts, cfg, c, obs)
			if err := obs.ToolDone(ctx, c, out); err != nil {
				return res, err
			}
			result := llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: out.Result.Text, IsError: out.Result.IsError}
			msgs = append(msgs, result)
			res.Messages = append(res.Messages, result)
		}
		if err := ctx.Err(); err != nil {
			return res, context.Cause(ctx)
		}
		cont = nil
		if resp.ResponseID != "" {
			cont = &llm.Continuation{ResponseID: resp.ResponseID, From: from}
		}
	}
}

// toolSet lists the tools for this run (see Offered), by name and as the
// model is offered them.
func toolSet(ctx context.Context, ts Tools, log *slog.Logger) (map[string]tools.Spec, []llm.Tool) {
	list := offered(ctx, ts, log)
	specs := make(map[string]tools.Spec, len(list))
	var llmTools []llm.Tool
	for _, s := range list {
		specs[s.Name] = s
		llmTools = append(llmTools, llm.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return specs, llmTools
}

// offered lists the tools a model may call. Admin tools are never
// offered. A registry that cannot list leaves the model without tools,
// not without an answer.
func offered(ctx context.Context, ts Tools, log *slog.Logger) []tools.Spec {
	if ts == nil {
		return nil
	}
	list, err := ts.List(ctx)
	if err != nil {
		log.Warn("tools unavailable for this turn", "err", err)
	}
	out := make([]tools.Spec, 0, len(list))
	for _, s := range list {
		if s.Permission != tools.Admin {
			out = append(out, s)
		}
	}
	return out
}

// Offered is the tools a model may call, in the registry's order: every
// tool of ts but admin ones. Run offers exactly these, and a call that
// Prepare and RunCall take outside Run (a realtime voice session's) is
// accepted for exactly these.
func Offered(ctx context.Context, ts Tools, log *slog.Logger) []tools.Spec {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return offered(ctx, ts, log)
}

// Prepare makes a model's tool call into a Call against offered (see
// Offered): the reason taken out of its arguments, and the Spec it calls,
// zero for a tool not offered.
func Prepare(tc llm.ToolCall, offered []tools.Spec) Call {
	specs := make(map[string]tools.Spec, len(offered))
	for _, s := range offered {
		specs[s.Name] = s
	}
	return prepare(tc, specs)
}

// RunCall runs one prepared call outside Run's loop exactly as Run runs
// each of its calls: an unknown tool or arguments that are not JSON are
// refused, a confirm tool waits for the owner's answer through obs, the
// call is bounded by its timeout, and every failure is an error result
// the model can read.
func RunCall(ctx context.Context, ts Tools, cfg Config, c Call, obs CallObserver) Outcome {
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return runCall(ctx, ts, cfg, c, obs)
}

func prepare(tc llm.ToolCall, specs map[string]tools.Spec) Call {
	c := Call{ID: tc.ID, Name: tc.Name, Args: tc.Arguments, Spec: specs[tc.Name]}
	if reason, rest, err := tools.SplitReason(tc.Arguments); err == nil {
		c.Reason, c.Args = reason, rest
	}
	return c
}

// runCall runs one call, turning every failure into an error result the
// model can read; the turn goes on.
func runCall(ctx context.Context, ts Tools, cfg Config, c Call, obs CallObserver) Outcome {
	var out Outcome
	fail := func(format string, args ...any) Outcome {
		out.Result = tools.Result{Text: fmt.Sprintf(format, args...), IsError: true}
		return out
	}
	if c.Spec.Name == "" {
		return fail("there is no tool named %q", c.Name)
	}
	if !json.Valid(c.Args) {
		return fail("the arguments are not valid JSON; send a JSON object matching the tool's schema")
	}
	if c.Reason == "" {
		cfg.Log.Warn("tool call without a reason", "tool", c.Name)
	}
	if c.Spec.Permission == tools.Confirm {
		ok, err := obs.Confirm(ctx, c)
		out.Confirmed = &ok
		if err != nil {
			cfg.Log.Info("confirmation not given", "tool", c.Name, "err", err)
		}
		if !ok {
			return fail("the owner did not approve this call; do not retry it unless they ask")
		}
	}
	obs.ToolStart(c)
	timeout := c.Spec.Timeout
	if timeout <= 0 {
		timeout = cfg.ToolTimeout
	}
	// The cause lets the registry tell the model the call timed out
	// (after timeout), not that it was cancelled.
	callCtx, cancel := context.WithTimeoutCause(ctx, timeout, &tools.DeadlineCause{After: timeout})
	defer cancel()
	start := time.Now()
	r, err := ts.Call(callCtx, c.Name, c.Args)
	out.Duration = time.Since(start)
	switch {
	case err != nil && callCtx.Err() != nil && ctx.Err() == nil:
		return fail("the tool did not answer within %s", timeout)
	case err != nil:
		cfg.Log.Warn("tool call failed", "tool", c.Name, "err", err)
		return fail("the tool failed: %v", err)
	}
	out.Result = r
	return out
}
