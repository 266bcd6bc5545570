package embed

import (
	"context"
	"encoding/json"
	"fmt"
)

// OpenAI embeds with an OpenAI-compatible POST {BaseURL}/embeddings:
// {model, input:[...], dimensions?} → {data:[{index, embedding}], usage}.
// It implements recall.Embedder and is safe for concurrent use.
type OpenAI struct{ c *client }

// NewOpenAI returns an embedder for OpenAI or a compatible server (xAI,
// vLLM, llama.cpp, Ollama's /v1). BaseURL defaults to
// https://api.openai.com/v1.
func NewOpenAI(opts HTTPOptions) *OpenAI {
	return &OpenAI{newClient("openai", "https://api.openai.com/v1", "/embeddings", openAIProtocol{}, opts)}
}

// Name is "openai:<model>:<dim>"; the dimension is 0 until known (see Dim).
func (o *OpenAI) Name() string { return o.c.name() }

// Dim is HTTPOptions.Dim, or, if that was 0, the dimension of the first
// reply (0 before it: call Probe to learn it up front).
func (o *OpenAI) Dim() int { return int(o.c.dim.Load()) }

// Embed returns one vector per text, in order. Empty and whitespace-only
// texts are not sent and get the zero vector. Errors are *Error.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.c.embed(ctx, texts)
}

// Probe makes one small request, checking the configuration and learning
// the dimension, and returns the dimension.
func (o *OpenAI) Probe(ctx context.Context) (int, error) {
	if _, err := o.c.retry(ctx, []string{"dimension probe"}); err != nil {
		return 0, err
	}
	return o.Dim(), nil
}

type openAIProtocol struct{}

func (openAIProtocol) body(model string, dim int, inputs []string) ([]byte, error) {
	type request struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions int      `json:"dimensions,omitempty"`
	}
	return json.Marshal(request{Model: model, Input: inputs, Dimensions: dim})
}

func (openAIProtocol) parse(data []byte, n int) ([][]float32, error) {
	var reply struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := decode(data, &reply); err != nil {
		return nil, err
	}
	if len(reply.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(reply.Data), n)
	}
	out := make([][]float32, n)
	for k, d := range reply.Data {
		switch {
		case d.Index == nil:
			return nil, fmt.Errorf("data[%d] has no index", k)
		case *d.Index < 0 || *d.Index >= n:
			return nil, fmt.Errorf("data[%d] has index %d, outside 0..%d", k, *d.Index, n-1)
		case out[*d.Index] != nil:
			return nil, fmt.Errorf("index %d appears twice", *d.Index)
		case d.Embedding == nil:
			return nil, fmt.Errorf("data[%d] has no embedding", k)
		}
		out[*d.Index] = d.Embedding
	}
	return out, nil
}

func (openAIProtocol) message(data []byte) string {
	var reply struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &reply) != nil {
		return ""
	}
	return reply.Error.Message
}
