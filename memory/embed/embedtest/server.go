// Package embedtest provides protocol-faithful stand-ins for embedding
// servers, OpenAI-compatible POST /v1/embeddings and Ollama's native POST
// /api/embed, and a conformance suite every recall.Embedder must pass.
//
// The stand-ins check what the real servers check (method, path, bearer
// token, JSON shape, model, inputs, dimensions), reply in the real shapes
// (including the error bodies), and embed each input as Vector(model,
// input, dim): a deterministic unit vector derived from a hash, so tests
// can compare exactly. Faults can be scripted per request (status codes,
// Retry-After, a hang, wrong-dimension or short replies), and every request
// is recorded.
package embedtest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Models returns the models the stand-ins serve by default, with their
// native dimensions: OpenAI's, a Qwen3 embedding model under its Hugging
// Face name (vLLM, llama.cpp) and its Ollama tag, and a tiny one.
func Models() map[string]int {
	return map[string]int{
		"text-embedding-3-small":    1536,
		"text-embedding-3-large":    3072,
		"Qwen/Qwen3-Embedding-0.6B": 1024,
		"qwen3-embedding:0.6b":      1024,
		"nomic-embed-text":          768,
		"tiny":                      8,
	}
}

// Vector is the unit vector the stand-ins return for text under model
// with dim components. The components come from a generator seeded by a
// hash of model and text, so a shorter dim is a prefix of a longer one,
// renormalised, like a Matryoshka model's truncation.
func Vector(model, text string, dim int) []float32 {
	h := fnv.New64a()
	io.WriteString(h, model)
	h.Write([]byte{0})
	io.WriteString(h, text)
	state := h.Sum64()
	v := make([]float32, dim)
	var ss float64
	for i := range v {
		// splitmix64
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		x := float64(z>>11)/float64(1<<53)*2 - 1
		v[i] = float32(x)
		ss += x * x
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// Config configures a stand-in.
type Config struct {
	// APIKey, if set, must arrive as "Authorization: Bearer <APIKey>".
	APIKey string
	// Models are the served models and their native dimensions; nil
	// means Models().
	Models map[string]int
	// ReverseOrder makes the OpenAI stand-in list data in reverse index
	// order, which the protocol allows: clients must sort by index.
	ReverseOrder bool
}

// Fault scripts one reply. Zero fields are ignored; a zero Fault is a
// normal reply.
type Fault struct {
	Status     int    // reply with this status and an error body in the protocol's shape
	Message    string // the error message (default: the status text)
	RetryAfter string // a Retry-After header
	// RetryAfterMS is a retry-after-ms header (OpenAI's SDKs honour it).
	RetryAfterMS string
	Hang         bool   // never reply: block until the client gives up or the server closes
	Dim          int    // reply 200 with vectors of this length
	DropLast     bool   // reply 200 with one vector fewer than the inputs
	Body         string // reply 200 with this raw body
}

// Request is one recorded request.
type Request struct {
	At         time.Time // when it arrived (the fake clock inside a synctest bubble)
	Method     string
	Path       string
	Auth       string // the Authorization header
	Model      string
	Input      []string
	Dimensions int
	Status     int // the status of the reply; 0 for a hang
}

type protocol int

const (
	openAI protocol = iota
	ollama
)

// Server is a stand-in embedding server. It is an http.Handler; Start
// serves it on 127.0.0.1, and Transport calls it in memory.
type Server struct {
	proto  protocol
	cfg    Config
	closed chan struct{}

	mu        sync.Mutex
	faults    []Fault
	requests  []Request
	closeOnce sync.Once
}

// NewOpenAI returns an OpenAI-compatible stand-in serving POST
// /v1/embeddings: {model, input: string | [string], dimensions?,
// encoding_format?: "float" | "base64", user?} → {object:"list",
// data:[{object:"embedding", index, embedding}], model, usage}. Like
// OpenAI it rejects unknown fields, empty strings, more than 2048 inputs
// and dimensions beyond the model's.
func NewOpenAI(cfg Config) *Server { return newServer(openAI, cfg) }

// NewOllama returns a stand-in for Ollama's POST /api/embed: {model,
// input: string | [string], truncate?, dimensions?, keep_alive?, options?}
// → {model, embeddings:[[...]], total_duration, load_duration,
// prompt_eval_count}; errors are {"error":"..."}.
func NewOllama(cfg Config) *Server { return newServer(ollama, cfg) }

func newServer(p protocol, cfg Config) *Server {
	if cfg.Models == nil {
		cfg.Models = Models()
	}
	return &Server{proto: p, cfg: cfg, closed: make(chan struct{})}
}

// Fail queues faults: each request takes the next one, and requests after
// the queue is empty get normal replies.
func (s *Server) Fail(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Close releases hung requests. It is idempotent.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.closed) }) }

// Start serves s on 127.0.0.1 until the test ends and returns the base URL
// a client is configured with: ".../v1" for OpenAI, the root for Ollama.
func (s *Server) Start(tb testing.TB) string {
	tb.Helper()
	hs := httptest.NewServer(s)
	tb.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	if s.proto == openAI {
		return hs.URL + "/v1"
	}
	return hs.URL
}

// record appends r and returns its index.
func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	return len(s.requests) - 1
}

func (s *Server) setStatus(i, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[i].Status = status
}

