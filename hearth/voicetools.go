package hearth

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// VoiceToolCall is a function the realtime voice model called, forwarded
// by the client that holds the voice session.
type VoiceToolCall struct {
	CallID    string // the provider's call_id; the answer carries it back
	Name      string
	Arguments string // the model's JSON arguments, as received
	Ref       string // the client's reference, echoed in the events about it
	// Conversation is the one the voice session talks in ("": main).
	Conversation string
}

// VoiceToolResult is what the client sends the provider as the call's
// function_call_output. IsError marks a call that failed or was refused;
// Output then says why, for the model.
type VoiceToolResult struct {
	CallID  string
	Output  string
	IsError bool
}

// maxCallID bounds a call_id: it is journaled and keys a confirmation.
const maxCallID = 256

// RunVoiceTool runs a tool the realtime voice model called, as a text
// turn runs each of its tool calls: the same registry and offered set
// (voiceTools offers exactly these), the same permission classes, a
// confirm tool asked of every client (ConfirmAsked; Confirm answers; no
// answer in time or a refusal is an error output for the model), and
// the same records on the one commit path, with mode voice: the agent
// step that asked for the call, then the tool's outcome, each published
// (TurnStored, ToolOutcome) with ToolStarted between them, so every
// client sees it and memory indexes it.
//
// Every failure of the call itself — an unknown tool, arguments that are
// not JSON, a tool error, a refusal, cancellation — is a result with
// IsError, never an error: the model reads it and carries on. The error
// is a *Problem for a request that cannot be answered: no voice provider
// (CodeNoVoiceProvider), no call id, the same call id already running
// (or waiting for a confirmation under it), or hearth shutting down.
//
// It runs on the caller's goroutine, concurrently with any text turn in
// flight: the conversation's turn queue never waits on it, nor it on a
// turn. The commit path orders their records in the journal; the
// conversation's state (StateChanged) stays the text turn's. ctx ending
// (the client left) cancels the call; its outcome is still journaled.
func (h *Hearth) RunVoiceTool(ctx context.Context, call VoiceToolCall) (VoiceToolResult, error) {
	if h.cfg.Voice == nil {
		return VoiceToolResult{}, &Problem{Code: CodeNoVoiceProvider, Message: msgNoVoiceProvider, Ref: call.Ref}
	}
	if call.CallID == "" || len(call.CallID) > maxCallID {
		return VoiceToolResult{}, &Problem{Code: CodeBadRequest, Message: "voice_tool_call needs the provider's call_id (at most 256 bytes)", Ref: call.Ref}
	}
	var c *conversation
	for {
		var err error
		if c, err = h.open(call.Conversation); err != nil {
			err.(*Problem).Ref = call.Ref
			return VoiceToolResult{}, err
		}
		h.mu.Lock()
		if !c.unloaded {
			break // held by its voiceCalls from here on (unloadIfIdle)
		}
		h.mu.Unlock() // it went idle in between: open it again
	}
	switch {
	case c.closed || h.closing:
		h.mu.Unlock()
		return VoiceToolResult{}, &Problem{Code: CodeShuttingDown, Message: "hearth is shutting down; the tool was not run", Ref: call.Ref}
	case c.voiceCalls[call.CallID] || c.confirms[call.CallID] != nil:
		h.mu.Unlock()
		return VoiceToolResult{}, &Problem{Code: CodeBadRequest, Message: "a voice tool call with that call_id is already running", Ref: call.Ref}
	}
	if c.voiceCalls == nil {
		c.voiceCalls = make(map[string]bool)
	}
	c.voiceCalls[call.CallID] = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(c.voiceCalls, call.CallID)
		h.mu.Unlock()
	}()

	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}" // a function without parameters
	}
	offered := agent.Offered(ctx, h.cfg.Tools, h.log)
	ac := agent.Prepare(llm.ToolCall{ID: call.CallID, Name: call.Name, Arguments: json.RawMessage(args)}, offered)

	// The step that asked for the call is stored first, as a text turn's
	// is: a crash mid-tool leaves the call journaled, without an outcome.
	step := journal.Record{
		Role: memory.RoleAgent, Mode: memory.ModeVoice,
		ToolCalls: []journal.ToolCall{{ID: ac.ID, Name: ac.Name, Arguments: tools.Redact(ac.Args), Reason: ac.Reason}},
	}
	if _, err := h.commit(context.WithoutCancel(ctx), c, step, func(r journal.Record) Event { return &TurnStored{Record: r, Ref: call.Ref} }); err != nil {
		return VoiceToolResult{}, &Problem{Code: CodeInternal, Message: "hearth could not store the voice tool call; it was not run", Ref: call.Ref}
	}

	obs := &voiceObserver{turnObserver{h: h, c: c, ref: call.Ref}}
	out := agent.RunCall(ctx, h.cfg.Tools, agent.Config{ToolTimeout: h.cfg.ToolTimeout, Log: h.log}, ac, obs)

	tr := &journal.ToolResult{
		CallID: ac.ID, Name: ac.Name, Arguments: tools.Redact(ac.Args), Reason: ac.Reason,
		DurationMS: out.Duration.Milliseconds(), Confirmed: out.Confirmed,
	}
	if out.Result.IsError {
		tr.Error = out.Result.Text
	}
	rec := journal.Record{Role: memory.RoleTool, Text: out.Result.Text, Mode: memory.ModeVoice, Tool: tr}
	if _, err := h.commit(context.WithoutCancel(ctx), c, rec, func(r journal.Record) Event { return &ToolOutcome{Record: r} }); err != nil {
		// The model still gets the outcome: the call has run.
		h.log.Error("voice tool outcome not stored", "tool", ac.Name, "err", err)
	}
	return VoiceToolResult{CallID: call.CallID, Output: out.Result.Text, IsError: out.Result.IsError}, nil
}

// voiceObserver carries a voice tool call's confirmation and start to
// every subscriber, as a text turn's observer does, but leaves the
// conversation's state to the text turn.
type voiceObserver struct {
	turn turnObserver
}

func (o *voiceObserver) Confirm(ctx context.Context, c agent.Call) (bool, error) {
	return o.turn.Confirm(ctx, c)
}

func (o *voiceObserver) ToolStart(c agent.Call) {
	o.turn.h.publishTo(MainConversation, &ToolStarted{ID: c.ID, Name: c.Name, Args: tools.Redact(c.Args), Reason: c.Reason})
}
