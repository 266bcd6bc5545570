package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

var (
	errReplyTooLong = errors.New("reply exceeded MaxReplyBytes")
	errCancelled    = errors.New("turn cancelled by a client")
	errNoProvider   = errors.New("no model provider is configured")
	// errToolStep wraps a failure to store a tool's outcome, which ends
	// the turn in its tool loop (Problem.InTools).
	errToolStep = errors.New("tool step not stored")
)

// Fixed messages for errors clients see; details stay in the log.
const (
	msgProviderError   = "the model provider failed to answer; details are in hearth's log"
	msgReplyTooLong    = "the reply grew past hearth's size limit and was cut short"
	msgContextOverflow = "the conversation is too long for the model's context window; details are in hearth's log"
	msgToolError       = "a tool call failed; the agent was told and carries on"
	msgCancelled       = "the reply was cancelled"
	msgIterationLimit  = "the agent reached its configured limit of model calls for one turn"
	msgToolStep        = "a tool's outcome could not be stored; the turn ended"
)

// session is what a hearth session injects: the system messages made as
// it starts (AGENT.md, the continuity anchor, memories relevant to where
// the conversation left off) and the records those memories showed. Only
// the converse goroutine uses it.
type session struct {
	system   []llm.Message
	injected map[string]bool
	opened   bool // system holds an opening memory block, which takes half the memory allowances
}

// sessionTurns is how many of the last turns before a session starts make
// the query for its opening memories.
const sessionTurns = 4

// startSession makes the session context before its first turn: the
// continuity context, and, when recall is on, the older memories relevant
// to the last turns before this session (seed 004: "what's relevant to
// now", injected once per session, never journaled).
func (h *Hearth) startSession(ctx context.Context, c *conversation) *session {
	sess := &session{system: h.sessionContext(), injected: map[string]bool{}}
	// A session's opening memories take half of each allowance; its
	// turns share the other half.
	block := h.openingMemories(ctx, c, 2, sess.injected)
	if block == "" {
		return sess
	}
	sess.opened = true
	if len(sess.system) > 0 && sess.system[0].Role == llm.RoleSystem {
		sess.system[0].Content += "\n\n" + block
	} else {
		sess.system = append([]llm.Message{{Role: llm.RoleSystem, Content: block}}, sess.system...)
	}
	return sess
}

// openingMemories is the block of older memories relevant to c's last
// turns, leaving out those in the context window; "" when recall is off
// or there is nothing to recall yet. It may use 1/share of the memory and
// tool allowances; what it injects is marked in injected.
func (h *Hearth) openingMemories(ctx context.Context, c *conversation, share int, injected map[string]bool) string {
	if h.cfg.Memory == nil {
		return ""
	}
	budget := h.budget()
	allow := budget.Allowance()
	h.mu.Lock()
	window, _ := h.windowLocked(c, budget)
	var query []string
	for i := len(c.recent) - 1; i >= 0 && len(query) < sessionTurns; i-- {
		if r := c.recent[i]; (r.Role == memory.RoleUser || r.Role == memory.RoleAgent) && strings.TrimSpace(r.Text) != "" {
			query = append(query, r.Text)
		}
	}
	h.mu.Unlock()
	if len(query) == 0 {
		return "" // a first conversation: nothing to recall yet
	}
	slices.Reverse(query)
	req := memory.ContextRequest{
		Query: strings.Join(query, "\n"), Exclude: make(map[string]bool, len(window)),
		Turns: allow.Memories / share, Tools: allow.Tools / share, Knowledge: allow.Knowledge / share, Session: true, Injected: injected,
	}
	for _, r := range window {
		req.Exclude[r.ID] = true
	}
	return h.cfg.Memory.Relevant(ctx, req)
}

func (h *Hearth) sessionContext() []llm.Message {
	if h.cfg.Anchor == nil {
		return nil
	}
	msgs, err := h.cfg.Anchor.SessionContext()
	if err != nil {
		h.log.Warn("session context unavailable; continuing without it", "err", err)
	}
	return msgs
}