func (s *Server) nextFault() (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return Fault{}, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

// request is the union of both protocols' request bodies.
type request struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"` // OpenAI
	User           string          `json:"user,omitempty"`            // OpenAI
	Truncate       *bool           `json:"truncate,omitempty"`        // Ollama
	KeepAlive      json.RawMessage `json:"keep_alive,omitempty"`      // Ollama
	Options        json.RawMessage `json:"options,omitempty"`         // Ollama
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec.Model, rec.Input, rec.Dimensions = peek(body)
	var req request
	var inputs []string
	status, msg := s.validate(r, body, err, &req, &inputs)
	i := s.record(rec)
	if status != http.StatusOK {
		s.setStatus(i, status)
		s.writeError(w, status, msg, "")
		return
	}

	f, _ := s.nextFault()
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.RetryAfterMS != "" {
		w.Header().Set("Retry-After-Ms", f.RetryAfterMS)
	}
	switch {
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		return
	case f.Status != 0 && f.Status != http.StatusOK:
		s.setStatus(i, f.Status)
		s.writeError(w, f.Status, f.Message, "scripted")
		return
	case f.Body != "":
		s.setStatus(i, http.StatusOK)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, f.Body)
		return
	}

	dim := s.cfg.Models[req.Model]
	if req.Dimensions != nil && *req.Dimensions > 0 {
		dim = *req.Dimensions
	}
	if f.Dim != 0 {
		dim = f.Dim
	}
	vecs := make([][]float32, len(inputs))
	for k, in := range inputs {
		vecs[k] = Vector(req.Model, in, dim)
	}
	if f.DropLast && len(vecs) > 0 {
		vecs = vecs[:len(vecs)-1]
	}
	s.setStatus(i, http.StatusOK)
	w.Header().Set("Content-Type", "application/json")
	if s.proto == ollama {
		json.NewEncoder(w).Encode(map[string]any{
			"model":             req.Model,
			"embeddings":        vecs,
			"total_duration":    14143917,
			"load_duration":     1019500,
			"prompt_eval_count": tokens(inputs),
		})
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(vecs))
	for k, v := range vecs {
		data[k] = item{Object: "embedding", Index: k, Embedding: v}
		if req.EncodingFormat == "base64" {
			data[k].Embedding = base64Floats(v)
		}
	}
	if s.cfg.ReverseOrder {
		slices.Reverse(data)
	}
	n := tokens(inputs)
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": n, "total_tokens": n},
	})
}

// peek reads what a request asks for, leniently, for the record.
func peek(body []byte) (model string, inputs []string, dims int) {
	var req request
	if json.Unmarshal(body, &req) != nil {
		return "", nil, 0
	}
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		inputs = []string{one}
	} else {
		json.Unmarshal(req.Input, &inputs)
	}
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	return req.Model, inputs, dims
}

// validate checks a request as the real server would, filling req and
// inputs, and returns the status and error message to reply with.
func (s *Server) validate(r *http.Request, body []byte, readErr error, req *request, inputs *[]string) (int, string) {
	path := "/v1/embeddings"
	if s.proto == ollama {
		path = "/api/embed"
	}
	switch {
	case r.URL.Path != path:
		return http.StatusNotFound, "404 page not found: " + r.URL.Path
	case r.Method != http.MethodPost:
		return http.StatusMethodNotAllowed, "method not allowed: " + r.Method
	case s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey:
		if s.proto == ollama {
			return http.StatusUnauthorized, "unauthorized"
		}
		return http.StatusUnauthorized, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case readErr != nil:
		return http.StatusBadRequest, "could not read the body: " + readErr.Error()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if s.proto == openAI {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(req); err != nil {
		return http.StatusBadRequest, "We could not parse the JSON body of your request: " + err.Error()
	}
	if req.Model == "" {
		if s.proto == ollama {
			return http.StatusBadRequest, "model is required"
		}
		return http.StatusBadRequest, "you must provide a model parameter"
	}
	native, ok := s.cfg.Models[req.Model]
	if !ok {
		if s.proto == ollama {
			return http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model)
		}
		return http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model)
	}
	var one string
	var many []string
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
		if s.proto == ollama {
			*inputs = []string{}
			break
		}
		return http.StatusBadRequest, "'input' is a required property"
	case json.Unmarshal(req.Input, &one) == nil:
		if one != "" || s.proto == openAI {
			*inputs = []string{one}
		} else {
			*inputs = []string{}
		}
	case json.Unmarshal(req.Input, &many) == nil:
		*inputs = many
	default:
		return http.StatusBadRequest, "invalid input type: want a string or an array of strings"
	}
	if s.proto == openAI {
		if len(*inputs) == 0 {
			return http.StatusBadRequest, "'$.input' is invalid: it must not be an empty array"
		}
		if len(*inputs) > 2048 {
			return http.StatusBadRequest, "'$.input' is invalid: an array must have at most 2048 items"
		}
		for _, in := range *inputs {
			if in == "" {
				return http.StatusBadRequest, "'$.input' is invalid: an input cannot be an empty string"
			}
		}
		switch req.EncodingFormat {
		case "", "float", "base64":
		default:
			return http.StatusBadRequest, fmt.Sprintf("'%s' is not one of ['float', 'base64'] - 'encoding_format'", req.EncodingFormat)
		}
	}
	// Ollama treats dimensions 0 as unset; OpenAI wants at least 1.
	if d := req.Dimensions; d != nil && (*d < 0 || *d > native || *d == 0 && s.proto == openAI) {
		return http.StatusBadRequest, fmt.Sprintf("dimensions %d is out of range 1..%d for model %s", *d, native, req.Model)
	}
	return http.StatusOK, ""
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg, kind string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s.proto == ollama {
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	if kind != "" {
		typ += "_" + kind
	}
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

// tokens is a rough token count for usage.
func tokens(inputs []string) int {
	n := 0
	for _, in := range inputs {
		n += len(strings.Fields(in))
	}
	return n
}

// base64Floats encodes v as OpenAI's base64 encoding_format does:
// little-endian float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
