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

// ResponsesServer is a Responses API server (POST /v1/responses) as xAI
// serves it: streamed replies as typed server-sent events, responses
// stored for previous_response_id unless the request sets store false, and
// instructions rejected (xAI wants the system prompt in input). It also
// answers GET and DELETE /v1/responses/{id}. It is safe for concurrent use.
//
// Token counts are synthetic but deterministic: input_tokens is the number
// of whitespace-separated words in the whole conversation a request
// represents (stored history included), output_tokens the number of text
// chunks plus function calls sent.
//
// A Reply's FinishReason "" or "stop" (or "tool_calls") ends with
// response.completed; "length" ends with response.incomplete and reason
// max_output_tokens, and any other value with response.incomplete and that
// reason. UsageEveryChunk has no meaning here: usage comes once, in the
// terminal event.
type ResponsesServer struct {
	key string
	srv *httptest.Server
	script
	stored map[string]*responsesStored // under mu
}

// responsesStored is a response kept for previous_response_id.
type responsesStored struct {
	// history is the conversation the response represents: the stored
	// history it continued, its input, and its output.
	history []Message
	object  responsesObject
}

// NewResponses starts a server that is shut down when the test ends. When
// key is not empty, requests must carry "Authorization: Bearer <key>" or
// get a 401 JSON error.
func NewResponses(t testing.TB, key string) *ResponsesServer {
	t.Helper()
	s := &ResponsesServer{key: key, script: newScript(), stored: make(map[string]*responsesStored)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.create)
	mux.HandleFunc("GET /v1/responses/{id}", s.get)
	mux.HandleFunc("DELETE /v1/responses/{id}", s.delete)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		responsesWriteError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", "", "")
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// BaseURL is the base URL to configure a client with; it ends in /v1.
func (s *ResponsesServer) BaseURL() string { return s.srv.URL + "/v1" }

// ForgetResponses drops every stored response, as if they had expired
// (xAI keeps them 30 days): a previous_response_id naming one then gets
// a 404.
func (s *ResponsesServer) ForgetResponses() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.stored)
}

