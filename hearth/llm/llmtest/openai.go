// Package llmtest provides stand-ins for model providers that speak the
// providers' real wire protocols over real HTTP, for tests in this and
// other packages (including end-to-end tests that point a separately
// started hearth binary at Server.URL).
package llmtest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Server is an OpenAI-compatible chat completions server, as served by
// OpenAI, xAI, Ollama's /v1, llama.cpp and vLLM. It is safe for concurrent
// use.
//
// It validates function tools, assistant tool calls and tool results as
// the real API does, records them normalised (see [Message]), and streams
// scripted tool calls as the providers do: OpenAI style, each call's
// arguments in several fragments keyed by index with the id and name only
// on the first; with [Reply.WholeToolCalls], xAI style, every call whole in
// one chunk.
//
// Token counts in its usage reports are synthetic but deterministic:
// prompt_tokens is the number of whitespace-separated words across all
// request messages, completion_tokens the number of content and tool-call
// chunks sent.
type Server struct {
	// URL is the base URL to configure a client with; it ends in /v1.
	URL string

	key string
	srv *httptest.Server
	script
	callSeq int // tool-call ids generated, under mu
}

// NewOpenAI starts a server that is shut down when the test ends. When key
// is not empty, requests must carry "Authorization: Bearer <key>" or get a
// 401 JSON error.
func NewOpenAI(t testing.TB, key string) *Server {
	t.Helper()
	s := &Server{key: key, script: newScript()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// wireRequest is the part of a chat completions request body the server
// looks at.
type wireRequest struct {
	Model         *string        `json:"model"`
	Messages      []wireMessage  `json:"messages"`
	Tools         []wireTool     `json:"tools"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	N             *int           `json:"n"`
	// ResponseFormat is structured output: {type, json_schema:{...}}.
	ResponseFormat json.RawMessage `json:"response_format"`
}

// wireTool is a declared tool: {type:"function",function:{...}}.
type wireTool struct {
	Type     string        `json:"type"`
	Function *wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

// wireToolCall is a call in an assistant message of a request.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// maxBody bounds a request body; real providers accept contexts of
// millions of tokens, so it is generous.
const maxBody = 64 << 20

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", "", "")
		return
	}
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var req wireRequest
	decodeErr := json.Unmarshal(body, &req)
	s.record(r, &req, decodeErr == nil)

	if !s.authorized(r) {
		if r.Header.Get("Authorization") == "" {
			writeError(w, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", "", "")
			return
		}
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key")
		return
	}
	if readErr != nil {
		writeError(w, http.StatusBadRequest, "The request body could not be read: "+readErr.Error(), "invalid_request_error", "", "")
		return
	}
	if decodeErr != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", "invalid_request_error", "", "")
		return
	}
	msgs, param, problem := validate(&req)
	if problem != "" {
		writeError(w, http.StatusBadRequest, problem, "invalid_request_error", param, "")
		return
	}

	reply := s.next(msgs)
	if reply.Silent {
		s.hang(r.Context())
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(reply.RetryAfter.Seconds())), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(reply.RetryAfter.Milliseconds(), 10))
		}
		msg, typ, param, code := errorFor(reply.Status, reply.ErrorCode, promptWords(msgs))
		writeError(w, reply.Status, msg, typ, param, code)
		return
	}
	st := &replyState{
		s:            s,
		w:            w,
		r:            r,
		reply:        reply,
		model:        *req.Model,
		id:           s.newID(),
		created:      time.Now().Unix(),
		promptTokens: promptWords(msgs),
		calls:        s.callIDs(reply.ToolCalls),
	}
	if req.Stream {
		st.stream(req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	st.complete()
}

// record keeps what the request carried. ok reports whether the body
// decoded.
func (s *Server) record(r *http.Request, req *wireRequest, ok bool) {
	rec := RecordedRequest{Header: r.Header.Clone()}
	rec.Header.Del("Authorization")
	if ok {
		if req.Model != nil {
			rec.Model = *req.Model
		}
		for _, m := range req.Messages {
			rec.Messages = append(rec.Messages, normalize(m))
		}
		for _, tl := range req.Tools {
			if tl.Function != nil {
				rec.Tools = append(rec.Tools, Tool{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: slices.Clone(tl.Function.Parameters)})
			}
		}
		rec.Stream = req.Stream
		rec.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		rec.Output = outputSchema(req.ResponseFormat)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.key == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) == 1
}

// normalize converts a wire message into a recorded one. Parts it cannot
// read are left zero.
func normalize(m wireMessage) Message {
	content, _ := contentText(m.Content)
	out := Message{Role: m.Role, Content: content}
	if m.ToolCallID != nil {
		out.ToolCallID = *m.ToolCallID
	}
	for _, tc := range m.ToolCalls {
		c := ToolCall{ID: tc.ID}
		if tc.Function != nil {
			c.Name = tc.Function.Name
			if tc.Function.Arguments != nil {
				c.Arguments = *tc.Function.Arguments
			}
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}

// maxTools is OpenAI's limit on declared tools (xAI allows 200).
const maxTools = 128

// validate checks the request as the real API does and returns its
// messages, or the offending parameter and a description of the problem.
func validate(req *wireRequest) (msgs []Message, param, problem string) {
	if param, problem := validateTools(req.Tools); problem != "" {
		return nil, param, problem
	}
	switch {
	case req.Model == nil:
		return nil, "model", "you must provide a model parameter"
	case *req.Model == "":
		return nil, "model", "Invalid value for 'model': the model must not be empty."
	case req.Messages == nil:
		return nil, "messages", "Missing required parameter: 'messages'."
	case len(req.Messages) == 0:
		return nil, "messages", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
	case req.StreamOptions != nil && !req.Stream:
		return nil, "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled."
	case req.N != nil && *req.N != 1:
		// The stand-in answers with one choice only.
		return nil, "n", "Invalid value for 'n': this server supports only n=1."
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		case "":
			return nil, fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("Missing required parameter: 'messages[%d].role'.", i)
		default:
			return nil, fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool', and 'function'.", m.Role)
		}
		content, ok := contentText(m.Content)
		if !ok {
			return nil, fmt.Sprintf("messages[%d].content", i), fmt.Sprintf("Invalid type for 'messages[%d].content': expected a string or an array of content parts.", i)
		}
		if content == "" && isNull(m.Content) && m.Role != "assistant" {
			return nil, fmt.Sprintf("messages[%d].content", i), fmt.Sprintf("Missing required parameter: 'messages[%d].content'.", i)
		}
		msgs = append(msgs, normalize(m))
	}
	if param, problem := validateToolFlow(req.Messages); problem != "" {
		return nil, param, problem
	}
	return msgs, "", ""
}

// validateTools checks declared function tools.
func validateTools(tools []wireTool) (param, problem string) {
	if len(tools) > maxTools {
		return "tools", fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxTools, len(tools))
	}
	for i, tl := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		switch {
		case tl.Type == "":
			return p + ".type", fmt.Sprintf("Missing required parameter: '%s.type'.", p)
		case tl.Type != "function":
			return p + ".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'custom'.", tl.Type)
		case tl.Function == nil:
			return p + ".function", fmt.Sprintf("Missing required parameter: '%s.function'.", p)
		case tl.Function.Name == "":
			return p + ".function.name", fmt.Sprintf("Missing required parameter: '%s.function.name'.", p)
		case len(tl.Function.Name) > 64:
			return p + ".function.name", fmt.Sprintf("Invalid '%s.function.name': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", p, len(tl.Function.Name))
		case !validToolName(tl.Function.Name):
			return p + ".function.name", fmt.Sprintf("Invalid '%s.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", p)
		}
		if isNull(tl.Function.Parameters) {
			continue
		}
		var schema map[string]json.RawMessage
		if err := json.Unmarshal(tl.Function.Parameters, &schema); err != nil {
			return p + ".function.parameters", fmt.Sprintf("Invalid type for '%s.function.parameters': expected an object.", p)
		}
		var typ string
		if raw, ok := schema["type"]; ok {
			json.Unmarshal(raw, &typ)
		}
		if typ != "object" {
			return p + ".function.parameters", fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'.", tl.Function.Name, cmpOr(typ, "None"))
		}
	}
	return "", ""
}

func validToolName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// validateToolFlow checks assistant tool calls and tool results: every
// call is answered by a tool message right after it, and every tool
// message answers a call of the assistant message before it.
func validateToolFlow(msgs []wireMessage) (param, problem string) {
	var (
		calls   []string        // the open assistant message's call ids, in order
		pending map[string]bool // those not answered yet
	)
	unanswered := func(i int) (string, string) {
		var ids []string
		for _, id := range calls {
			if pending[id] {
				ids = append(ids, id)
			}
		}
		return fmt.Sprintf("messages.[%d].role", i), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", ")
	}
	for i, m := range msgs {
		if m.Role != "tool" && len(pending) > 0 {
			return unanswered(i)
		}
		switch m.Role {
		case "assistant":
			calls, pending = nil, nil
			for j, tc := range m.ToolCalls {
				p := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
				switch {
				case tc.ID == "":
					return p + ".id", fmt.Sprintf("Missing required parameter: '%s.id'.", p)
				case tc.Type != "function":
					return p + ".type", fmt.Sprintf("Invalid value for '%s.type': expected 'function'.", p)
				case tc.Function == nil:
					return p + ".function", fmt.Sprintf("Missing required parameter: '%s.function'.", p)
				case tc.Function.Name == "":
					return p + ".function.name", fmt.Sprintf("Missing required parameter: '%s.function.name'.", p)
				case tc.Function.Arguments == nil:
					return p + ".function.arguments", fmt.Sprintf("Missing required parameter: '%s.function.arguments'.", p)
				case pending[tc.ID]:
					return p + ".id", fmt.Sprintf("Invalid '%s.id': duplicate tool_call_id '%s'.", p, tc.ID)
				}
				if pending == nil {
					pending = make(map[string]bool)
				}
				calls = append(calls, tc.ID)
				pending[tc.ID] = true
			}
		case "tool":
			p := fmt.Sprintf("messages[%d]", i)
			switch {
			case m.ToolCallID == nil || *m.ToolCallID == "":
				return p + ".tool_call_id", fmt.Sprintf("Missing required parameter: '%s.tool_call_id'.", p)
			case calls == nil:
				return p + ".role", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			case !slices.Contains(calls, *m.ToolCallID):
				return p + ".tool_call_id", fmt.Sprintf("Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", *m.ToolCallID)
			}
			delete(pending, *m.ToolCallID)
		default:
			calls, pending = nil, nil
		}
	}
	if len(pending) > 0 {
		return unanswered(len(msgs))
	}
	return "", ""
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// contentText returns a message's text: a string, the joined text of an
// array of content parts, or "" for null. ok is false for anything else.
func contentText(raw json.RawMessage) (text string, ok bool) {
	if isNull(raw) {
		return "", true
	}
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// promptWords is the synthetic prompt token count of msgs.
func promptWords(msgs []Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(strings.Fields(m.Content)))
	}
	return n
}

func (s *Server) newID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("chatcmpl-llmtest%06d", s.seq)
}

// callIDs returns calls with generated ids where the script left them
// empty.
func (s *Server) callIDs(calls []ToolCall) []ToolCall {
	out := slices.Clone(calls)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		if out[i].ID == "" {
			s.callSeq++
			out[i].ID = fmt.Sprintf("call_llmtest%06d", s.callSeq)
		}
	}
	return out
}

// errorFor returns the message, type, param and code the real API uses
// for status, or for code when the script names one. promptTokens goes
// into a context overflow's message.
func errorFor(status int, code string, promptTokens int64) (msg, typ, param, wantCode string) {
	switch code {
	case "":
	case "context_length_exceeded":
		const window = 131072
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, window+promptTokens), "invalid_request_error", "messages", code
	default:
		msg, typ, _ = statusError(status)
		return msg, typ, "", code
	}
	msg, typ, code = statusError(status)
	return msg, typ, "", code
}

// statusError returns the message, type and code the real API uses for
// status.
func statusError(status int) (msg, typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "You are not allowed to access this resource.", "permission_denied", ""
	case status == http.StatusNotFound:
		return "The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case status >= http.StatusInternalServerError:
		return "The server had an error while processing your request. Sorry about that!", "server_error", ""
	default:
		return "Invalid request: " + strings.ToLower(http.StatusText(status)) + ".", "invalid_request_error", ""
	}
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, msg, typ, param, code string) {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	writeJSON(w, status, errorBody{Error: errorObject{Message: msg, Type: typ, Param: nullable(param), Code: nullable(code)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "llmtest: encoding a reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Wire types of a reply.
type (
	completion struct {
		ID                string             `json:"id"`
		Object            string             `json:"object"`
		Created           int64              `json:"created"`
		Model             string             `json:"model"`
		SystemFingerprint string             `json:"system_fingerprint"`
		Choices           []completionChoice `json:"choices"`
		Usage             usage              `json:"usage"`
	}
	completionChoice struct {
		Index        int             `json:"index"`
		Message      assistantMsg    `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason string          `json:"finish_reason"`
	}
	assistantMsg struct {
		Role      string          `json:"role"`
		Content   *string         `json:"content"` // null beside tool calls
		Refusal   json.RawMessage `json:"refusal"`
		ToolCalls []toolCallOut   `json:"tool_calls,omitempty"`
	}
	toolCallOut struct {
		ID       string      `json:"id"`
		Type     string      `json:"type"`
		Function functionOut `json:"function"`
	}
	functionOut struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chunk struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint string          `json:"system_fingerprint"`
		Choices           []chunkChoice   `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
	}
	chunkChoice struct {
		Index        int             `json:"index"`
		Delta        delta           `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	}
	delta struct {
		Role      string          `json:"role,omitempty"`
		Content   *string         `json:"content,omitempty"`
		ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
	}
	// toolCallDelta is a streamed fragment of a call: the first carries
	// id, type and name, the rest only arguments.
	toolCallDelta struct {
		Index    int           `json:"index"`
		ID       string        `json:"id,omitempty"`
		Type     string        `json:"type,omitempty"`
		Function functionDelta `json:"function"`
	}
	functionDelta struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	}
)