func (h *Hearth) handleTurn(ctx context.Context, c *conversation, req turnReq, sess *session) {
	if _, ok := h.store(ctx, c, req); !ok {
		return
	}
	if req.rec.Role != memory.RoleUser || req.rec.Mode != memory.ModeText {
		return // transcripts are history, not questions: voice answers them
	}
	model := req.model // the turn's own: the conversation's model stays
	if model == nil {
		m, err := h.model()
		if err != nil {
			h.publishTo(c.id, &Problem{Code: CodeNoProvider, Message: err.Error(), Ref: req.ref})
			return
		}
		model = m
		h.mu.Lock()
		c.current = model
		h.mu.Unlock()
	}
	if req.id != nil {
		ctx = auth.WithIdentity(ctx, *req.id)
	}
	ctx = context.WithValue(ctx, conversationKey{}, c.id)
	h.reply(ctx, c, model, req.ref, sess)
}

// model returns the model for this turn (a changed preference applies on
// the next message).
func (h *Hearth) model() (Model, error) {
	if h.cfg.Models == nil {
		return nil, errNoProvider
	}
	m, err := h.cfg.Models.Resolve()
	if err != nil {
		h.log.Warn("no model for this turn", "err", err)
		return nil, err
	}
	if m == nil {
		return nil, errNoProvider
	}
	return m, nil
}

// budget is the context budget of this turn.
func (h *Hearth) budget() ContextBudget {
	b := h.cfg.Budget
	if h.cfg.Budgets != nil {
		b = h.cfg.Budgets.Budget()
	}
	h.log.Debug("context budget", "tokens", b.Tokens, "recent", b.Shares.Recent, "knowledge", b.Shares.Knowledge, "memories", b.Shares.Memories, "tools", b.Shares.Tools)
	return b
}

// reply runs the agent loop for the newest turn, streaming to every
// subscriber and committing each step, and commits the answer.
func (h *Hearth) reply(ctx context.Context, c *conversation, model Model, ref string, sess *session) {
	h.setState(c, StateThinking, "")
	defer h.setState(c, StateIdle, "")
	start := time.Now()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	budget := h.budget()
	allow := budget.Allowance()
	h.mu.Lock()
	window, earlier := h.windowLocked(c, budget)
	msgs, cont := buildContext(sess.system, window)
	c.pending.Reset()
	c.cancelTurn = cancel
	h.mu.Unlock()
	// The summary of what left the window comes first, then memories.
	block := h.memories(ctx, window, allow, sess)
	if earlier != "" {
		block = strings.TrimSpace(earlier + "\n\n" + block)
	}
	msgs = injectMemories(msgs, cont, block)
	msgs = injectModeSwitch(msgs, h.takeInjection(c, time.Now()))
	// Once the agent is done, the turn can no longer be cancelled: its
	// reply is being stored. Cleared before the reply is published, so a
	// cancel that follows the done answers "nothing to cancel" instead of
	// cancelling a finished turn in silence.
	uncancellable := sync.OnceFunc(func() {
		h.mu.Lock()
		c.cancelTurn = nil
		h.mu.Unlock()
	})
	defer uncancellable()

	obs := &turnObserver{h: h, c: c, ref: ref, model: model, cancel: cancel}
	reporting := retryReporter{Model: model, onRetry: func(r llm.Retry) {
		h.setState(c, StateThinking, retryDetail(r))
	}}
	res, err := agent.Run(ctx, reporting, h.cfg.Tools, agent.Config{
		MaxIterations: h.cfg.MaxIterations,
		ToolTimeout:   h.cfg.ToolTimeout,
		Continue:      cont,
		Log:           h.log,
	}, msgs, obs)
	if cause := context.Cause(ctx); errors.Is(cause, errReplyTooLong) || errors.Is(cause, errCancelled) {
		err = cause
	}
	uncancellable()

	h.mu.Lock()
	text := c.pending.String()
	c.pending.Reset()
	h.mu.Unlock()
	if err == nil && res.Text != "" {
		text = res.Text
	}
	if err != nil {
		h.log.Error("turn failed", "provider", model.Name(), "err", err)
	}
	if err != nil && text == "" {
		h.publishTo(c.id, turnError(ref, err))
		return
	}
	rec := journal.Record{
		Role: memory.RoleAgent, Text: text, Mode: memory.ModeText,
		Model: modelName(res.Response, model), Incomplete: err != nil, ResponseID: res.Response.ResponseID,
	}
	if err != nil {
		rec.ResponseID = "" // the provider's state holds no complete answer
	}
	var then []Event
	if err != nil {
		then = append(then, turnError(ref, err))
	}
	// The reply is stored even when the turn was cancelled or hearth stops.
	stored, cerr := h.commit(context.WithoutCancel(ctx), c, rec, func(r journal.Record) Event {
		done := &ReplyDone{Record: r, Model: rec.Model}
		if res.Usage != (llm.Usage{}) {
			done.Usage = &Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}
		}
		return done
	}, then...)
	// One line per turn: which request, how long, how many tokens.
	h.log.Info("turn", "ref", ref, "id", stored.ID, "provider", model.Name(), "model", rec.Model,
		"ms", time.Since(start).Milliseconds(), "input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens,
		"incomplete", rec.Incomplete)
	if cerr != nil {
		h.publishTo(c.id, &Problem{Code: CodeInternal, Message: "hearth could not store the reply", Ref: ref})
	}
}

