package embed

import (
	"context"
	"encoding/json"
	"fmt"
)

// Ollama embeds with Ollama's native POST {BaseURL}/api/embed: {model,
// input:[...], dimensions?} → {embeddings:[[...]]}. It implements
// recall.Embedder and is safe for concurrent use.
type Ollama struct{ c *client }

// NewOllama returns an embedder for an Ollama server; BaseURL defaults to
// http://localhost:11434. Ollama needs no key; APIKey, if set, is sent as
// a bearer token (for a server behind an authenticating proxy). A
// configured Dim is sent as "dimensions" (Ollama 0.11+; older servers
// ignore it, and the dimension check then reports the mismatch).
func NewOllama(opts HTTPOptions) *Ollama {
	return &Ollama{newClient("ollama", "http://localhost:11434", "/api/embed", ollamaProtocol{}, opts)}
}

// Name is "ollama:<model>:<dim>"; the dimension is 0 until known (see Dim).
func (o *Ollama) Name() string { return o.c.name() }

// Dim is HTTPOptions.Dim, or, if that was 0, the dimension of the first
// reply (0 before it: call Probe to learn it up front).
func (o *Ollama) Dim() int { return int(o.c.dim.Load()) }

// Embed returns one vector per text, in order. Empty and whitespace-only
// texts are not sent and get the zero vector. Errors are *Error.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.c.embed(ctx, texts)
}

// Probe makes one small request, checking the configuration and learning
// the dimension, and returns the dimension.
func (o *Ollama) Probe(ctx context.Context) (int, error) {
	if _, err := o.c.retry(ctx, []string{"dimension probe"}); err != nil {
		return 0, err
	}
	return o.Dim(), nil
}

type ollamaProtocol struct{}

func (ollamaProtocol) body(model string, dim int, inputs []string) ([]byte, error) {
	type request struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions int      `json:"dimensions,omitempty"`
	}
	return json.Marshal(request{Model: model, Input: inputs, Dimensions: dim})
}

func (ollamaProtocol) parse(data []byte, n int) ([][]float32, error) {
	var reply struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := decode(data, &reply); err != nil {
		return nil, err
	}
	if len(reply.Embeddings) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(reply.Embeddings), n)
	}
	return reply.Embeddings, nil
}

func (ollamaProtocol) message(data []byte) string {
	var reply struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &reply) != nil {
		return ""
	}
	return reply.Error
}