// Wire types of a request.
type (
	responsesRequest struct {
		Model              *string           `json:"model"`
		Input              json.RawMessage   `json:"input"`
		Instructions       json.RawMessage   `json:"instructions"`
		Tools              []json.RawMessage `json:"tools"`
		PreviousResponseID *string           `json:"previous_response_id"`
		Store              *bool             `json:"store"`
		Stream             bool              `json:"stream"`
		// Text carries structured output as text.format.
		Text *struct {
			Format json.RawMessage `json:"format"`
		} `json:"text"`
	}
	responsesInputItem struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    *string         `json:"call_id"`
		Name      *string         `json:"name"`
		Arguments *string         `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	responsesToolDecl struct {
		Type           string          `json:"type"`
		Name           *string         `json:"name"`
		Description    string          `json:"description"`
		Parameters     json.RawMessage `json:"parameters"`
		Function       json.RawMessage `json:"function"`
		ServerURL      string          `json:"server_url"`
		ServerLabel    string          `json:"server_label"`
		VectorStoreIDs []string        `json:"vector_store_ids"`
	}
)

// maxResponsesBody bounds a request body; real providers accept contexts
// of millions of tokens, so it is generous.
const maxResponsesBody = 64 << 20

// responsesCall is a parsed, validated request.
type responsesCall struct {
	model    string
	input    []Message // the request's input, normalised
	tools    []json.RawMessage
	previous string
	store    bool
	stream   bool
}

func (s *ResponsesServer) create(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxResponsesBody))
	var req responsesRequest
	decodeErr := json.Unmarshal(body, &req)
	s.record(r, &req, decodeErr == nil)

	if !s.authorized(w, r) {
		return
	}
	if readErr != nil {
		responsesWriteError(w, http.StatusBadRequest, "The request body could not be read: "+readErr.Error(), "invalid_request_error", "", "")
		return
	}
	if decodeErr != nil {
		responsesWriteError(w, http.StatusBadRequest, "We could not parse the JSON body of your request. The API expects a JSON payload.", "invalid_request_error", "", "")
		return
	}
	call, param, problem := responsesValidate(&req)
	if problem != "" {
		responsesWriteError(w, http.StatusBadRequest, problem, "invalid_request_error", param, "")
		return
	}

	var history []Message
	if call.previous != "" {
		s.mu.Lock()
		prev, ok := s.stored[call.previous]
		if ok {
			history = slices.Clone(prev.history)
		}
		s.mu.Unlock()
		if !ok {
			responsesWriteError(w, http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found", call.previous), "invalid_request_error", "previous_response_id", "not_found")
			return
		}
	}
	if param, problem := responsesCheckOutputs(history, call.input); problem != "" {
		responsesWriteError(w, http.StatusBadRequest, problem, "invalid_request_error", param, "")
		return
	}
	history = append(history, call.input...)

	reply := s.next(history)
	if reply.Silent {
		s.hang(r.Context())
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(reply.RetryAfter.Seconds())), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(reply.RetryAfter.Milliseconds(), 10))
		}
		msg, typ, param, code := responsesErrorFor(reply.Status, reply.ErrorCode)
		responsesWriteError(w, reply.Status, msg, typ, param, code)
		return
	}

	st := &responsesReply{
		s:       s,
		w:       w,
		r:       r,
		call:    call,
		reply:   reply,
		history: history,
		calls:   s.callIDs(reply.ToolCalls),
		obj: responsesObject{
			ID:                s.newID("resp"),
			Object:            "response",
			CreatedAt:         time.Now().Unix(),
			Status:            "in_progress",
			Model:             call.model,
			Output:            []any{},
			ParallelToolCalls: true,
			Store:             call.store,
			Tools:             call.tools,
			ToolChoice:        "auto",
			Temperature:       1,
			TopP:              1,
			Text:              json.RawMessage(`{"format":{"type":"text"}}`),
			Metadata:          json.RawMessage(`{}`),
		},
	}
	if call.previous != "" {
		st.obj.PreviousResponseID = &call.previous
	}
	if st.obj.Tools == nil {
		st.obj.Tools = []json.RawMessage{}
	}
	if call.stream {
		st.stream()
		return
	}
	st.complete()
}

func (s *ResponsesServer) get(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	stored, ok := s.stored[id]
	s.mu.Unlock()
	if !ok {
		responsesWriteError(w, http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found", id), "invalid_request_error", "", "not_found")
		return
	}
	responsesWriteJSON(w, http.StatusOK, stored.object)
}

func (s *ResponsesServer) delete(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	_, ok := s.stored[id]
	delete(s.stored, id)
	s.mu.Unlock()
	if !ok {
		responsesWriteError(w, http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found", id), "invalid_request_error", "", "not_found")
		return
	}
	responsesWriteJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "response", true})
}

// authorized answers 401 and reports false unless the request carries the
// key.
func (s *ResponsesServer) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.key == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	got, ok := strings.CutPrefix(auth, "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) == 1 {
		return true
	}
	if auth == "" {
		responsesWriteError(w, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", "", "")
		return false
	}
	responsesWriteError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key")
	return false
}

// record keeps what the request carried, whether or not it is valid. ok
// reports whether the body decoded.
func (s *ResponsesServer) record(r *http.Request, req *responsesRequest, ok bool) {
	rec := RecordedRequest{Header: r.Header.Clone()}
	rec.Header.Del("Authorization")
	if ok {
		if req.Model != nil {
			rec.Model = *req.Model
		}
		rec.Messages, _, _ = responsesInput(req.Input)
		for _, raw := range req.Tools {
			var d responsesToolDecl
			if json.Unmarshal(raw, &d) != nil {
				continue
			}
			if d.Type != "function" {
				rec.Tools = append(rec.Tools, Tool{Name: d.Type})
				continue
			}
			t := Tool{Description: d.Description, Parameters: d.Parameters}
			if d.Name != nil {
				t.Name = *d.Name
			}
			rec.Tools = append(rec.Tools, t)
		}
		rec.Stream = req.Stream
		if req.PreviousResponseID != nil {
			rec.PreviousResponseID = *req.PreviousResponseID
		}
		if req.Store != nil {
			rec.Store = new(*req.Store)
		}
		if req.Text != nil {
			rec.Output = outputSchema(req.Text.Format)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

// responsesValidate checks a request as the real API does and returns it
// parsed, or the offending parameter and a description of the problem.
func responsesValidate(req *responsesRequest) (call responsesCall, param, problem string) {
	switch {
	case req.Model == nil:
		return call, "model", "Missing required parameter: 'model'."
	case *req.Model == "":
		return call, "model", "Invalid value for 'model': the model must not be empty."
	case !responsesIsNull(req.Instructions):
		// xAI's Responses API refuses instructions.
		return call, "instructions", "Argument not supported: instructions. Put the system prompt in 'input' as a message with role 'system'."
	case responsesIsNull(req.Input):
		return call, "input", "Missing required parameter: 'input'."
	case req.PreviousResponseID != nil && *req.PreviousResponseID == "":
		return call, "previous_response_id", "Invalid value for 'previous_response_id': the id must not be empty."
	}
	input, param, problem := responsesInput(req.Input)
	if problem != "" {
		return call, param, problem
	}
	if len(input) == 0 {
		return call, "input", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead."
	}
	if param, problem := responsesValidateTools(req.Tools); problem != "" {
		return call, param, problem
	}
	call = responsesCall{
		model:  *req.Model,
		input:  input,
		tools:  req.Tools,
		store:  req.Store == nil || *req.Store,
		stream: req.Stream,
	}
	if req.PreviousResponseID != nil {
		call.previous = *req.PreviousResponseID
	}
	return call, "", ""
}

// responsesInput normalises the input, a string (one user message) or an
// array of items, or reports what is wrong with it.
func responsesInput(raw json.RawMessage) (msgs []Message, param, problem string) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []Message{{Role: "user", Content: text}}, "", ""
	}
	var items []responsesInputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "input", "Invalid type for 'input': expected a string or an array of input items."
	}
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			role := it.Role
			switch role {
			case "system", "user", "assistant":
			case "developer":
				role = "system"
			case "":
				return msgs, at + ".role", fmt.Sprintf("Missing required parameter: '%s.role'.", at)
			default:
				return msgs, at + ".role", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", it.Role)
			}
			if responsesIsNull(it.Content) {
				return msgs, at + ".content", fmt.Sprintf("Missing required parameter: '%s.content'.", at)
			}
			content, ok := responsesText(it.Content)
			if !ok {
				return msgs, at + ".content", fmt.Sprintf("Invalid type for '%s.content': expected a string or an array of content parts.", at)
			}
			msgs = append(msgs, Message{Role: role, Content: content})
		case "function_call":
			switch {
			case it.CallID == nil || *it.CallID == "":
				return msgs, at + ".call_id", fmt.Sprintf("Missing required parameter: '%s.call_id'.", at)
			case it.Name == nil || *it.Name == "":
				return msgs, at + ".name", fmt.Sprintf("Missing required parameter: '%s.name'.", at)
			case it.Arguments == nil:
				return msgs, at + ".arguments", fmt.Sprintf("Missing required parameter: '%s.arguments'.", at)
			}
			tc := ToolCall{ID: *it.CallID, Name: *it.Name, Arguments: *it.Arguments}
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
			} else {
				msgs = append(msgs, Message{Role: "assistant", ToolCalls: []ToolCall{tc}})
			}
		case "function_call_output":
			if it.CallID == nil || *it.CallID == "" {
				return msgs, at + ".call_id", fmt.Sprintf("Missing required parameter: '%s.call_id'.", at)
			}
			if responsesIsNull(it.Output) {
				return msgs, at + ".output", fmt.Sprintf("Missing required parameter: '%s.output'.", at)
			}
			output, ok := responsesText(it.Output)
			if !ok {
				return msgs, at + ".output", fmt.Sprintf("Invalid type for '%s.output': expected a string or an array of content parts.", at)
			}
			msgs = append(msgs, Message{Role: "tool", ToolCallID: *it.CallID, Content: output})
		case "":
			return msgs, at + ".type", fmt.Sprintf("Missing required parameter: '%s.type'.", at)
		default:
			return msgs, at + ".type", fmt.Sprintf("Invalid value: '%s'. This server supports 'message', 'function_call' and 'function_call_output' items.", it.Type)
		}
	}
	return msgs, "", ""
}

// responsesCheckOutputs checks that every function_call_output answers a
// function_call made earlier in the conversation, as the real API does.
func responsesCheckOutputs(history, input []Message) (param, problem string) {
	calls := make(map[string]bool)
	for _, m := range history {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = true
		}
	}
	for _, m := range input {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = true
		}
		if m.Role == "tool" && !calls[m.ToolCallID] {
			return "input", fmt.Sprintf("No tool call found for function call output with call_id %s.", m.ToolCallID)
		}
	}
	return "", ""
}

// responsesServerTools are the server-side tool types accepted.
var responsesServerTools = []string{"web_search", "web_search_preview", "x_search", "code_interpreter", "file_search", "mcp"}

func responsesValidateTools(tools []json.RawMessage) (param, problem string) {
	names := make(map[string]bool)
	for i, raw := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		var d responsesToolDecl
		if err := json.Unmarshal(raw, &d); err != nil {
			return at, fmt.Sprintf("Invalid type for '%s': expected an object.", at)
		}
		switch {
		case d.Type == "":
			return at + ".type", fmt.Sprintf("Missing required parameter: '%s.type'.", at)
		case d.Type == "function":
			if d.Name == nil || *d.Name == "" {
				// The chat completions form nests the function.
				return at + ".name", fmt.Sprintf("Missing required parameter: '%s.name'.", at)
			}
			if !responsesValidName(*d.Name) {
				return at + ".name", fmt.Sprintf("Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,128}$'.", at)
			}
			if names[*d.Name] {
				return at + ".name", fmt.Sprintf("Duplicate tool name: '%s'.", *d.Name)
			}
			names[*d.Name] = true
			if !responsesIsNull(d.Parameters) {
				var schema map[string]any
				if json.Unmarshal(d.Parameters, &schema) != nil {
					return at + ".parameters", fmt.Sprintf("Invalid type for '%s.parameters': expected an object.", at)
				}
				if typ, ok := schema["type"]; ok && typ != "object" {
					return at + ".parameters", fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", *d.Name)
				}
			}
		case !slices.Contains(responsesServerTools, d.Type):
			return at + ".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function', '%s'.", d.Type, strings.Join(responsesServerTools, "', '"))
		case d.Type == "mcp" && (d.ServerURL == "" || d.ServerLabel == ""):
			return at, fmt.Sprintf("Missing required parameter: '%s.server_url' and '%s.server_label'.", at, at)
		case d.Type == "file_search" && len(d.VectorStoreIDs) == 0:
			return at + ".vector_store_ids", fmt.Sprintf("Missing required parameter: '%s.vector_store_ids'.", at)
		}
	}
	return "", ""
}

func responsesValidName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func responsesIsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// responsesText returns the text of a string or of an array of content
// parts (input_text, output_text, text). ok is false for anything else.
func responsesText(raw json.RawMessage) (text string, ok bool) {
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
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// newID returns a fresh id with the given prefix ("resp", "msg", "fc",
// "call").
func (s *ResponsesServer) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s_llmtest%06d", prefix, s.seq)
}

// callIDs returns calls with generated ids where the script left them
// empty.
func (s *ResponsesServer) callIDs(calls []ToolCall) []ToolCall {
	out := slices.Clone(calls)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = s.newID("call")
		}
	}
	return out
}

// responsesErrorFor returns the message, type, param and code the real API
// uses for status, or for code when the script names one.
func responsesErrorFor(status int, code string) (msg, typ, param, wantCode string) {
	switch code {
	case "context_length_exceeded":
		return "Your input exceeds the context window of this model. Please adjust your input and try again.", "invalid_request_error", "input", code
	case "rate_limit_exceeded":
		return "Rate limit reached for requests. Please try again later.", "requests", "", code
	}
	switch {
	case status == http.StatusUnauthorized:
		msg, typ, wantCode = "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		msg, typ = "You are not allowed to access this resource.", "permission_denied"
	case status == http.StatusNotFound:
		msg, typ, wantCode = "The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		msg, typ, wantCode = "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case status >= http.StatusInternalServerError:
		msg, typ, wantCode = "The server had an error while processing your request. Sorry about that!", "server_error", "server_error"
	default:
		msg, typ = "Invalid request: "+strings.ToLower(http.StatusText(status))+".", "invalid_request_error"
	}
	if code != "" {
		wantCode = code
	}
	return msg, typ, "", wantCode
}

func responsesWriteError(w http.ResponseWriter, status int, msg, typ, param, code string) {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	type object struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	responsesWriteJSON(w, status, struct {
		Error object `json:"error"`
	}{object{Message: msg, Type: typ, Param: nullable(param), Code: nullable(code)}})
}

func responsesWriteJSON(w http.ResponseWriter, status int, v any) {
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
	responsesObject struct {
		ID                 string                      `json:"id"`
		Object             string                      `json:"object"`
		CreatedAt          int64                       `json:"created_at"`
		Status             string                      `json:"status"`
		Error              *responsesErrorObject       `json:"error"`
		IncompleteDetails  *responsesIncompleteDetails `json:"incomplete_details"`
		Instructions       *string                     `json:"instructions"`
		Model              string                      `json:"model"`
		Output             []any                       `json:"output"`
		ParallelToolCalls  bool                        `json:"parallel_tool_calls"`
		PreviousResponseID *string                     `json:"previous_response_id"`
		Store              bool                        `json:"store"`
		Temperature        float64                     `json:"temperature"`
		Text               json.RawMessage             `json:"text"`
		ToolChoice         string                      `json:"tool_choice"`
		Tools              []json.RawMessage           `json:"tools"`
		TopP               float64                     `json:"top_p"`
		Metadata           json.RawMessage             `json:"metadata"`
		Usage              *responsesUsage             `json:"usage"`
	}
	responsesErrorObject struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	responsesIncompleteDetails struct {
		Reason string `json:"reason"`
	}
	responsesUsage struct {
		InputTokens         int64           `json:"input_tokens"`
		InputTokensDetails  json.RawMessage `json:"input_tokens_details"`
		OutputTokens        int64           `json:"output_tokens"`
		OutputTokensDetails json.RawMessage `json:"output_tokens_details"`
		TotalTokens         int64           `json:"total_tokens"`
	}
	responsesMessageItem struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Status  string          `json:"status"`
		Role    string          `json:"role"`
		Content []responsesPart `json:"content"`
	}
	responsesPart struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	responsesFunctionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	// responsesEvent is any stream event; fields a type does not carry
	// are omitted.
	responsesEvent struct {
		Type           string           `json:"type"`
		SequenceNumber int              `json:"sequence_number"`
		Response       *responsesObject `json:"response,omitempty"`
		OutputIndex    *int             `json:"output_index,omitempty"`
		ItemID         string           `json:"item_id,omitempty"`
		ContentIndex   *int             `json:"content_index,omitempty"`
		Item           any              `json:"item,omitempty"`
		Part           *responsesPart   `json:"part,omitempty"`
		Delta          *string          `json:"delta,omitempty"`
		Text           *string          `json:"text,omitempty"`
		Name           string           `json:"name,omitempty"`
		Arguments      *string          `json:"arguments,omitempty"`
		Logprobs       []any            `json:"logprobs,omitzero"`
	}
)

// responsesReply is one reply being written.
type responsesReply struct {
	s       *ResponsesServer
	w       http.ResponseWriter
	r       *http.Request
	call    responsesCall
	reply   Reply
	history []Message  // the conversation up to this reply
	calls   []ToolCall // reply.ToolCalls with ids
	obj     responsesObject
	seq     int // sequence_number of the next event
}

// finish completes obj with its output and usage, stores the response
// unless the request said store false, and returns the terminal event's
// type.
func (st *responsesReply) finish(text string, output []any, chunks int) string {
	st.obj.Output = output
	words := int64(0)
	for _, m := range st.history {
		words += int64(len(strings.Fields(m.Content)))
	}
	out := int64(chunks + len(st.calls))
	st.obj.Usage = &responsesUsage{
		InputTokens:         words,
		InputTokensDetails:  json.RawMessage(`{"cached_tokens":0}`),
		OutputTokens:        out,
		OutputTokensDetails: json.RawMessage(`{"reasoning_tokens":0}`),
		TotalTokens:         words + out,
	}
	event := "response.completed"
	switch reason := st.reply.FinishReason; reason {
	case "", "stop", "tool_calls":
		st.obj.Status = "completed"
	default:
		if reason == "length" {
			reason = "max_output_tokens"
		}
		st.obj.Status = "incomplete"
		st.obj.IncompleteDetails = &responsesIncompleteDetails{Reason: reason}
		event = "response.incomplete"
	}
	if st.call.store {
		history := append(slices.Clone(st.history), Message{Role: "assistant", Content: text, ToolCalls: slices.Clone(st.calls)})
		st.s.mu.Lock()
		st.s.stored[st.obj.ID] = &responsesStored{history: history, object: st.obj}
		st.s.mu.Unlock()
	}
	return event
}

// wait sleeps d on the server side (a scripted provider delay). It reports
// false when the client went away or the server is closing.
func (st *responsesReply) wait(d time.Duration) bool {
	return st.s.wait(st.r.Context(), d)
}

func (st *responsesReply) hang() {
	st.s.hang(st.r.Context())
}

// output builds the output items: a message when there is text or no
// call, then the function calls.
func (st *responsesReply) output(msgID, text string, fcIDs []string) []any {
	var out []any
	if len(st.reply.Chunks) > 0 || len(st.calls) == 0 {
		out = append(out, responsesMessageItem{ID: msgID, Type: "message", Status: "completed", Role: "assistant",
			Content: []responsesPart{{Type: "output_text", Text: text, Annotations: []any{}}}})
	}
	for i, c := range st.calls {
		out = append(out, responsesFunctionCallItem{ID: fcIDs[i], Type: "function_call", Status: "completed", CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

func (st *responsesReply) ids() (msgID string, fcIDs []string) {
	msgID = st.s.newID("msg")
	for range st.calls {
		fcIDs = append(fcIDs, st.s.newID("fc"))
	}
	return msgID, fcIDs
}

// complete answers a request with stream false: the response object.
func (st *responsesReply) complete() {
	text, ok := st.s.whole(st.r.Context(), st.reply)
	if !ok {
		return
	}
	msgID, fcIDs := st.ids()
	st.finish(text, st.output(msgID, text, fcIDs), len(st.reply.Chunks))
	responsesWriteJSON(st.w, http.StatusOK, st.obj)
}

// responsesFragment is the size in bytes (rounded up to a rune boundary)
// of the pieces a call's arguments are streamed in.
const responsesFragment = 7

// responsesFragments splits s into pieces of about size bytes, never
// inside a UTF-8 sequence.
func responsesFragments(s string, size int) []string {
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

// stream answers a request with stream true as server-sent events.
func (st *responsesReply) stream() {
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
	send := func(ev responsesEvent) bool {
		ev.SequenceNumber = st.seq
		st.seq++
		b, err := json.Marshal(ev)
		if err != nil {
			return false // cannot happen with these types; end the reply
		}
		if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	snapshot := func() *responsesObject {
		obj := st.obj
		obj.Output = slices.Clone(obj.Output)
		return &obj
	}
	if !send(responsesEvent{Type: "response.created", Response: snapshot()}) ||
		!send(responsesEvent{Type: "response.in_progress", Response: snapshot()}) {
		return
	}

	msgID, fcIDs := st.ids()
	var text strings.Builder
	index := 0
	sent := 0
	if len(st.reply.Chunks) > 0 || len(st.calls) == 0 {
		empty := ""
		if !send(responsesEvent{Type: "response.output_item.added", OutputIndex: new(index),
			Item: responsesMessageItem{ID: msgID, Type: "message", Status: "in_progress", Role: "assistant", Content: []responsesPart{}}}) ||
			!send(responsesEvent{Type: "response.content_part.added", ItemID: msgID, OutputIndex: new(index), ContentIndex: new(0),
				Part: &responsesPart{Type: "output_text", Text: empty, Annotations: []any{}}}) {
			return
		}
		for _, c := range st.reply.Chunks {
			if st.reply.CutAfter > 0 && sent == st.reply.CutAfter {
				panic(http.ErrAbortHandler) // drop the connection mid-stream
			}
			if st.reply.StallAfter > 0 && sent == st.reply.StallAfter {
				st.hang()
				return
			}
			if !st.wait(c.Delay) {
				return
			}
			sent++
			text.WriteString(c.Text)
			if !send(responsesEvent{Type: "response.output_text.delta", ItemID: msgID, OutputIndex: new(index), ContentIndex: new(0),
				Delta: new(c.Text), Logprobs: []any{}}) {
				return
			}
		}
		if st.reply.CutAfter > 0 {
			panic(http.ErrAbortHandler) // CutAfter >= len(Chunks): cut before the end
		}
		if st.reply.StallAfter > 0 {
			st.hang() // StallAfter >= len(Chunks): stall before the end
			return
		}
		full := text.String()
		part := responsesPart{Type: "output_text", Text: full, Annotations: []any{}}
		if !send(responsesEvent{Type: "response.output_text.done", ItemID: msgID, OutputIndex: new(index), ContentIndex: new(0), Text: new(full), Logprobs: []any{}}) ||
			!send(responsesEvent{Type: "response.content_part.done", ItemID: msgID, OutputIndex: new(index), ContentIndex: new(0), Part: &part}) ||
			!send(responsesEvent{Type: "response.output_item.done", OutputIndex: new(index),
				Item: responsesMessageItem{ID: msgID, Type: "message", Status: "completed", Role: "assistant", Content: []responsesPart{part}}}) {
			return
		}
		index++
	} else if st.reply.CutAfter > 0 {
		panic(http.ErrAbortHandler) // no text to cut after: cut before the calls
	}

	for i, c := range st.calls {
		id := fcIDs[i]
		if !send(responsesEvent{Type: "response.output_item.added", OutputIndex: new(index),
			Item: responsesFunctionCallItem{ID: id, Type: "function_call", Status: "in_progress", CallID: c.ID, Name: c.Name}}) {
			return
		}
		pieces := []string{c.Arguments}
		if !st.reply.WholeToolCalls {
			pieces = responsesFragments(c.Arguments, responsesFragment)
		}
		for _, p := range pieces {
			if !send(responsesEvent{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: new(index), Delta: new(p)}) {
				return
			}
		}
		if !send(responsesEvent{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: new(index), Name: c.Name, Arguments: new(c.Arguments)}) ||
			!send(responsesEvent{Type: "response.output_item.done", OutputIndex: new(index),
				Item: responsesFunctionCallItem{ID: id, Type: "function_call", Status: "completed", CallID: c.ID, Name: c.Name, Arguments: c.Arguments}}) {
			return
		}
		index++
	}

	event := st.finish(text.String(), st.output(msgID, text.String(), fcIDs), sent)
	send(responsesEvent{Type: event, Response: snapshot()})
}
