package embedtest_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/embed/embedtest"
)

// TestServers sends raw requests to the stand-ins and checks the status
// and the reply's shape.
func TestServers(t *testing.T) {
	many := `["` + strings.Repeat(`x","`, 2048) + `x"]`
	tests := []struct {
		server     string // "openai" or "ollama"
		name       string
		method     string
		path       string
		auth       string
		body       string
		wantStatus int
		wantVecs   [][]float32 // for 200s
		wantError  string      // substring of the error message
	}{
		{"openai", "list of inputs", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a","b"]}`, 200, [][]float32{vec("tiny", "a", 8), vec("tiny", "b", 8)}, ""},
		{"openai", "one string", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":"a"}`, 200, [][]float32{vec("tiny", "a", 8)}, ""},
		{"openai", "dimensions", "POST", "/v1/embeddings", "Bearer k", `{"model":"text-embedding-3-small","input":["a"],"dimensions":4}`, 200, [][]float32{vec("text-embedding-3-small", "a", 4)}, ""},
		{"openai", "base64", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a"],"encoding_format":"base64"}`, 200, [][]float32{vec("tiny", "a", 8)}, ""},
		{"openai", "no key", "POST", "/v1/embeddings", "", `{"model":"tiny","input":["a"]}`, 401, nil, "Incorrect API key"},
		{"openai", "wrong key", "POST", "/v1/embeddings", "Bearer nope", `{"model":"tiny","input":["a"]}`, 401, nil, "Incorrect API key"},
		{"openai", "wrong path", "POST", "/embeddings", "Bearer k", `{"model":"tiny","input":["a"]}`, 404, nil, "not found"},
		{"openai", "GET", "GET", "/v1/embeddings", "Bearer k", ``, 405, nil, "method"},
		{"openai", "not JSON", "POST", "/v1/embeddings", "Bearer k", `{`, 400, nil, "parse"},
		{"openai", "unknown field", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a"],"temperature":1}`, 400, nil, "temperature"},
		{"openai", "no model", "POST", "/v1/embeddings", "Bearer k", `{"input":["a"]}`, 400, nil, "model"},
		{"openai", "unknown model", "POST", "/v1/embeddings", "Bearer k", `{"model":"gpt","input":["a"]}`, 404, nil, "does not exist"},
		{"openai", "no input", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny"}`, 400, nil, "input"},
		{"openai", "empty list", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":[]}`, 400, nil, "empty array"},
		{"openai", "empty string", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a",""]}`, 400, nil, "empty string"},
		{"openai", "2049 inputs", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":` + many + `}`, 400, nil, "2048"},
		{"openai", "numbers as input", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":{"a":1}}`, 400, nil, "input"},
		{"openai", "dimensions too large", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a"],"dimensions":9}`, 400, nil, "dimensions"},
		{"openai", "dimensions 0", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a"],"dimensions":0}`, 400, nil, "dimensions"},
		{"openai", "bad encoding", "POST", "/v1/embeddings", "Bearer k", `{"model":"tiny","input":["a"],"encoding_format":"int8"}`, 400, nil, "encoding_format"},

		{"ollama", "list of inputs", "POST", "/api/embed", "Bearer k", `{"model":"qwen3-embedding:0.6b","input":["a","b"],"truncate":true,"keep_alive":"5m","options":{}}`, 200, [][]float32{vec("qwen3-embedding:0.6b", "a", 1024), vec("qwen3-embedding:0.6b", "b", 1024)}, ""},
		{"ollama", "one string", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":"a"}`, 200, [][]float32{vec("tiny", "a", 8)}, ""},
		{"ollama", "empty string: no embeddings", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":""}`, 200, [][]float32{}, ""},
		{"ollama", "no input: no embeddings", "POST", "/api/embed", "Bearer k", `{"model":"tiny"}`, 200, [][]float32{}, ""},
		{"ollama", "dimensions", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":["a"],"dimensions":3}`, 200, [][]float32{vec("tiny", "a", 3)}, ""},
		{"ollama", "dimensions 0 is unset", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":["a"],"dimensions":0}`, 200, [][]float32{vec("tiny", "a", 8)}, ""},
		{"ollama", "unknown fields ignored", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":["a"],"future":1}`, 200, [][]float32{vec("tiny", "a", 8)}, ""},
		{"ollama", "wrong key", "POST", "/api/embed", "Bearer nope", `{"model":"tiny","input":["a"]}`, 401, nil, "unauthorized"},
		{"ollama", "no model", "POST", "/api/embed", "Bearer k", `{"input":["a"]}`, 400, nil, "model is required"},
		{"ollama", "unknown model", "POST", "/api/embed", "Bearer k", `{"model":"llama","input":["a"]}`, 404, nil, "try pulling it first"},
		{"ollama", "bad input", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":[1]}`, 400, nil, "invalid input"},
		{"ollama", "dimensions too large", "POST", "/api/embed", "Bearer k", `{"model":"tiny","input":["a"],"dimensions":9}`, 400, nil, "dimensions"},
	}
	servers := map[string]*embedtest.Server{
		"openai": embedtest.NewOpenAI(embedtest.Config{APIKey: "k"}),
		"ollama": embedtest.NewOllama(embedtest.Config{APIKey: "k"}),
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.name, func(t *testing.T) {
			srv := servers[tt.server]
			c := &http.Client{Transport: embedtest.Transport(srv)}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, "http://embed.test"+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if tt.wantStatus != 200 {
				if msg := errorMessage(t, tt.server, body); !strings.Contains(msg, tt.wantError) {
					t.Errorf("error message %q does not mention %q", msg, tt.wantError)
				}
				return
			}
			if diff := cmp.Diff(tt.wantVecs, vectorsOf(t, tt.server, body)); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
		})
	}
}

func vec(model, text string, dim int) []float32 { return embedtest.Vector(model, text, dim) }

// errorMessage decodes an error reply in the server's shape.
func errorMessage(t *testing.T, server string, body []byte) string {
	t.Helper()
	if server == "ollama" {
		var r struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("error body %s: %v", body, err)
		}
		return r.Error
	}
	var r struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Error == nil || r.Error.Type == "" {
		t.Fatalf("error body %s is not OpenAI's shape (%v)", body, err)
	}
	return r.Error.Message
}

// vectorsOf decodes a success reply in the server's shape, in index order.
func vectorsOf(t *testing.T, server string, body []byte) [][]float32 {
	t.Helper()
	if server == "ollama" {
		var r struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Model == "" || r.Embeddings == nil {
			t.Fatalf("reply %s is not Ollama's shape (%v)", body, err)
		}
		return r.Embeddings
	}
	var r struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Object != "list" || r.Model == "" || r.Usage == nil {
		t.Fatalf("reply %s is not OpenAI's shape (%v)", body, err)
	}
	out := make([][]float32, len(r.Data))
	for _, d := range r.Data {
		if d.Object != "embedding" {
			t.Errorf("data object %q, want embedding", d.Object)
		}
		var v []float32
		if err := json.Unmarshal(d.Embedding, &v); err != nil {
			var s string
			if err := json.Unmarshal(d.Embedding, &s); err != nil {
				t.Fatalf("embedding %s: %v", d.Embedding, err)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("base64 embedding: %v", err)
			}
			for i := 0; i+4 <= len(b); i += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			}
		}
		out[d.Index] = v
	}
	return out
}

// TestVector checks the stand-ins' vectors: unit length, deterministic,
// different per model and text, and a shorter dimension a renormalised
// prefix of a longer one.
func TestVector(t *testing.T) {
	a, b := embedtest.Vector("m", "hello", 16), embedtest.Vector("m", "hello", 16)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Vector is not deterministic:\n%s", diff)
	}
	norm := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	for _, v := range [][]float32{a, embedtest.Vector("m", "", 1), embedtest.Vector("m", "x", 1024)} {
		if n := norm(v); math.Abs(n-1) > 1e-6 {
			t.Errorf("norm %v, want 1", n)
		}
	}
	if cmp.Equal(a, embedtest.Vector("m2", "hello", 16)) || cmp.Equal(a, embedtest.Vector("m", "hello!", 16)) {
		t.Errorf("Vector does not depend on both model and text")
	}
	short, long := embedtest.Vector("m", "hello", 4), embedtest.Vector("m", "hello", 16)
	n := norm(long[:4])
	for i := range short {
		if d := float64(short[i]) - float64(long[i])/n; math.Abs(d) > 1e-6 {
			t.Errorf("component %d: %v, want the renormalised prefix %v", i, short[i], float64(long[i])/n)
		}
	}
}
