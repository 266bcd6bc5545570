package httpdoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// CompanionModel is the model name every OpenAI client may ask for: the
// companion with its memory, on whichever provider is configured.
const CompanionModel = "mnemo"

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	N                   *int64          `json:"n"`
	User                string          `json:"user"`
	Stop                json.RawMessage `json:"stop"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Seed                *int64          `json:"seed"`
	Metadata            json.RawMessage `json:"metadata"`
	Store               *bool           `json:"store"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Refusal    json.RawMessage `json:"refusal"`
}

// text is a message's content: a string, or the text of its text parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// lastUser is the text of the last user message: the turn the request
// adds to the conversation. The rest of the messages are the client's own
// view; the companion answers from its memory of the whole conversation.
func lastUser(msgs []chatMessage) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			t := msgs[i].text()
			return t, strings.TrimSpace(t) != ""
		}
	}
	return "", false
}

// modelNames is what /v1/models lists: the companion's own name, then
// the configured models by the names a request may give.
func (d *Door) modelNames() []string {
	names := []string{CompanionModel}
	if d.o.Models != nil {
		names = append(names, d.o.Models.Choices()...)
	}
	return names
}

// pickModel is the model a request named for its turn: nil (the
// conversation's own) for none or the companion's name, else one of the
// configured models; any other name is 404 model_not_found.
func (d *Door) pickModel(name string) (hearth.Model, error) {
	if name == "" || name == CompanionModel {
		return nil, nil
	}
	if d.o.Models != nil {
		if m, ok := d.o.Models.Named(name); ok {
			return m, nil
		}
	}
	return nil, modelNotFound(name)
}

func modelNotFound(name string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", param: "model",
		msg: "the model " + quoteShort(name) + " does not exist here; GET /v1/models lists the models"}
}

func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

type modelList struct {
	Object    string        `json:"object"`
	Data      []modelObject `json:"data"`
	RequestID string        `json:"request_id"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (d *Door) models(c *call) error {
	out := modelList{Object: "list", Data: []modelObject{}, RequestID: c.id}
	for _, n := range d.modelNames() {
		out.Data = append(out.Data, modelObject{ID: n, Object: "model", Created: d.started.Unix(), OwnedBy: "mnemo"})
	}
	writeJSON(c, http.StatusOK, out)
	return nil
}

type chatCompletion struct {
	ID        string        `json:"id"`
	Object    string        `json:"object"`
	Created   int64         `json:"created"`
	Model     string        `json:"model"`
	Choices   []chatChoice  `json:"choices"`
	Usage     *chatUsage    `json:"usage,omitempty"`
	RequestID string        `json:"request_id"`
	Mnemo     *mnemoTurnIDs `json:"mnemo,omitempty"`
	Debug     *transcript   `json:"debug,omitempty"`
}

type chatChoice struct {
	Index        int              `json:"index"`
	Message      *assistantOutput `json:"message,omitempty"`
	Delta        *assistantOutput `json:"delta,omitempty"`
	FinishReason *string          `json:"finish_reason"`
	Logprobs     *struct{}        `json:"logprobs"`
}

type assistantOutput struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	Refusal *string `json:"refusal,omitempty"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// mnemoTurnIDs names the stored turn and reply, for history and forget.
type mnemoTurnIDs struct {
	TurnID  string `json:"turn_id"`
	ReplyID string `json:"reply_id,omitempty"`
}

func usageOf(u *hearth.Usage) *chatUsage {
	if u == nil {
		return &chatUsage{}
	}
	return &chatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

func ptr[T any](v T) *T { return &v }

// chatCompletions answers POST /v1/chat/completions: the last user
// message is a turn of the companion's conversation; its reply comes
// back whole or as chat.completion.chunk events.
func (d *Door) chatCompletions(c *call) error {
	var req chatRequest
	if err := readJSON(c, d.o.MaxBody, "chat_completion_request", &req); err != nil {
		return err
	}
	content, ok := lastUser(req.Messages)
	if !ok {
		cl := &clarify{MissingFields: []string{"messages[].role=user"}, BadTypes: []string{}, OutOfRange: []string{}}
		return unprocessable("the messages need a user message with text: it is what the companion answers", cl)
	}
	model, err := d.pickModel(req.Model)
	if err != nil {
		return err
	}
	conv, err := d.chatConversation(c, req.Metadata)
	if err != nil {
		return err
	}
	c.trace.step("route", 0, "turn of the conversation "+convName(conv))
	id := "chatcmpl-" + strings.TrimPrefix(c.id, "req_")
	created := time.Now().Unix()
	if !req.Stream {
		t0 := time.Now()
		end, err := d.runTurn(c.r.Context(), conv, c.id, content, model, func(turnEvent) error { return nil })
		if err != nil {
			return err
		}
		c.trace.step("turn", time.Since(t0), "")
		if end.Problem != nil {
			return fromProblem(end.Problem)
		}
		writeJSON(c, http.StatusOK, chatCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: cmpModel(end.Model, req.Model),
			Choices: []chatChoice{{Message: &assistantOutput{Role: "assistant", Content: &end.Text}, FinishReason: ptr("stop")}},
			Usage:   usageOf(end.Usage), RequestID: c.id,
			Mnemo: &mnemoTurnIDs{TurnID: end.TurnID, ReplyID: end.ReplyID}, Debug: c.trace,
		})
		return nil
	}

	s := startSSE(c)
	chunk := func(delta *assistantOutput, finish *string) chatCompletion {
		return chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			Choices: []chatChoice{{Delta: delta, FinishReason: finish}}, RequestID: c.id}
	}
	first := true
	end, err := d.runTurn(c.r.Context(), conv, c.id, content, model, func(ev turnEvent) error {
		if ev.Text == "" {
			return nil
		}
		delta := &assistantOutput{Content: &ev.Text}
		if first {
			delta.Role, first = "assistant", false
		}
		return s.data(chunk(delta, nil))
	})
	if err != nil {
		if !s.started {
			return err // refused before anything was written
		}
		return s.fail(asAPIError(err))
	}
	if p := end.Problem; p != nil {
		if !s.started && preStream(p) {
			return fromProblem(p) // nothing streamed yet: a status says it
		}
		return s.fail(fromProblem(safeProblem(p)))
	}
	if first {
		s.data(chunk(&assistantOutput{Role: "assistant", Content: ptr("")}, nil))
	}
	s.data(chunk(&assistantOutput{}, ptr("stop")))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := chunk(nil, nil)
		u.Choices, u.Usage = []chatChoice{}, usageOf(end.Usage)
		s.data(u)
	}
	return s.raw("data: [DONE]\n\n")
}

