package llmtest

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// AnthropicServer is an Anthropic Messages API server (POST /v1/messages).
// It is safe for concurrent use.
//
// It checks what the real API checks: the x-api-key and anthropic-version
// headers, model, max_tokens, strictly alternating user and assistant
// messages starting with a user message, non-empty content, tool_use ids
// answered by tool_result blocks in the next message (results first), and
// tool definitions. Refusals are the API's JSON errors
// {"type":"error","error":{"type","message"},"request_id"}.
//
// It records every request that reaches the endpoint normalised (see
// [Message]): the system prompt becomes a leading "system" message,
// tool_use blocks an assistant's ToolCalls, and each tool_result block a
// "tool" message of its own.
//
// A scripted [Reply] is streamed as the API streams: message_start, ping,
// a text block with one text_delta per chunk, one tool_use block per call
// whose input arrives as input_json_delta fragments (in one piece with
// [Reply.WholeToolCalls]), message_delta with the stop_reason and usage,
// message_stop. Reply.FinishReason uses OpenAI's words ("stop", "length")
// and is translated ("end_turn", "max_tokens"); a reply with tool calls
// stops with "tool_use". A request with stream false gets the whole
// message as JSON. A scripted error reply carries the API's error type for
// its status (529 is overloaded_error); Reply.RetryAfter sets retry-after
// in whole seconds, rounded up, as Anthropic sends it (no retry-after-ms).
//
// Token counts are synthetic but deterministic: input_tokens is the number
// of whitespace-separated words across the recorded messages, output_tokens
// the number of text chunks sent.
type AnthropicServer struct {
	key string
	srv *httptest.Server
	script
}

// NewAnthropic starts a server that is shut down when the test ends. When
// key is not empty, requests must carry "x-api-key: <key>" or get a 401
// authentication_error.
func NewAnthropic(t testing.TB, key string) *AnthropicServer {
	t.Helper()
	s := &AnthropicServer{key: key, script: newScript()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// BaseURL is the base URL to configure a client with, as the SDKs expect
// it: the server's root, without /v1.
func (s *AnthropicServer) BaseURL() string { return s.srv.URL }

// Wire types of a Messages request: only what the server looks at.
type (
	anthRequest struct {
		Model     *string         `json:"model"`
		MaxTokens *int64          `json:"max_tokens"`
		Messages  []anthMessage   `json:"messages"`
		System    json.RawMessage `json:"system"`
		Tools     []anthTool      `json:"tools"`
		Stream    bool            `json:"stream"`
		// OutputConfig carries structured output as output_config.format.
		OutputConfig *struct {
			Format json.RawMessage `json:"format"`
		} `json:"output_config"`
	}
	anthMessage struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	anthTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	// anthBlock is any content block; which fields apply depends on Type.
	anthBlock struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   *bool           `json:"is_error"`
	}
)

// anthParsed is a request that passed validation.
type anthParsed struct {
	model    string
	messages []Message // normalised, system first
	tools    []Tool
}

func (s *AnthropicServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" {
		anthWriteError(w, http.StatusNotFound, "not_found_error", "Not Found", "")
		return
	}
	if r.Method != http.MethodPost {
		anthWriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("Method Not Allowed: %s %s", r.Method, r.URL.Path), "")
		return
	}
	reqID := s.newID("req_llmtest")
	w.Header().Set("Request-Id", reqID)

	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnthropicBody))
	var req anthRequest
	decodeErr := json.Unmarshal(body, &req)
	if readErr != nil {
		decodeErr = readErr
	}
	parsed, problem := anthValidate(&req)
	s.record(r, &req, decodeErr == nil, parsed)

	if problem := s.authProblem(r); problem != "" {
		anthWriteError(w, http.StatusUnauthorized, "authentication_error", problem, reqID)
		return
	}
	switch v := r.Header.Get("Anthropic-Version"); v {
	case "2023-06-01", "2023-01-01":
	case "":
		anthWriteError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", reqID)
		return
	default:
		anthWriteError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("anthropic-version: invalid version %q", v), reqID)
		return
	}
	if readErr != nil {
		anthWriteError(w, http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes.", reqID)
		return
	}
	if decodeErr != nil {
		anthWriteError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body of your request: "+decodeErr.Error(), reqID)
		return
	}
	if problem != "" {
		anthWriteError(w, http.StatusBadRequest, "invalid_request_error", problem, reqID)
		return
	}

	reply := s.next(parsed.messages)
	if reply.Silent {
		s.hang(r.Context())
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(reply.RetryAfter.Seconds())), 10))
		}
		typ, msg := anthErrorFor(reply.Status, reply.ErrorCode, parsed.model)
		anthWriteError(w, reply.Status, typ, msg, reqID)
		return
	}
	st := &anthReply{
		s:           s,
		w:           w,
		r:           r,
		reply:       reply,
		model:       parsed.model,
		id:          s.newID("msg_llmtest"),
		inputTokens: anthWords(parsed.messages),
	}
	for _, c := range reply.ToolCalls {
		if c.ID == "" {
			c.ID = s.newID("toolu_llmtest")
		}
		st.calls = append(st.calls, c)
	}
	if req.Stream {
		st.stream()
		return
	}
	st.complete()
}