func modelName(r llm.Response, m Model) string {
	if r.Model != "" {
		return r.Model
	}
	return m.Model()
}

// turnError maps a failed turn to its code and displayable message (seed
// 000's error taxonomy; never a catch-all).
func turnError(ref string, err error) *Problem {
	e := &Problem{Code: CodeProviderError, Message: msgProviderError, Ref: ref}
	var lerr *llm.Error
	switch {
	case errors.Is(err, errCancelled):
		e.Code, e.Message = CodeCancelled, msgCancelled
	case errors.Is(err, errReplyTooLong):
		e.Message = msgReplyTooLong
	case errors.Is(err, agent.ErrIterationLimit):
		// The loop ends at the limit only while the model still calls
		// tools: a final answer returns before it.
		e.Message, e.InTools = msgIterationLimit, true
	case errors.Is(err, errToolStep):
		e.Message, e.InTools = msgToolStep, true
	case errors.As(err, &lerr) && lerr.ContextOverflow:
		e.Code, e.Message = CodeContextOverflow, msgContextOverflow
	case errors.As(err, &lerr):
		e.Message = providerProblem(lerr)
	}
	return e
}

// providerProblem says what went wrong with the model provider and what
// to do, from the failure's category: never the provider's text, a body,
// a URL or a key, which stay in the log.
func providerProblem(e *llm.Error) string {
	tried := ""
	if e.Attempts > 1 {
		tried = fmt.Sprintf("; tried %d times", e.Attempts)
	}
	switch e.Category() {
	case llm.CategoryTimeout:
		switch kind, after := e.Timeout(); kind {
		case llm.TimeoutFirstByte:
			return fmt.Sprintf("the model provider did not answer within %v%s — try again later, or raise model.first_byte_timeout", after, tried)
		case llm.TimeoutIdle:
			return fmt.Sprintf("the model provider stopped answering for %v mid-reply%s — try again later, or raise model.idle_timeout", after, tried)
		case llm.TimeoutTotal:
			return fmt.Sprintf("the model provider did not finish the reply within %v (model.timeout)", after)
		}
		return "the model provider timed out" + tried + " — try again later"
	case llm.CategoryRateLimited:
		if e.RetryAfter > 0 {
			return fmt.Sprintf("the model provider is rate limiting%s — try again in %s", tried, seconds(e.RetryAfter))
		}
		return "the model provider is rate limiting" + tried + " — try again in a minute"
	case llm.CategoryUnreachable:
		return fmt.Sprintf("the model provider is unreachable (%s)%s — check %s and the network", e.Unreachable(), tried, llm.BaseURLVariable(e.Provider))
	case llm.CategoryRejectedKey:
		return fmt.Sprintf("the model provider rejected the API key (HTTP %d) — set %s to a valid key", e.Status, llm.KeyVariable(e.Provider))
	case llm.CategoryOverloaded:
		if e.Status != 0 {
			return fmt.Sprintf("the model provider is overloaded or failing (HTTP %d%s) — try again later", e.Status, tried)
		}
		return "the model provider is overloaded or failing" + tried + " — try again later"
	case llm.CategoryBadRequest:
		return fmt.Sprintf("the model provider refused the request (HTTP %d); details are in hearth's log", e.Status)
	}
	if errors.Is(e.Err, io.ErrUnexpectedEOF) || errors.Is(e.Err, syscall.ECONNRESET) {
		return "the connection to the model provider broke mid-reply" + tried + " — try again"
	}
	if tried != "" {
		return msgProviderError + " (" + tried[2:] + ")"
	}
	return msgProviderError
}