var null = json.RawMessage("null")

// replyState is one reply being written.
type replyState struct {
	s            *Server
	w            http.ResponseWriter
	r            *http.Request
	reply        Reply
	calls        []ToolCall // reply.ToolCalls with their ids
	model        string
	id           string
	created      int64
	promptTokens int64
}

func (st *replyState) usage(completion int64) usage {
	return usage{PromptTokens: st.promptTokens, CompletionTokens: completion, TotalTokens: st.promptTokens + completion}
}

func (st *replyState) finishReason() string {
	switch {
	case st.reply.FinishReason != "":
		return st.reply.FinishReason
	case len(st.calls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

// wait sleeps d on the server side (a scripted provider delay). It reports
// false when the client went away or the server is closing.
func (st *replyState) wait(d time.Duration) bool {
	return st.s.wait(st.r.Context(), d)
}

func (st *replyState) hang() {
	st.s.hang(st.r.Context())
}

// complete answers a request with stream false.
func (st *replyState) complete() {
	text, ok := st.s.whole(st.r.Context(), st.reply)
	if !ok {
		return
	}
	msg := assistantMsg{Role: "assistant", Refusal: null}
	if s := text; s != "" || len(st.calls) == 0 {
		msg.Content = &s
	}
	for _, c := range st.calls {
		msg.ToolCalls = append(msg.ToolCalls, toolCallOut{ID: c.ID, Type: "function", Function: functionOut{Name: c.Name, Arguments: c.Arguments}})
	}
	writeJSON(st.w, http.StatusOK, completion{
		ID:                st.id,
		Object:            "chat.completion",
		Created:           st.created,
		Model:             st.model,
		SystemFingerprint: "fp_llmtest",
		Choices: []completionChoice{{
			Message:      msg,
			Logprobs:     null,
			FinishReason: st.finishReason(),
		}},
		Usage: st.usage(int64(len(st.reply.Chunks) + len(st.calls))),
	})
}

// argumentFragment is the size in bytes (rounded up to a rune boundary)
// of the pieces a call's arguments are streamed in, OpenAI style.
const argumentFragment = 7

// fragments splits s into pieces of about size bytes, never inside a
// UTF-8 sequence.
func fragments(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// toolCallChunks returns the deltas that stream st.calls: one delta with
// every call whole (xAI), or per call a delta with id and name followed by
// argument fragments (OpenAI).
func (st *replyState) toolCallChunks() [][]toolCallDelta {
	if len(st.calls) == 0 {
		return nil
	}
	if st.reply.WholeToolCalls {
		whole := make([]toolCallDelta, len(st.calls))
		for i, c := range st.calls {
			whole[i] = toolCallDelta{Index: i, ID: c.ID, Type: "function", Function: functionDelta{Name: c.Name, Arguments: c.Arguments}}
		}
		return [][]toolCallDelta{whole}
	}
	var out [][]toolCallDelta
	for i, c := range st.calls {
		out = append(out, []toolCallDelta{{Index: i, ID: c.ID, Type: "function", Function: functionDelta{Name: c.Name}}})
		for _, f := range fragments(c.Arguments, argumentFragment) {
			out = append(out, []toolCallDelta{{Index: i, Function: functionDelta{Arguments: f}}})
		}
	}
	return out
}

// stream answers a request with stream true as server-sent events.
func (st *replyState) stream(includeUsage bool) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(st.w)
	if err := rc.Flush(); err != nil {
		return
	}
	if st.reply.Hang {
		st.hang()
		return
	}

	xai := st.reply.UsageEveryChunk
	var sent int64 // content and tool-call chunks sent
	send := func(choices []chunkChoice, u json.RawMessage) bool {
		if choices == nil {
			choices = []chunkChoice{}
		}
		if xai {
			b, _ := json.Marshal(st.usage(sent))
			u = b
		} else if u == nil && includeUsage {
			u = null // OpenAI sends "usage":null until the usage chunk
		}
		b, err := json.Marshal(chunk{
			ID:                st.id,
			Object:            "chat.completion.chunk",
			Created:           st.created,
			Model:             st.model,
			SystemFingerprint: "fp_llmtest",
			Choices:           choices,
			Usage:             u,
		})
		if err != nil {
			return false // cannot happen with these types; end the reply
		}
		if _, err := fmt.Fprintf(st.w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	text := func(role, s string) []chunkChoice {
		return []chunkChoice{{Delta: delta{Role: role, Content: &s}, Logprobs: null}}
	}

	role := "assistant"
	if !xai {
		// OpenAI opens with a role-only chunk; xAI puts the role on the
		// first content chunk.
		if !send(text(role, ""), nil) {
			return
		}
		role = ""
	}
	for i, c := range st.reply.Chunks {
		if st.reply.CutAfter > 0 && i == st.reply.CutAfter {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		if st.reply.StallAfter > 0 && i == st.reply.StallAfter {
			st.hang()
			return
		}
		if !st.wait(c.Delay) {
			return
		}
		sent++
		if !send(text(role, c.Text), nil) {
			return
		}
		role = ""
	}
	for _, calls := range st.toolCallChunks() {
		sent++
		if !send([]chunkChoice{{Delta: delta{Role: role, ToolCalls: calls}, Logprobs: null}}, nil) {
			return
		}
		role = ""
	}
	if st.reply.CutAfter > 0 {
		panic(http.ErrAbortHandler) // CutAfter >= len(Chunks): cut before the finish
	}
	if st.reply.StallAfter > 0 {
		st.hang() // StallAfter >= len(Chunks): stall before the finish
		return
	}
	reason := st.finishReason()
	if !send([]chunkChoice{{Delta: delta{Role: role}, Logprobs: null, FinishReason: &reason}}, nil) {
		return
	}
	if includeUsage && !xai {
		b, _ := json.Marshal(st.usage(sent))
		if !send([]chunkChoice{}, b) {
			return
		}
	}
	fmt.Fprint(st.w, "data: [DONE]\n\n")
	rc.Flush()
}

// BaseURL returns URL, the base URL to configure a client with.
func (s *Server) BaseURL() string { return s.URL }