// maxAnthropicBody is the API's request size limit.
const maxAnthropicBody = 32 << 20

func (s *AnthropicServer) authProblem(r *http.Request) string {
	if s.key == "" {
		return ""
	}
	got := r.Header.Get("X-Api-Key")
	switch {
	case got == "":
		return "x-api-key header is required"
	case subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) != 1:
		return "invalid x-api-key"
	}
	return ""
}

// record keeps what the request carried. ok reports whether the body
// decoded; parsed is what validation made of it, possibly partial.
func (s *AnthropicServer) record(r *http.Request, req *anthRequest, ok bool, parsed anthParsed) {
	rec := RecordedRequest{Header: r.Header.Clone()}
	rec.Header.Del("X-Api-Key")
	rec.Header.Del("Authorization")
	if ok {
		if req.Model != nil {
			rec.Model = *req.Model
		}
		rec.Stream = req.Stream
		rec.Messages = parsed.messages
		rec.Tools = parsed.tools
		if req.OutputConfig != nil {
			if rec.Output = outputSchema(req.OutputConfig.Format); rec.Output != nil {
				rec.Output.Strict = true // Anthropic's are always strict
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

// anthValidate checks req as the API does and normalises it. On a problem
// it returns what it had normalised so far, for the record, and the API's
// description of the problem.
func anthValidate(req *anthRequest) (p anthParsed, problem string) {
	system, ok := anthSystemText(req.System)
	if system != "" {
		p.messages = append(p.messages, Message{Role: "system", Content: system})
	}
	var (
		prevUses map[string]bool // tool_use ids of the previous (assistant) message
		seenUses = map[string]bool{}
	)
	for i, m := range req.Messages {
		blocks, err := anthBlocks(m.Content)
		if err != "" {
			return p, fmt.Sprintf("messages.%d.content: %s", i, err)
		}
		msgs, uses, results, err := anthNormalize(i, m.Role, blocks)
		p.messages = append(p.messages, msgs...)
		if err != "" {
			return p, err
		}
		switch {
		case m.Role != "user" && m.Role != "assistant":
			return p, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		case i == 0 && m.Role != "user":
			return p, `messages: first message must use the "user" role`
		case i > 0 && m.Role == req.Messages[i-1].Role:
			return p, fmt.Sprintf("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", m.Role)
		case len(blocks) == 0 && !(m.Role == "assistant" && i == len(req.Messages)-1):
			return p, fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		for j, id := range results {
			if !prevUses[id] {
				return p, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
			}
			delete(prevUses, id)
		}
		if len(prevUses) > 0 {
			missing := make([]string, 0, len(prevUses))
			for id := range prevUses {
				missing = append(missing, id)
			}
			slices.Sort(missing)
			return p, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		prevUses = map[string]bool{}
		for _, id := range uses {
			if seenUses[id] {
				return p, fmt.Sprintf("messages.%d: `tool_use` ids must be unique: %s", i, id)
			}
			seenUses[id] = true
			prevUses[id] = true
		}
	}
	switch {
	case !ok:
		return p, "system: Input should be a valid string or a list of text blocks"
	case req.Model == nil:
		return p, "model: Field required"
	case *req.Model == "":
		return p, "model: String should have at least 1 character"
	case req.MaxTokens == nil:
		return p, "max_tokens: Field required"
	case *req.MaxTokens < 1:
		return p, "max_tokens: Input should be greater than or equal to 1"
	case req.Messages == nil:
		return p, "messages: Field required"
	case len(req.Messages) == 0:
		return p, "messages: at least one message is required"
	}
	p.model = *req.Model
	names := map[string]bool{}
	for i, tl := range req.Tools {
		if tl.Type != "" && tl.Type != "custom" {
			continue // a server tool such as web_search: not a function tool
		}
		if !anthToolName.MatchString(tl.Name) {
			return p, fmt.Sprintf("tools.%d.custom.name: String should match pattern '%s'", i, anthToolName)
		}
		if names[tl.Name] {
			return p, "tools: Tool names must be unique."
		}
		names[tl.Name] = true
		var schema struct {
			Type string `json:"type"`
		}
		if len(tl.InputSchema) == 0 {
			return p, fmt.Sprintf("tools.%d.custom.input_schema: Field required", i)
		}
		if !anthIsObject(tl.InputSchema) || json.Unmarshal(tl.InputSchema, &schema) != nil {
			return p, fmt.Sprintf("tools.%d.custom.input_schema: Input should be a valid dictionary", i)
		}
		if schema.Type != "object" {
			return p, fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
		p.tools = append(p.tools, Tool{Name: tl.Name, Description: tl.Description, Parameters: anthCompact(tl.InputSchema)})
	}
	return p, ""
}

var anthToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// anthSystemText returns the system prompt: a string or the joined text of
// text blocks. ok is false for anything else.
func anthSystemText(raw json.RawMessage) (text string, ok bool) {
	if anthIsNull(raw) {
		return "", true
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, true
	}
	var blocks []anthBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" || bl.Text == nil {
			return "", false
		}
		b.WriteString(*bl.Text)
	}
	return b.String(), true
}

// anthBlocks decodes message content: a string (one text block; "" is no
// block) or an array of blocks.
func anthBlocks(raw json.RawMessage) ([]anthBlock, string) {
	if anthIsNull(raw) {
		return nil, "Field required"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, ""
		}
		return []anthBlock{{Type: "text", Text: &s}}, ""
	}
	var blocks []anthBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, "Input should be a valid list"
	}
	return blocks, ""
}

// anthNormalize turns message i's blocks into recorded messages and
// returns the tool_use ids it declares and the tool_use_ids its results
// answer, or a problem.
func anthNormalize(i int, role string, blocks []anthBlock) (msgs []Message, uses, results []string, problem string) {
	main := Message{Role: role}
	var text strings.Builder
	seenOther := false
	for j, b := range blocks {
		at := fmt.Sprintf("messages.%d.content.%d", i, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return msgs, nil, nil, at + ".text: Field required"
			}
			if strings.TrimSpace(*b.Text) == "" {
				return msgs, nil, nil, "messages: text content blocks must contain non-whitespace text"
			}
			text.WriteString(*b.Text)
			seenOther = true
		case "tool_use":
			switch {
			case role != "assistant":
				return msgs, nil, nil, at + ": `tool_use` blocks can only be in `assistant` messages"
			case b.ID == "":
				return msgs, nil, nil, at + ".tool_use.id: Field required"
			case !anthToolName.MatchString(b.Name):
				return msgs, nil, nil, fmt.Sprintf("%s.tool_use.name: String should match pattern '%s'", at, anthToolName)
			case !anthIsObject(b.Input):
				return msgs, nil, nil, at + ".tool_use.input: Input should be a valid dictionary"
			}
			main.ToolCalls = append(main.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(anthCompact(b.Input))})
			uses = append(uses, b.ID)
		case "tool_result":
			switch {
			case role != "user":
				return msgs, nil, nil, at + ": `tool_result` blocks can only be in `user` messages"
			case b.ToolUseID == "":
				return msgs, nil, nil, at + ".tool_result.tool_use_id: Field required"
			case seenOther:
				return msgs, nil, nil, fmt.Sprintf("messages.%d: `tool_result` blocks must come before any other content in a user message", i)
			}
			content, ok := anthResultText(b.Content)
			if !ok {
				return msgs, nil, nil, at + ".tool_result.content: Input should be a valid string or a list of content blocks"
			}
			msgs = append(msgs, Message{Role: "tool", Content: content, ToolCallID: b.ToolUseID, IsError: b.IsError != nil && *b.IsError})
			results = append(results, b.ToolUseID)
		case "image", "document", "thinking", "redacted_thinking":
			// Accepted, not recorded.
			seenOther = true
		default:
			return msgs, nil, nil, fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags", at, b.Type)
		}
	}
	main.Content = text.String()
	if main.Content != "" || len(main.ToolCalls) > 0 {
		msgs = append(msgs, main)
	}
	return msgs, uses, results, ""
}

// anthResultText returns a tool_result's content: absent, a string, or the
// joined text of its text blocks.
func anthResultText(raw json.RawMessage) (string, bool) {
	if anthIsNull(raw) {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var blocks []anthBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if bl.Text == nil {
				return "", false
			}
			b.WriteString(*bl.Text)
		case "image", "document", "search_result":
		default:
			return "", false
		}
	}
	return b.String(), true
}

func anthIsNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func anthIsObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// anthCompact returns raw without insignificant space, or raw itself if it
// is not valid JSON.
func anthCompact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

func anthWords(msgs []Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(strings.Fields(m.Content)))
	}
	return n
}

func (s *AnthropicServer) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s%06d", prefix, s.seq)
}

// anthErrorFor returns the error type and message the API uses for a
// scripted error reply.
func anthErrorFor(status int, code, model string) (typ, msg string) {
	switch code {
	case "context_length_exceeded":
		return "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
	case "rate_limit_exceeded", "rate_limit_error":
		return "rate_limit_error", "This request would exceed the rate limit for your organization. For details, refer to: https://docs.claude.com/en/api/rate-limits."
	case "overloaded", "overloaded_error":
		return "overloaded_error", "Overloaded"
	}
	switch {
	case status == http.StatusBadRequest:
		return "invalid_request_error", "Invalid request."
	case status == http.StatusUnauthorized:
		return "authentication_error", "invalid x-api-key"
	case status == http.StatusPaymentRequired:
		return "billing_error", "Your credit balance is too low to access the Anthropic API."
	case status == http.StatusForbidden:
		return "permission_error", "Your API key does not have permission to use the specified resource."
	case status == http.StatusNotFound:
		return "not_found_error", "model: " + model
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case status == http.StatusTooManyRequests:
		return "rate_limit_error", "This request would exceed the rate limit for your organization. For details, refer to: https://docs.claude.com/en/api/rate-limits."
	case status == http.StatusGatewayTimeout:
		return "timeout_error", "Request timed out."
	case status == 529:
		return "overloaded_error", "Overloaded"
	case status >= http.StatusInternalServerError:
		return "api_error", "Internal server error"
	default:
		return "invalid_request_error", "Invalid request: " + strings.ToLower(http.StatusText(status)) + "."
	}
}