// retryDetail is the state detail while a failed model call waits to be
// tried again, e.g. "provider not responding, retry 2/3 in 4 s".
func retryDetail(r llm.Retry) string {
	what := "provider failed"
	switch r.Category {
	case llm.CategoryTimeout:
		what = "provider not responding"
	case llm.CategoryRateLimited:
		what = "provider rate limiting"
	case llm.CategoryOverloaded:
		what = "provider overloaded"
	case llm.CategoryUnreachable:
		what = "provider unreachable"
	}
	return fmt.Sprintf("%s, retry %d/%d in %s", what, r.Attempt+1, r.MaxAttempts, seconds(r.Wait))
}

// seconds shows d in whole seconds, rounded up: "4 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", int64(math.Ceil(d.Seconds())))
}

// retryReporter hands every model call of a turn onRetry, to tell every
// client that the call is being retried.
type retryReporter struct {
	Model
	onRetry func(llm.Retry)
}

func (r retryReporter) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	req.OnRetry = r.onRetry
	return r.Model.Stream(ctx, req, onText)
}

// turnObserver carries the agent loop's events to the journal and to every
// subscriber.
type turnObserver struct {
	h        *Hearth
	c        *conversation
	ref      string
	model    Model
	cancel   context.CancelCauseFunc
	streamed int
}

func (o *turnObserver) Text(s string) {
	// A runaway stream is cut at MaxReplyBytes: memory stays bounded and
	// the reply still fits one journal record.
	if o.streamed += len(s); o.streamed > o.h.cfg.MaxReplyBytes {
		o.cancel(errReplyTooLong)
		return
	}
	o.h.streamToken(o.c, s)
}

// Step commits the assistant message that asked for tools, so that a
// crash mid-tool loses nothing the model said.
func (o *turnObserver) Step(ctx context.Context, s agent.Step) error {
	calls := make([]journal.ToolCall, len(s.Calls))
	for i, c := range s.Calls {
		calls[i] = journal.ToolCall{ID: c.ID, Name: c.Name, Arguments: tools.Redact(c.Args), Reason: c.Reason}
	}
	rec := journal.Record{Role: memory.RoleAgent, Text: s.Text, Mode: memory.ModeText, Model: o.model.Model(), ToolCalls: calls, ResponseID: s.ResponseID}
	_, err := o.h.commit(context.WithoutCancel(ctx), o.c, rec, func(r journal.Record) Event {
		o.c.pending.Reset() // under the lock commit holds: the streamed text is now in the stored step
		return &TurnStored{Record: r, Ref: o.ref}
	})
	return err
}

func (o *turnObserver) ToolStart(c agent.Call) {
	h := o.h
	h.mu.Lock()
	defer h.mu.Unlock()
	o.c.state, o.c.detail = StateTool, c.Name
	h.publishToLocked(o.c.id, &StateChanged{State: StateTool, Detail: c.Name})
	h.publishToLocked(o.c.id, &ToolStarted{ID: c.ID, Name: c.Name, Args: tools.Redact(c.Args), Reason: c.Reason})
}

