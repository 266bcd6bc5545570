package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

var (
	errReplyTooLong = errors.New("reply exceeded MaxReplyBytes")
	errCancelled    = errors.New("turn cancelled by a client")
)

// Fixed messages for errors clients see; details stay in the log.
const (
	msgProviderError   = "the model provider failed to answer; details are in hearth's log"
	msgReplyTooLong    = "the reply grew past hearth's size limit and was cut short"
	msgContextOverflow = "the conversation is too long for the model's context window; details are in hearth's log"
	msgToolError       = "a tool call failed; the agent was told and carries on"
	msgCancelled       = "the reply was cancelled"
	msgIterationLimit  = "the agent reached its configured limit of model calls for one turn"
)

func (h *Hearth) handleTurn(ctx context.Context, req turnReq, sess *session) {
	if _, ok := h.store(ctx, req); !ok {
		return
	}
	if req.rec.Role != ipc.RoleUser || req.rec.Mode != ipc.ModeText {
		return // transcripts are history, not questions: voice answers them
	}
	model, err := h.model()
	if err != nil {
		h.broadcast(&ipc.Error{Code: ipc.CodeNoProvider, Message: err.Error(), Ref: req.ref})
		return
	}
	h.mu.Lock()
	h.current = model
	h.mu.Unlock()
	h.reply(ctx, model, req.ref, sess)
}

// model returns the model for this turn: the preference-resolved one when
// hearth has a resolver (so a changed preference applies on the next
// message), else the configured one.
func (h *Hearth) model() (Model, error) {
	if h.cfg.Resolve != nil {
		m, err := h.cfg.Resolve()
		if err != nil {
			h.log.Warn("no model for this turn", "err", err)
			return nil, err
		}
		return m, nil
	}
	if h.cfg.Model == nil {
		if h.cfg.NoModel != nil {
			return nil, h.cfg.NoModel
		}
		return nil, errors.New("no model provider is configured")
	}
	return h.cfg.Model, nil
}

// budget is the context budget of this turn: the preference-resolved one
// when hearth has a resolver, else the configured one.
func (h *Hearth) budget() ContextBudget {
	b := h.cfg.Budget
	if h.cfg.ResolveBudget != nil {
		b = h.cfg.ResolveBudget()
	}
	h.log.Debug("context budget", "tokens", b.Tokens, "recent", b.Shares.Recent, "memories", b.Shares.Memories, "tools", b.Shares.Tools)
	return b
}

// reply runs the agent loop for the newest turn, streaming to every client
// and journaling each step, and stores the answer.
func (h *Hearth) reply(ctx context.Context, model Model, ref string, sess *session) {
	h.setState(ipc.StateThinking, "")
	defer h.setState(ipc.StateIdle, "")

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	allow := h.budget().Allowance()
	h.mu.Lock()
	window := contextWindow(h.recent, h.cfg.ContextTurns, allow.Recent)
	msgs, cont := buildContext(sess.system, window)
	h.pending.Reset()
	h.cancelTurn = cancel
	h.mu.Unlock()
	msgs = injectMemories(msgs, cont, h.memories(ctx, window, allow, sess))
	defer func() {
		h.mu.Lock()
		h.cancelTurn = nil
		h.mu.Unlock()
	}()

	obs := &turnObserver{h: h, ref: ref, model: model, cancel: cancel}
	res, err := agent.Run(ctx, model, h.cfg.Tools, agent.Config{
		MaxIterations: h.cfg.MaxIterations,
		ToolTimeout:   h.cfg.ToolTimeout,
		Continue:      cont,
		Log:           h.log,
	}, msgs, obs)
	if cause := context.Cause(ctx); errors.Is(cause, errReplyTooLong) || errors.Is(cause, errCancelled) {
		err = cause
	}

	h.mu.Lock()
	text := h.pending.String()
	h.pending.Reset()
	h.mu.Unlock()
	if err == nil && res.Text != "" {
		text = res.Text
	}
	if err != nil {
		h.log.Error("turn failed", "provider", model.Name(), "err", err)
	}
	if err != nil && text == "" {
		h.broadcast(turnError(ref, err))
		return
	}
	rec := journal.Record{
		Role: ipc.RoleAgent, Text: text, Mode: ipc.ModeText,
		Model: modelName(res.Response, model), Incomplete: err != nil, ResponseID: res.Response.ResponseID,
	}
	if err != nil {
		rec.ResponseID = "" // the provider's state holds no complete answer
	}
	// The reply is stored even when the turn was cancelled or hearth stops.
	stored, aerr := h.cfg.Journal.Append(context.WithoutCancel(ctx), rec)
	if aerr != nil {
		h.log.Error("journal append failed", "err", aerr)
		h.broadcast(&ipc.Error{Code: ipc.CodeInternal, Message: "hearth could not store the reply", Ref: ref})
		return
	}
	h.appended(stored)
	done := &ipc.Done{Turn: wireTurn(stored), Model: rec.Model}
	if res.Usage != (llm.Usage{}) {
		done.Usage = &ipc.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}
	}
	h.mu.Lock()
	h.rememberLocked(stored)
	h.broadcastLocked(done)
	h.mu.Unlock()
	if err != nil {
		h.broadcast(turnError(ref, err))
	}
}

