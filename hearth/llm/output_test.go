package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// outputBackend is a stand-in that records requests and takes scripted
// replies, whatever its protocol.
type outputBackend interface {
	BaseURL() string
	Enqueue(...llmtest.Reply)
	Requests() []llmtest.RecordedRequest
}

// TestOutputSchemaOnTheWire: a Request's Output reaches each provider in
// its documented shape, the schema byte for byte, and the scripted JSON
// comes back as the reply's text.
func TestOutputSchemaOnTheWire(t *testing.T) {
	const key = "sk-SECRET-output-0123456789"
	schema := json.RawMessage(`{"type":"object","properties":{"ops":{"type":"array","maxItems":3}},"required":["ops"],"additionalProperties":false}`)
	const reply = `{"ops":[]}`
	tests := []struct {
		name    string
		backend func(t *testing.T) outputBackend
		adapter func(baseURL string) llm.Streamer
		strict  bool
		want    llmtest.OutputSchema
	}{
		{
			name:    "openai chat response_format",
			backend: func(t *testing.T) outputBackend { return llmtest.NewOpenAI(t, key) },
			adapter: func(u string) llm.Streamer {
				return llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", BaseURL: u, APIKey: key}, nil)
			},
			strict: true,
			want:   llmtest.OutputSchema{Type: "json_schema", Name: "curation", Schema: schema, Strict: true},
		},
		{
			name:    "openai chat not strict",
			backend: func(t *testing.T) outputBackend { return llmtest.NewOpenAI(t, key) },
			adapter: func(u string) llm.Streamer {
				return llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", BaseURL: u, APIKey: key}, nil)
			},
			want: llmtest.OutputSchema{Type: "json_schema", Name: "curation", Schema: schema},
		},
		{
			name:    "xai responses text.format",
			backend: func(t *testing.T) outputBackend { return llmtest.NewResponses(t, key) },
			adapter: func(u string) llm.Streamer {
				return llm.NewResponses(llm.Config{Provider: llm.ProviderXAI, Model: "m", BaseURL: u, APIKey: key}, nil)
			},
			strict: true,
			want:   llmtest.OutputSchema{Type: "json_schema", Name: "curation", Schema: schema, Strict: true},
		},
		{
			name:    "anthropic output_config.format",
			backend: func(t *testing.T) outputBackend { return llmtest.NewAnthropic(t, key) },
			adapter: func(u string) llm.Streamer {
				return llm.NewAnthropic(llm.Config{Provider: llm.ProviderAnthropic, Model: "m", BaseURL: u, APIKey: key}, nil)
			},
			strict: true,
			want:   llmtest.OutputSchema{Type: "json_schema", Schema: schema, Strict: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.backend(t)
			srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: `{"ops":`}, {Text: `[]}`}}})
			req := llm.Request{
				Messages: []llm.Message{{Role: llm.RoleSystem, Content: "curate"}, {Role: llm.RoleUser, Content: "the turn"}},
				Output:   &llm.OutputSchema{Name: "curation", Schema: schema, Strict: tt.strict},
			}
			resp, err := tt.adapter(srv.BaseURL()).Stream(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != reply {
				t.Errorf("Text = %q, want %q", resp.Text, reply)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Output == nil {
				t.Fatalf("recorded %d requests, output %+v: want 1 with an output schema", len(reqs), reqs)
			}
			got := *reqs[0].Output
			var gotSchema, wantSchema any
			if err := json.Unmarshal(got.Schema, &gotSchema); err != nil {
				t.Fatalf("schema on the wire: %v", err)
			}
			_ = json.Unmarshal(tt.want.Schema, &wantSchema)
			if diff := cmp.Diff(wantSchema, gotSchema); diff != "" {
				t.Errorf("schema on the wire (-want +got):\n%s", diff)
			}
			got.Schema, tt.want.Schema = nil, nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output on the wire (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutputSchemaRefused: a bad name or a schema that is not an object
// fails before any request is sent.
func TestOutputSchemaRefused(t *testing.T) {
	const key = "sk-SECRET-output-0123456789"
	tests := []struct {
		name string
		out  llm.OutputSchema
	}{
		{"empty name", llm.OutputSchema{Schema: json.RawMessage(`{}`)}},
		{"name with a space", llm.OutputSchema{Name: "a b", Schema: json.RawMessage(`{}`)}},
		{"schema an array", llm.OutputSchema{Name: "x", Schema: json.RawMessage(`[]`)}},
		{"schema missing", llm.OutputSchema{Name: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, key)
			a := llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", BaseURL: srv.BaseURL(), APIKey: key}, nil)
			_, err := a.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Output: &tt.out}, nil)
			if err == nil {
				t.Fatal("Stream succeeded, want an error")
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}