// ToolDone commits the outcome (what the model was told).
func (o *turnObserver) ToolDone(ctx context.Context, c agent.Call, out agent.Outcome) error {
	tr := &journal.ToolResult{
		CallID: c.ID, Name: c.Name, Arguments: tools.Redact(c.Args), Reason: c.Reason,
		DurationMS: out.Duration.Milliseconds(), Confirmed: out.Confirmed,
	}
	if out.Result.IsError {
		tr.Error = out.Result.Text
	}
	then := []Event{&StateChanged{State: StateThinking}}
	if out.Result.IsError {
		then = []Event{&Problem{Code: CodeToolError, Message: msgToolError, Ref: o.ref}, then[0]}
	}
	rec := journal.Record{Role: memory.RoleTool, Text: out.Result.Text, Mode: memory.ModeText, Tool: tr}
	_, err := o.h.commit(context.WithoutCancel(ctx), o.c, rec, func(r journal.Record) Event {
		o.c.state, o.c.detail = StateThinking, "" // under the lock commit holds
		return &ToolOutcome{Record: r}
	}, then...)
	if err != nil {
		return fmt.Errorf("%w: %w", errToolStep, err)
	}
	return nil
}

// Confirm asks every subscriber; the first answer wins, silence means no.
func (o *turnObserver) Confirm(ctx context.Context, c agent.Call) (bool, error) {
	h := o.h
	answer := make(chan bool, 1)
	expires := time.Now().Add(h.cfg.ConfirmTimeout)
	h.mu.Lock()
	o.c.confirms[c.ID] = answer
	h.publishToLocked(o.c.id, &ConfirmAsked{
		ID: c.ID, Name: c.Name, Args: tools.Redact(c.Args), Reason: c.Reason,
		Effect: string(c.Spec.Effect), ExpiresAt: expires,
	})
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(o.c.confirms, c.ID)
		h.mu.Unlock()
	}()
	t := time.NewTimer(h.cfg.ConfirmTimeout)
	defer t.Stop()
	select {
	case ok := <-answer:
		return ok, nil
	case <-t.C:
		return false, errors.New("no answer before the confirmation expired")
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}

func (h *Hearth) streamToken(c *conversation, s string) {
	if s == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.detail != "" && c.state == StateThinking {
		// The reply is coming after all: the retry it waited on is over.
		c.detail = ""
		h.publishToLocked(c.id, &StateChanged{State: StateThinking})
	}
	c.pending.WriteString(s)
	h.publishToLocked(c.id, &Token{Text: s})
}

// memories is the injected block of relevant older turns and tool results
// for the window's newest user turn, within allow, leaving out what the
// session's opening block already shows; "" when there is none.
func (h *Hearth) memories(ctx context.Context, window []journal.Record, allow Allowance, sess *session) string {
	if h.cfg.Memory == nil || (allow.Memories <= 0 && allow.Tools <= 0 && allow.Knowledge <= 0) {
		return ""
	}
	req := memory.ContextRequest{Exclude: make(map[string]bool, len(window)+len(sess.injected)), Turns: allow.Memories, Tools: allow.Tools, Knowledge: allow.Knowledge}
	if sess.opened {
		// The session's opening block holds the other half.
		req.Turns -= allow.Memories / 2
		req.Tools -= allow.Tools / 2
		req.Knowledge -= allow.Knowledge / 2
	}
	for id := range sess.injected {
		req.Exclude[id] = true
	}
	for _, r := range window {
		req.Exclude[r.ID] = true
		if r.Role == memory.RoleUser {
			req.Query = r.Text
		}
	}
	if req.Query == "" {
		return ""
	}
	ents, req := h.entityContext(req)
	return joinBlocks(ents, h.cfg.Memory.Relevant(ctx, req))
}