type (
	anthErrorBody struct {
		Type      string          `json:"type"`
		Error     anthErrorObject `json:"error"`
		RequestID string          `json:"request_id,omitempty"`
	}
	anthErrorObject struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
)

func anthWriteError(w http.ResponseWriter, status int, typ, msg, reqID string) {
	anthWriteJSON(w, status, anthErrorBody{Type: "error", Error: anthErrorObject{Type: typ, Message: msg}, RequestID: reqID})
}

func anthWriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "llmtest: encoding a reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// Wire types of a reply.
type (
	anthWireMessage struct {
		ID           string          `json:"id"`
		Type         string          `json:"type"`
		Role         string          `json:"role"`
		Model        string          `json:"model"`
		Content      []anthWireBlock `json:"content"`
		StopReason   *string         `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		Usage        anthUsage       `json:"usage"`
	}
	anthWireBlock struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	anthUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	}
	anthDelta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
)

// anthReply is one reply being written.
type anthReply struct {
	s           *AnthropicServer
	w           http.ResponseWriter
	r           *http.Request
	reply       Reply
	model       string
	id          string
	inputTokens int64
	calls       []ToolCall // the reply's calls, with ids
}

func (st *anthReply) stopReason() string {
	switch st.reply.FinishReason {
	case "length":
		return "max_tokens"
	case "tool_calls":
		return "tool_use"
	case "content_filter":
		return "refusal"
	case "", "stop":
		if len(st.calls) > 0 {
			return "tool_use"
		}
		return "end_turn"
	default:
		return st.reply.FinishReason
	}
}

// wait sleeps d on the server side (a scripted provider delay). It reports
// false when the client went away or the server is closing.
func (st *anthReply) wait(d time.Duration) bool {
	return st.s.wait(st.r.Context(), d)
}

func (st *anthReply) hang() {
	st.s.hang(st.r.Context())
}

// complete answers a request with stream false.
func (st *anthReply) complete() {
	text, ok := st.s.whole(st.r.Context(), st.reply)
	if !ok {
		return
	}
	msg := anthWireMessage{
		ID:      st.id,
		Type:    "message",
		Role:    "assistant",
		Model:   st.model,
		Content: []anthWireBlock{},
		Usage:   anthUsage{InputTokens: st.inputTokens, OutputTokens: int64(len(st.reply.Chunks))},
	}
	if s := text; s != "" {
		msg.Content = append(msg.Content, anthWireBlock{Type: "text", Text: &s})
	}
	for _, c := range st.calls {
		// Input is embedded as JSON: a scripted call must be valid JSON
		// here, or the reply fails to encode (a 500).
		msg.Content = append(msg.Content, anthWireBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage(cmp.Or(c.Arguments, "{}"))})
	}
	reason := st.stopReason()
	msg.StopReason = &reason
	anthWriteJSON(st.w, http.StatusOK, msg)
}

// stream answers a request with stream true as server-sent events.
func (st *anthReply) stream() {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(st.w)
	if err := rc.Flush(); err != nil {
		return
	}
	if st.reply.Hang {
		st.hang()
		return
	}
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false // cannot happen with these types; end the reply
		}
		if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	type obj = map[string]any

	start := anthWireMessage{
		ID:      st.id,
		Type:    "message",
		Role:    "assistant",
		Model:   st.model,
		Content: []anthWireBlock{},
		Usage:   anthUsage{InputTokens: st.inputTokens, OutputTokens: 1},
	}
	if !send("message_start", obj{"type": "message_start", "message": start}) ||
		!send("ping", obj{"type": "ping"}) {
		return
	}

	index := 0
	var sent int64 // text chunks sent
	if len(st.reply.Chunks) > 0 {
		empty := ""
		if !send("content_block_start", obj{"type": "content_block_start", "index": index, "content_block": anthWireBlock{Type: "text", Text: &empty}}) {
			return
		}
		for _, c := range st.reply.Chunks {
			if st.reply.CutAfter > 0 && sent == int64(st.reply.CutAfter) {
				panic(http.ErrAbortHandler) // drop the connection mid-stream
			}
			if st.reply.StallAfter > 0 && sent == int64(st.reply.StallAfter) {
				st.hang()
				return
			}
			if !st.wait(c.Delay) {
				return
			}
			sent++
			text := c.Text
			if !send("content_block_delta", obj{"type": "content_block_delta", "index": index, "delta": anthDelta{Type: "text_delta", Text: &text}}) {
				return
			}
		}
		if !send("content_block_stop", obj{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}

	for _, c := range st.calls {
		block := anthWireBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage("{}")}
		if !send("content_block_start", obj{"type": "content_block_start", "index": index, "content_block": block}) {
			return
		}
		fragments := []string{c.Arguments}
		if !st.reply.WholeToolCalls {
			// The API opens with an empty fragment, then sends pieces.
			fragments = append([]string{""}, anthSplit(c.Arguments, 3)...)
		}
		for _, f := range fragments {
			if !send("content_block_delta", obj{"type": "content_block_delta", "index": index, "delta": anthDelta{Type: "input_json_delta", PartialJSON: &f}}) {
				return
			}
		}
		if !send("content_block_stop", obj{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	if st.reply.CutAfter > 0 {
		panic(http.ErrAbortHandler) // CutAfter >= len(Chunks): cut before the finish
	}
	if st.reply.StallAfter > 0 {
		st.hang() // StallAfter >= len(Chunks): stall before the finish
		return
	}

	reason := st.stopReason()
	if !send("message_delta", obj{
		"type":  "message_delta",
		"delta": obj{"stop_reason": reason, "stop_sequence": nil},
		"usage": obj{"output_tokens": sent},
	}) {
		return
	}
	send("message_stop", obj{"type": "message_stop"})
}

// anthSplit cuts s into at most n pieces of about equal length, on rune
// boundaries.
func anthSplit(s string, n int) []string {
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
