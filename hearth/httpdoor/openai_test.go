package httpdoor

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mnemo/mnemo/memory"
)

func openaiClient(th *testHearth, token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(th.url+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

// The official openai-go client, non-streaming: the last user message is
// a turn of the companion's conversation; the reply is the companion's.
func TestChatCompletionsOpenAIGo(t *testing.T) {
	th := startHearth(t, nil)
	th.model.replies <- chunks("Hello ", "from ", "memory")
	cl := openaiClient(th, testToken)
	res, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "mnemo",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("the client's own system prompt"),
			openai.UserMessage("an earlier question"),
			openai.AssistantMessage("an earlier answer"),
			openai.UserMessage("what do you remember?"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "Hello from memory" {
		t.Fatalf("content = %q", got)
	}
	if res.Choices[0].FinishReason != "stop" || res.Object != "chat.completion" || res.Usage.PromptTokens != 7 {
		t.Fatalf("response = %+v", res)
	}
	if err := Validate("chat_completion", []byte(res.RawJSON())); err != nil {
		t.Fatalf("schema: %v\n%s", err, res.RawJSON())
	}
	recs := th.history(t)
	if len(recs) != 2 || recs[0].Role != memory.RoleUser || recs[0].Text != "what do you remember?" || recs[1].Text != "Hello from memory" {
		t.Fatalf("journal = %+v", recs)
	}
}

// Streaming: chat.completion.chunk events, then [DONE]; the accumulated
// text is the reply, and include_usage adds the usage chunk.
func TestChatCompletionsOpenAIGoStream(t *testing.T) {
	th := startHearth(t, nil)
	th.model.replies <- chunks("one ", "two ", "three")
	cl := openaiClient(th, testToken)
	stream := cl.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:         "script-1",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	n := 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if err := Validate("chat_completion_chunk", []byte(ch.RawJSON())); err != nil {
			t.Fatalf("chunk schema: %v\n%s", err, ch.RawJSON())
		}
		n++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "one two three" {
		t.Fatalf("streamed %q in %d chunks", got, n)
	}
	if acc.Usage.CompletionTokens != 3 {
		t.Fatalf("usage = %+v", acc.Usage)
	}
}

// A provider failure mid-stream ends the stream with an error event the
// client reports; its message is fixed, never the provider's text.
func TestChatCompletionsStreamProviderError(t *testing.T) {
	th := startHearth(t, nil)
	th.model.replies <- failing(errors.New("dial tcp /home/owner/secret.sock: sk-live-123 refused"), "partial ")
	cl := openaiClient(th, testToken)
	stream := cl.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model: "mnemo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	for stream.Next() {
	}
	err := stream.Err()
	if err == nil || !strings.Contains(err.Error(), safeMessages[codeProviderError]) {
		t.Fatalf("stream error = %v", err)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sk-live") {
		t.Fatalf("the stream leaked the provider's error: %v", err)
	}
}

func TestModelsAndUnknownModel(t *testing.T) {
	th := startHearth(t, nil)
	cl := openaiClient(th, testToken)
	page, err := cl.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "mnemo,script-1,script/script-1" {
		t.Fatalf("models = %v", ids)
	}
	if err := Validate("model_list", []byte(page.RawJSON())); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-nonexistent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
		t.Fatalf("unknown model: %v", err)
	}
	if n := len(th.history(t)); n != 0 {
		t.Fatalf("an unknown model's request was stored: %d records", n)
	}
}

func TestEmbeddingsOpenAIGo(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Embedder = fakeEmbedder{} })
	cl := openaiClient(th, testToken)
	res, err := cl.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "any",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"abc", "hello"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[1].Embedding[0] != 5 || res.Data[1].Embedding[1] != 'h' || res.Model != "test-embed-2" {
		t.Fatalf("embeddings = %+v", res)
	}
	if err := Validate("embedding_list", []byte(res.RawJSON())); err != nil {
		t.Fatal(err)
	}
	// base64, as the npm openai package asks by default: the same floats.
	resp := th.do(t, "POST", "/v1/embeddings", `{"model":"any","input":"hello","encoding_format":"base64"}`)
	m := readBody(t, resp, "embedding_list")
	b64 := m["data"].([]any)[0].(map[string]any)["embedding"].(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(raw[4:])) != 'h' {
		t.Fatalf("base64 embedding %q: %v", b64, err)
	}

	// Without an embedder: 503 in the one error shape.
	th2 := startHearth(t, nil)
	cl2 := openaiClient(th2, testToken)
	_, err = cl2.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "any", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("no embedder: %v", err)
	}
}

// No provider: the turn is stored (history keeps it) and the request is
// answered 503 with the core's message, which says what to set.
func TestChatCompletionsNoProvider(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Model, c.NoModel = nil, errors.New("no model provider: set MNEMO_PROVIDER") })
	for _, stream := range []bool{false, true} {
		resp := th.do(t, "POST", "/v1/chat/completions", map[string]any{"model": "mnemo", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		if resp.StatusCode != http.StatusServiceUnavailable {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("stream %v: status %d: %s", stream, resp.StatusCode, b)
		}
		m := readBody(t, resp, "error")
		if e := m["error"].(map[string]any); e["code"] != "no_provider" || !strings.Contains(e["message"].(string), "MNEMO_PROVIDER") {
			t.Fatalf("error = %v", e)
		}
	}
}

// Content given as parts: the text parts are the turn.
func TestChatCompletionsContentParts(t *testing.T) {
	th := startHearth(t, nil)
	resp := th.do(t, "POST", "/v1/chat/completions", json.RawMessage(`{"model":"mnemo","messages":[{"role":"user","content":[{"type":"text","text":"part one"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"part two"}]}]}`))
	m := readBody(t, resp, "chat_completion")
	got := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if got != "echo: part one\npart two" {
		t.Fatalf("content = %v", got)
	}
}