func modelName(r llm.Response, m Model) string {
	if r.Model != "" {
		return r.Model
	}
	return m.Model()
}

// turnError maps a failed turn to its code and fixed, displayable message
// (seed 000's error taxonomy; never a catch-all).
func turnError(ref string, err error) *ipc.Error {
	e := &ipc.Error{Code: ipc.CodeProviderError, Message: msgProviderError, Ref: ref}
	var lerr *llm.Error
	switch {
	case errors.Is(err, errCancelled):
		e.Code, e.Message = ipc.CodeCancelled, msgCancelled
	case errors.Is(err, errReplyTooLong):
		e.Message = msgReplyTooLong
	case errors.Is(err, agent.ErrIterationLimit):
		e.Message = msgIterationLimit
	case errors.As(err, &lerr) && lerr.ContextOverflow:
		e.Code, e.Message = ipc.CodeContextOverflow, msgContextOverflow
	}
	return e
}

// cancel stops the turn in flight; false when there is none.
func (h *Hearth) cancel() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancelTurn == nil {
		return false
	}
	h.cancelTurn(errCancelled)
	return true
}

// turnObserver carries the agent loop's events to the journal and to every
// client.
type turnObserver struct {
	h        *Hearth
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
	o.h.streamToken(s)
}

// Step stores the assistant message that asked for tools, so that a crash
// mid-tool loses nothing the model said.
func (o *turnObserver) Step(ctx context.Context, s agent.Step) error {
	h := o.h
	calls := make([]journal.ToolCall, len(s.Calls))
	for i, c := range s.Calls {
		calls[i] = journal.ToolCall{ID: c.ID, Name: c.Name, Arguments: tools.Redact(c.Args), Reason: c.Reason}
	}
	rec := journal.Record{Role: ipc.RoleAgent, Text: s.Text, Mode: ipc.ModeText, Model: o.model.Model(), ToolCalls: calls, ResponseID: s.ResponseID}
	stored, err := h.cfg.Journal.Append(context.WithoutCancel(ctx), rec)
	if err != nil {
		return err
	}
	h.appended(stored)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending.Reset()
	h.rememberLocked(stored)
	h.broadcastLocked(&ipc.TurnStored{Turn: wireTurn(stored), Ref: o.ref})
	return nil
}

func (o *turnObserver) ToolStart(c agent.Call) {
	h := o.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = ipc.StateTool
	h.broadcastLocked(&ipc.Status{State: ipc.StateTool, Detail: c.Name})
	h.broadcastLocked(&ipc.ToolCall{ID: c.ID, Name: c.Name, Arguments: rawArgs(tools.Redact(c.Args)), Reason: c.Reason})
}