func cmpModel(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sse writes a text/event-stream response, flushing each event. Each
// event is framed in one buffer kept for the stream (the JSON encoded
// straight into it) and handed to the ResponseWriter in one Write, then
// flushed once: no second buffer, no copy per line.
type sse struct {
	c       *call
	rc      *http.ResponseController
	buf     bytes.Buffer
	enc     *json.Encoder // encodes into buf
	started bool
	err     error
}

func startSSE(c *call) *sse {
	s := &sse{c: c, rc: http.NewResponseController(c.w)}
	s.enc = json.NewEncoder(&s.buf)
	return s
}

func (s *sse) begin() {
	if s.started {
		return
	}
	s.started = true
	s.c.streaming = true
	s.c.status = http.StatusOK
	h := s.c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	s.c.w.WriteHeader(http.StatusOK)
}

func (s *sse) raw(text string) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString(text)
	return s.send()
}

// send writes buf as it is and flushes it to the client.
func (s *sse) send() error {
	if s.err != nil {
		return s.err
	}
	s.begin()
	if _, err := s.c.w.Write(s.buf.Bytes()); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
	return s.err
}

// frame writes "[event: <name>\n]data: <v as JSON>\n\n" (the encoder
// ends the JSON with the first newline).
func (s *sse) frame(name string, v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(name)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	s.buf.WriteByte('\n')
	return s.send()
}

// data writes one unnamed event (OpenAI's stream).
func (s *sse) data(v any) error { return s.frame("", v) }

// event writes one named event (/engine/chat).
func (s *sse) event(name string, v any) error { return s.frame(name, v) }

// fail ends an OpenAI stream with an error event, as OpenAI's own
// streams do; the status was sent already.
func (s *sse) fail(e *apiError) error {
	s.data(errorBody{Error: errorObject{Message: e.msg, Type: e.typ, Code: e.code}, RequestID: s.c.id})
	return e
}
