package httpdoor

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mnemo/mnemo/hearth"
)

// engineRequest is POST /engine/chat's body (seed 000).
type engineRequest struct {
	// Model, when set, names one of the configured models for this turn
	// (as /v1/chat/completions' model; GET /v1/models lists them).
	Model    string          `json:"model"`
	Messages []engineMessage `json:"messages"`
	Metadata engineMetadata  `json:"metadata"`
}

type engineMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type engineMetadata struct {
	ConversationID string          `json:"conversation_id"`
	CorrelationID  string          `json:"correlation_id"`
	Trigger        string          `json:"trigger"`
	ClientContext  json.RawMessage `json:"client_context"`
}

// The stream's events (seed 000).
type (
	textDelta struct {
		Content string `json:"content"`
	}
	toolCallEvent struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	toolResultEvent struct {
		ID     string  `json:"id"`
		Output *string `json:"output,omitempty"`
		Error  *string `json:"error,omitempty"`
	}
	doneEvent struct {
		FinishReason   string      `json:"finish_reason"`
		Usage          engineUsage `json:"usage"`
		ConversationID string      `json:"conversation_id"`
		CorrelationID  string      `json:"correlation_id"`
		TurnID         string      `json:"turn_id"`
		ReplyID        string      `json:"reply_id"`
		RequestID      string      `json:"request_id"`
	}
	engineUsage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	}
	errorEvent struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	}
)

// The stream's error codes, each with its one fixed message (ARCH-5,
// ARCH-6): what went wrong in detail is in hearth's log, never here.
const (
	codeProviderError   = "provider_error"
	codeToolError       = "tool_error"
	codeContextOverflow = "context_overflow"
	codeCancelled       = "cancelled"
	codeUnavailable     = "unavailable"
)

var safeMessages = map[string]string{
	codeProviderError:   "the model provider failed to answer; try again later",
	codeToolError:       "a tool failed while answering",
	codeContextOverflow: "the conversation is too long for the model's context",
	codeCancelled:       "the reply was cancelled",
	codeUnavailable:     "hearth stopped answering; try again shortly",
}

// streamCode maps a problem of the core to the stream's taxonomy. A turn
// that ended in its tool loop (the model still calling tools at the
// iteration limit, or a tool's outcome not stored) is tool_error; a tool
// that merely fails is a tool-result with an error, and the model goes
// on, so the stream does too.
func streamCode(p *hearth.Problem) string {
	if p.InTools && p.Code == hearth.CodeProviderError {
		return codeToolError
	}
	switch p.Code {
	case hearth.CodeContextOverflow:
		return codeContextOverflow
	case hearth.CodeToolError:
		return codeToolError
	case hearth.CodeCancelled:
		return codeCancelled
	case hearth.CodeShuttingDown, hearth.CodeUnavailable, hearth.CodeSlowClient, hearth.CodeNoProvider:
		return codeUnavailable
	}
	return codeProviderError
}

// safeProblem is p with its stream code and fixed message.
func safeProblem(p *hearth.Problem) *hearth.Problem {
	code := streamCode(p)
	out := &hearth.Problem{Code: p.Code, Message: safeMessages[code], Ref: p.Ref}
	return out
}

// preStream says whether a problem that came before anything streamed is
// answered as a status (503: no agent loop to answer) rather than a stream.
func preStream(p *hearth.Problem) bool {
	switch p.Code {
	case hearth.CodeNoProvider, hearth.CodeShuttingDown, hearth.CodeUnavailable:
		return true
	}
	return false
}

// engineChat answers POST /engine/chat: the last user message is a turn
// of the conversation, streamed back as text-delta, tool-call,
// tool-result, then done or error. Before the stream: 400 for an invalid
// request, 401, 503 when no agent loop can answer.
func (d *Door) engineChat(c *call) error {
	var req engineRequest
	if err := readJSON(c, d.o.MaxBody, "engine_chat_request", &req); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusUnprocessableEntity {
			e := *ae
			e.status = http.StatusBadRequest // seed 000: invalid request is 400
			return &e
		}
		return err
	}
	// Seed 000: a conversation id resumes that conversation; without one
	// the message starts a new conversation, which done names.
	conv, err := d.known(req.Metadata.ConversationID, "metadata.conversation_id")
	if err != nil {
		return err
	}
	var content string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			content = req.Messages[i].Content
			break
		}
	}
	if content == "" {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "bad_request",
			msg: "the messages need a user message with content", clarify: &clarify{MissingFields: []string{"messages[].role=user"}, BadTypes: []string{}, OutOfRange: []string{}}}
	}
	model, err := d.pickModel(req.Model)
	if err != nil {
		return err
	}
	if conv == "" {
		info, err := d.core.NewConversation("")
		if err != nil {
			return err
		}
		conv = info.ID
	}
	s := startSSE(c)
	end, err := d.runTurn(c.r.Context(), conv, c.id, content, model, func(ev turnEvent) error {
		switch {
		case ev.Text != "":
			return s.event("text-delta", textDelta{Content: ev.Text})
		case ev.Call != nil:
			args := ev.Call.Args
			if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
				args = json.RawMessage(`{}`)
			}
			return s.event("tool-call", toolCallEvent{ID: ev.Call.ID, Name: ev.Call.Name, Arguments: args})
		case ev.Result != nil:
			r := toolResultEvent{ID: ev.Result.ID}
			if ev.Result.Error != "" {
				r.Error = ptr(safeMessages[codeToolError])
			} else {
				r.Output = &ev.Result.Output
			}
			return s.event("tool-result", r)
		}
		return nil
	})
	if err != nil {
		if !s.started {
			return err
		}
		s.event("error", errorEvent{Code: codeUnavailable, Message: safeMessages[codeUnavailable], RequestID: c.id})
		return err
	}
	if p := end.Problem; p != nil {
		if !s.started && preStream(p) {
			return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: p.Code, msg: p.Message}
		}
		code := streamCode(p)
		d.log.Warn("http: engine turn failed", "request_id", c.id, "correlation_id", req.Metadata.CorrelationID, "code", p.Code, "detail", p.Message)
		s.event("error", errorEvent{Code: code, Message: safeMessages[code], RequestID: c.id})
		return nil
	}
	u := engineUsage{}
	if end.Usage != nil {
		u = engineUsage{PromptTokens: end.Usage.InputTokens, CompletionTokens: end.Usage.OutputTokens}
	}
	return s.event("done", doneEvent{FinishReason: "stop", Usage: u, ConversationID: conv, CorrelationID: req.Metadata.CorrelationID,
		TurnID: end.TurnID, ReplyID: end.ReplyID, RequestID: c.id})
}