// ToolDone journals the outcome (what the model was told) and tells the
// clients.
func (o *turnObserver) ToolDone(ctx context.Context, c agent.Call, out agent.Outcome) error {
	h := o.h
	tr := &journal.ToolResult{
		CallID: c.ID, Name: c.Name, Arguments: tools.Redact(c.Args), Reason: c.Reason,
		DurationMS: out.Duration.Milliseconds(), Confirmed: out.Confirmed,
	}
	if out.Result.IsError {
		tr.Error = out.Result.Text
	}
	stored, err := h.cfg.Journal.Append(context.WithoutCancel(ctx), journal.Record{Role: ipc.RoleTool, Text: out.Result.Text, Mode: ipc.ModeText, Tool: tr})
	if err != nil {
		return err
	}
	h.appended(stored)
	wire := wireTurn(stored)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rememberLocked(stored)
	h.broadcastLocked(wire.Tool)
	if out.Result.IsError {
		h.broadcastLocked(&ipc.Error{Code: ipc.CodeToolError, Message: msgToolError, Ref: o.ref})
	}
	h.state = ipc.StateThinking
	h.broadcastLocked(&ipc.Status{State: ipc.StateThinking})
	return nil
}

// Confirm asks every client; the first answer wins, silence means no.
func (o *turnObserver) Confirm(ctx context.Context, c agent.Call) (bool, error) {
	h := o.h
	answer := make(chan bool, 1)
	expires := time.Now().Add(h.cfg.ConfirmTimeout)
	h.mu.Lock()
	h.confirms[c.ID] = answer
	h.broadcastLocked(&ipc.ConfirmRequest{
		ID: c.ID, Name: c.Name, Arguments: rawArgs(tools.Redact(c.Args)), Reason: c.Reason,
		Effect: string(c.Spec.Effect), ExpiresAt: expires,
	})
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.confirms, c.ID)
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

// answerConfirm delivers a client's answer; false when nothing waits for it.
func (h *Hearth) answerConfirm(id string, approve bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.confirms[id]
	if !ok {
		return false
	}
	delete(h.confirms, id)
	ch <- approve
	return true
}

func (h *Hearth) streamToken(s string) {
	if s == "" {
		return
	}
	frame, err := ipc.Encode(&ipc.Token{Content: s})
	if err != nil {
		h.log.Error("encode token", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending.WriteString(s)
	for c := range h.clients {
		if !c.sendToken(s, frame) {
			h.dropLocked(c, errSlowClient)
		}
	}
}

// rawArgs makes redacted arguments a JSON value on the wire.
func rawArgs(b json.RawMessage) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
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
		if recent[i].Role == ipc.RoleUser {
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
		case ipc.RoleAgent:
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
		case ipc.RoleTool:
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
		if a.Role != ipc.RoleTool || a.Tool == nil {
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

// MemoryRequest asks Config.Memories for the memories of one turn.
type MemoryRequest struct {
	Query   string          // the newest user turn, or where the last session left off
	Exclude map[string]bool // record ids already in the context window or injected
	Turns   int             // token allowance for relevant older turns
	Tools   int             // token allowance for relevant tool results
	// Session marks the block injected once as a session starts (seed
	// 004), relevant to where the conversation left off, rather than to
	// one message.
	Session bool
	// Injected, when set, is given the record ids the block shows, so that
	// later blocks of the session leave them out.
	Injected map[string]bool
}

// memories is the injected block of relevant older turns and tool results
// for the window's newest user turn, within allow, leaving out what the
// session's opening block already shows; "" when there is none.
func (h *Hearth) memories(ctx context.Context, window []journal.Record, allow Allowance, sess *session) string {
	if h.cfg.Memories == nil || (allow.Memories <= 0 && allow.Tools <= 0) {
		return ""
	}
	req := MemoryRequest{Exclude: make(map[string]bool, len(window)+len(sess.injected)), Turns: allow.Memories, Tools: allow.Tools}
	if sess.opened {
		// The session's opening block holds the other half.
		req.Turns -= allow.Memories / 2
		req.Tools -= allow.Tools / 2
	}
	for id := range sess.injected {
		req.Exclude[id] = true
	}
	for _, r := range window {
		req.Exclude[r.ID] = true
		if r.Role == ipc.RoleUser {
			req.Query = r.Text
		}
	}
	if req.Query == "" {
		return ""
	}
	return h.cfg.Memories(ctx, req)
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
