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
	"sync"
	"testing"
	"time"
)

// Server is an OpenAI-compatible chat completions server, as served by
// OpenAI, xAI, Ollama's /v1, llama.cpp and vLLM. It is safe for concurrent
// use.
//
// Token counts in its usage reports are synthetic but deterministic:
// prompt_tokens is the number of whitespace-separated words across all
// request messages, completion_tokens the number of content chunks sent.
type Server struct {
	// URL is the base URL to configure a client with; it ends in /v1.
	URL string

	key     string
	srv     *httptest.Server
	closing chan struct{} // closed when the test ends, to release Hang and Delay

	mu       sync.Mutex
	queue    []Reply
	requests []RecordedRequest
	seq      int
}

// NewOpenAI starts a server that is shut down when the test ends. When key
// is not empty, requests must carry "Authorization: Bearer <key>" or get a
// 401 JSON error.
func NewOpenAI(t testing.TB, key string) *Server {
	t.Helper()
	s := &Server{key: key, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// Enqueue appends replies; requests are answered in order. With the queue
// empty, a request gets a default reply that echoes the last user message
// as "echo: <text>" in a few chunks.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RecordedRequest, len(s.requests))
	for i, r := range s.requests {
		r.Messages = slices.Clone(r.Messages)
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// wireRequest is the part of a chat completions request body the server
// looks at.
type wireRequest struct {
	Model         *string        `json:"model"`
	Messages      []wireMessage  `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	N             *int           `json:"n"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
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
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(reply.RetryAfter.Seconds())), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(reply.RetryAfter.Milliseconds(), 10))
		}
		msg, typ, code := errorFor(reply.Status)
		writeError(w, reply.Status, msg, typ, "", code)
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
		promptTokens: countWords(msgs),
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
			content, _ := contentText(m.Content)
			rec.Messages = append(rec.Messages, Message{Role: m.Role, Content: content})
		}
		rec.Stream = req.Stream
		rec.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
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

// validate checks the request as the real API does and returns its
// messages, or the offending parameter and a description of the problem.
func validate(req *wireRequest) (msgs []Message, param, problem string) {
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
		msgs = append(msgs, Message{Role: m.Role, Content: content})
	}
	return msgs, "", ""
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

func countWords(msgs []Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(strings.Fields(m.Content)))
	}
	return n
}

// next pops the next scripted reply, or makes the default echo reply.
func (s *Server) next(msgs []Message) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	var last string
	for _, m := range msgs {
		if m.Role == "user" {
			last = m.Content
		}
	}
	var chunks []Chunk
	for _, word := range strings.SplitAfter("echo: "+last, " ") {
		if word != "" {
			chunks = append(chunks, Chunk{Text: word})
		}
	}
	return Reply{Chunks: chunks}
}

func (s *Server) newID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("chatcmpl-llmtest%06d", s.seq)
}

// errorFor returns the message, type and code the real API uses for status.
func errorFor(status int) (msg, typ, code string) {
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
		Role    string          `json:"role"`
		Content string          `json:"content"`
		Refusal json.RawMessage `json:"refusal"`
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
		Role    string  `json:"role,omitempty"`
		Content *string `json:"content,omitempty"`
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
	model        string
	id           string
	created      int64
	promptTokens int64
}

func (st *replyState) usage(completion int64) usage {
	return usage{PromptTokens: st.promptTokens, CompletionTokens: completion, TotalTokens: st.promptTokens + completion}
}

func (st *replyState) finishReason() string {
	if st.reply.FinishReason == "" {
		return "stop"
	}
	return st.reply.FinishReason
}

// wait sleeps d on the server side (a scripted provider delay). It reports
// false when the client went away or the server is closing.
func (st *replyState) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-st.r.Context().Done():
		return false
	case <-st.s.closing:
		return false
	}
}

func (st *replyState) hang() {
	select {
	case <-st.r.Context().Done():
	case <-st.s.closing:
	}
}

// complete answers a request with stream false.
func (st *replyState) complete() {
	if st.reply.Hang {
		st.hang()
		return
	}
	var text strings.Builder
	for i, c := range st.reply.Chunks {
		if st.reply.CutAfter > 0 && i == st.reply.CutAfter {
			panic(http.ErrAbortHandler) // drop the connection
		}
		if !st.wait(c.Delay) {
			return
		}
		text.WriteString(c.Text)
	}
	if st.reply.CutAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	writeJSON(st.w, http.StatusOK, completion{
		ID:                st.id,
		Object:            "chat.completion",
		Created:           st.created,
		Model:             st.model,
		SystemFingerprint: "fp_llmtest",
		Choices: []completionChoice{{
			Message:      assistantMsg{Role: "assistant", Content: text.String(), Refusal: null},
			Logprobs:     null,
			FinishReason: st.finishReason(),
		}},
		Usage: st.usage(int64(len(st.reply.Chunks))),
	})
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
	var sent int64 // content chunks sent
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
	for _, c := range st.reply.Chunks {
		if st.reply.CutAfter > 0 && sent == int64(st.reply.CutAfter) {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
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
	if st.reply.CutAfter > 0 {
		panic(http.ErrAbortHandler) // CutAfter >= len(Chunks): cut before the finish
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