// contextWindow is the part of recent the model sees: the newest records,
// walking back while they fit in tokens (see recordTokens), at most turns
// of them, starting at a user turn so that no tool result or call is cut
// from its pair. The newest user turn and what follows it are always in
// the window, even when they alone exceed tokens.
func contextWindow(recent []journal.Record, turns, tokens int) []journal.Record {
	lo := max(0, len(recent)-turns)
	start, used := len(recent), 0
	for i := len(recent) - 1; i >= lo; i-- {
		used += recordTokens(recent[i])
		if used > tokens && start < len(recent) {
			break
		}
		if recent[i].Role == memory.RoleUser {
			start = i
		}
	}
	return recent[start:]
}

// recordTokens estimates what a record costs in the model's context: its
// text and the calls it asked for.
func recordTokens(r journal.Record) int {
	n := estimateTokens(r.Text)
	for _, c := range r.ToolCalls {
		n += estimateTokens(c.Name) + estimateTokens(string(c.Arguments)) + estimateTokens(c.Reason)
	}
	return n
}

// buildContext is what the model sees: the session context, then the
// window (see contextWindow), dropping calls without results and results
// without calls. It also finds the provider state to continue from: the
// newest agent turn with a stored response id, with every message after it
// new to the provider.
func buildContext(system []llm.Message, window []journal.Record) ([]llm.Message, *llm.Continuation) {
	msgs := make([]llm.Message, 0, len(system)+len(window))
	msgs = append(msgs, system...)
	var cont *llm.Continuation
	for i, r := range window {
		switch r.Role {
		case memory.RoleAgent:
			m := llm.Message{Role: llm.RoleAssistant, Content: r.Text}
			if answered(r, window[i+1:]) {
				for _, c := range r.ToolCalls {
					m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: withReason(c.Arguments, c.Reason)})
				}
			}
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue
			}
			msgs = append(msgs, m)
			if r.ResponseID != "" && !r.Incomplete {
				cont = &llm.Continuation{ResponseID: r.ResponseID, From: len(msgs)}
			}
		case memory.RoleTool:
			if r.Tool == nil || !called(r.Tool.CallID, msgs) {
				continue // its call is outside the window or was dropped
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: r.Tool.CallID, Content: r.Text, IsError: r.Tool.Error != ""})
		default:
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: r.Text})
		}
	}
	return msgs, cont
}

// answered reports whether every call of r has its result among the records
// that follow; a crash mid-tool leaves calls without results, and
// providers refuse those.
func answered(r journal.Record, after []journal.Record) bool {
	if len(r.ToolCalls) == 0 {
		return false
	}
	have := make(map[string]bool)
	for _, a := range after {
		if a.Role != memory.RoleTool || a.Tool == nil {
			break
		}
		have[a.Tool.CallID] = true
	}
	for _, c := range r.ToolCalls {
		if !have[c.ID] {
			return false
		}
	}
	return true
}

func called(id string, msgs []llm.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == llm.RoleAssistant {
			for _, c := range m.ToolCalls {
				if c.ID == id {
					return true
				}
			}
			return false
		}
	}
	return false
}

// withReason puts the journaled reason back into the arguments, so the
// model sees its past calls as it made them.
func withReason(args json.RawMessage, reason string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	if reason != "" {
		r, _ := json.Marshal(reason)
		obj[tools.ReasonParam] = r
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// injectMemories adds the memory block to what the model sees, never to the
// journal: inside the one leading system message, or, when a stateful
// provider continues from a stored response (and so is sent only what is
// new), as a system message just before the newest turn.
func injectMemories(msgs []llm.Message, cont *llm.Continuation, block string) []llm.Message {
	if block == "" || len(msgs) == 0 {
		return msgs
	}
	if cont == nil && msgs[0].Role == llm.RoleSystem {
		msgs[0].Content += "\n\n" + block
		return msgs
	}
	last := len(msgs) - 1
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(out, msgs[:last]...)
	out = append(out, llm.Message{Role: llm.RoleSystem, Content: block})
	return append(out, msgs[last])
}
