package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/mnemo/mnemo/hearth/llm"
)

const (
	secretKey    = "xai-SECRET-0123456789abcdef"
	anthropicKey = "sk-ant-SECRET-0123456789abcdef"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    llm.Config
		wantErr string // substring; "" means no error
		noProv  bool   // want ErrNoProvider
	}{
		{
			name:   "nothing set",
			env:    nil,
			noProv: true,
		},
		{
			name: "xai key only",
			env:  map[string]string{"XAI_API_KEY": secretKey},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name: "xai key with model and base URL",
			env:  map[string]string{"XAI_API_KEY": secretKey, "MNEMO_MODEL": "grok-4.5", "XAI_BASE_URL": "http://127.0.0.1:9/v1/"},
			want: llm.Config{Provider: "xai", Model: "grok-4.5", BaseURL: "http://127.0.0.1:9/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name: "xai is the default when both keys are set",
			env:  map[string]string{"XAI_API_KEY": secretKey, "OPENAI_API_KEY": "sk-other", "OPENAI_BASE_URL": "http://localhost:11434/v1"},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name: "explicit xai, spelled loosely",
			env:  map[string]string{"MNEMO_PROVIDER": " XAI ", "XAI_API_KEY": " " + secretKey + "\n"},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name: "explicit openai wins over an xai key",
			env:  map[string]string{"MNEMO_PROVIDER": "openai", "XAI_API_KEY": secretKey, "OPENAI_API_KEY": "sk-test"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "https://api.openai.com/v1", APIKey: "sk-test"},
		},
		{
			name: "openai key only",
			env:  map[string]string{"OPENAI_API_KEY": "sk-test"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "https://api.openai.com/v1", APIKey: "sk-test"},
		},
		{
			name: "ollama: base URL without key",
			env:  map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "MNEMO_MODEL": "llama3.2"},
			want: llm.Config{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"},
		},
		{
			name: "explicit openai with llama.cpp base URL",
			env:  map[string]string{"MNEMO_PROVIDER": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "http://127.0.0.1:8080/v1"},
		},
		{
			name:    "explicit xai without key",
			env:     map[string]string{"MNEMO_PROVIDER": "xai", "OPENAI_API_KEY": "sk-test"},
			wantErr: "XAI_API_KEY",
		},
		{
			name:    "unknown provider",
			env:     map[string]string{"MNEMO_PROVIDER": "gemini", "XAI_API_KEY": secretKey},
			wantErr: "MNEMO_PROVIDER",
		},
		{
			name: "anthropic key only",
			env:  map[string]string{"ANTHROPIC_API_KEY": anthropicKey},
			want: llm.Config{Provider: "anthropic", Model: llm.DefaultAnthropicModel, BaseURL: "https://api.anthropic.com", APIKey: anthropicKey},
		},
		{
			name: "anthropic with model and base URL",
			env:  map[string]string{"ANTHROPIC_API_KEY": anthropicKey, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "MNEMO_MODEL": "claude-opus-4-1"},
			want: llm.Config{Provider: "anthropic", Model: "claude-opus-4-1", BaseURL: "http://127.0.0.1:9", APIKey: anthropicKey},
		},
		{
			name: "xai key wins over an anthropic key",
			env:  map[string]string{"XAI_API_KEY": secretKey, "ANTHROPIC_API_KEY": anthropicKey},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name: "anthropic key wins over openai variables",
			env:  map[string]string{"ANTHROPIC_API_KEY": anthropicKey, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://localhost:11434/v1"},
			want: llm.Config{Provider: "anthropic", Model: llm.DefaultAnthropicModel, BaseURL: "https://api.anthropic.com", APIKey: anthropicKey},
		},
		{
			name: "explicit anthropic over an xai key",
			env:  map[string]string{"MNEMO_PROVIDER": "Anthropic", "XAI_API_KEY": secretKey, "ANTHROPIC_API_KEY": anthropicKey},
			want: llm.Config{Provider: "anthropic", Model: llm.DefaultAnthropicModel, BaseURL: "https://api.anthropic.com", APIKey: anthropicKey},
		},
		{
			name:    "explicit anthropic without key",
			env:     map[string]string{"MNEMO_PROVIDER": "anthropic", "XAI_API_KEY": secretKey},
			wantErr: "ANTHROPIC_API_KEY",
		},
		{
			name:    "anthropic base URL without key",
			env:     map[string]string{"ANTHROPIC_BASE_URL": "https://api.anthropic.com"},
			wantErr: "ANTHROPIC_API_KEY",
		},
		{
			name:    "anthropic base URL with a bad scheme",
			env:     map[string]string{"ANTHROPIC_API_KEY": anthropicKey, "ANTHROPIC_BASE_URL": "ftp://api.anthropic.com"},
			wantErr: "ANTHROPIC_BASE_URL",
		},
		{
			name: "xai chat completions",
			env:  map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_API": " Chat "},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "chat"},
		},
		{
			name: "xai responses with server tools",
			env:  map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_API": "responses", "MNEMO_XAI_SERVER_TOOLS": " web_search, X_SEARCH,,code_interpreter,web_search "},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses", ServerTools: []string{"web_search", "x_search", "code_interpreter"}},
		},
		{
			name: "empty server tool list",
			env:  map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_SERVER_TOOLS": " , "},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"},
		},
		{
			name:    "unknown xai API",
			env:     map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_API": "grpc"},
			wantErr: "MNEMO_XAI_API",
		},
		{
			name:    "unknown server tool",
			env:     map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_SERVER_TOOLS": "web_search,file_search"},
			wantErr: "MNEMO_XAI_SERVER_TOOLS",
		},
		{
			name:    "server tools need the responses API",
			env:     map[string]string{"XAI_API_KEY": secretKey, "MNEMO_XAI_API": "chat", "MNEMO_XAI_SERVER_TOOLS": "x_search"},
			wantErr: "MNEMO_XAI_SERVER_TOOLS",
		},
		{
			name: "xai options are ignored for other providers",
			env:  map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "MNEMO_XAI_API": "bogus", "MNEMO_XAI_SERVER_TOOLS": "bogus"},
			want: llm.Config{Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "http://localhost:11434/v1"},
		},
		{
			name: "model timeout",
			env:  map[string]string{"XAI_API_KEY": secretKey, "MNEMO_MODEL_TIMEOUT": " 90s "},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses", Timeout: 90 * time.Second},
		},
		{
			name: "model timeout for anthropic",
			env:  map[string]string{"ANTHROPIC_API_KEY": anthropicKey, "MNEMO_MODEL_TIMEOUT": "1m30s"},
			want: llm.Config{Provider: "anthropic", Model: llm.DefaultAnthropicModel, BaseURL: "https://api.anthropic.com", APIKey: anthropicKey, Timeout: 90 * time.Second},
		},
		{
			name:    "model timeout without a unit",
			env:     map[string]string{"XAI_API_KEY": secretKey, "MNEMO_MODEL_TIMEOUT": "90"},
			wantErr: "MNEMO_MODEL_TIMEOUT",
		},
		{
			name:    "model timeout not positive",
			env:     map[string]string{"OPENAI_API_KEY": "sk-test", "MNEMO_MODEL_TIMEOUT": "-5s"},
			wantErr: "MNEMO_MODEL_TIMEOUT",
		},
		{
			name:    "explicit openai with neither key nor base URL",
			env:     map[string]string{"MNEMO_PROVIDER": "openai", "XAI_API_KEY": secretKey},
			wantErr: "OPENAI_BASE_URL",
		},
		{
			name:    "xai base URL without key",
			env:     map[string]string{"XAI_BASE_URL": "https://api.x.ai/v1"},
			wantErr: "XAI_API_KEY",
		},
		{
			name:    "openai base URL with a bad scheme",
			env:     map[string]string{"OPENAI_BASE_URL": "localhost:11434/v1"},
			wantErr: "OPENAI_BASE_URL",
		},
		{
			name:    "xai base URL without host",
			env:     map[string]string{"XAI_API_KEY": secretKey, "XAI_BASE_URL": "https:///v1"},
			wantErr: "XAI_BASE_URL",
		},
		{
			name:    "xai base URL unparsable",
			env:     map[string]string{"XAI_API_KEY": secretKey, "XAI_BASE_URL": "http://[::1"},
			wantErr: "XAI_BASE_URL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := llm.ConfigFromEnv(func(name string) string { return tt.env[name] })
			switch {
			case tt.noProv:
				if !errors.Is(err, llm.ErrNoProvider) {
					t.Errorf("ConfigFromEnv() error = %v, want ErrNoProvider", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ConfigFromEnv() error = %v, want one naming %s", err, tt.wantErr)
				}
				if err != nil && (strings.Contains(err.Error(), secretKey) || strings.Contains(err.Error(), anthropicKey)) {
					t.Errorf("ConfigFromEnv() error %q contains an API key", err)
				}
			case err != nil:
				t.Fatalf("ConfigFromEnv() error = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ConfigFromEnv() mismatch (-want +got):\n%s", diff)
			}
			if s := got.String(); strings.Contains(s, secretKey) || (got.APIKey != "" && strings.Contains(s, got.APIKey)) {
				t.Errorf("String() = %q contains the API key", s)
			}
		})
	}
}

func TestErrNoProviderNamesEveryKey(t *testing.T) {
	for _, name := range []string{"XAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "MNEMO_PROVIDER"} {
		if !strings.Contains(llm.ErrNoProvider.Error(), name) {
			t.Errorf("ErrNoProvider = %q, want it to mention %s", llm.ErrNoProvider, name)
		}
	}
}

func TestConfigString(t *testing.T) {
	tests := []struct {
		cfg  llm.Config
		want string
	}{
		{llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey}, "xai model=grok-4.3 base=https://api.x.ai/v1"},
		{llm.Config{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"}, "openai model=llama3.2 base=http://localhost:11434/v1"},
		{llm.Config{Provider: "openai", Model: "m", BaseURL: "https://user:" + secretKey + "@proxy.example/v1", APIKey: secretKey}, "openai model=m base=https://user:xxxxx@proxy.example/v1"},
		{llm.Config{Provider: "anthropic", Model: llm.DefaultAnthropicModel, BaseURL: "https://api.anthropic.com", APIKey: anthropicKey}, "anthropic model=claude-sonnet-5-5 base=https://api.anthropic.com"},
		{llm.Config{}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.cfg.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			var logged bytes.Buffer
			slog.New(slog.NewTextHandler(&logged, nil)).Info("provider", "cfg", tt.cfg)
			for _, out := range []string{
				fmt.Sprint(tt.cfg), fmt.Sprintf("%+v", tt.cfg), fmt.Sprintf("%#v", tt.cfg), fmt.Sprintf("%v", &tt.cfg), logged.String(),
			} {
				if strings.Contains(out, secretKey) || strings.Contains(out, anthropicKey) {
					t.Errorf("formatted config %q contains the API key", out)
				}
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	cause := errors.New("connection reset")
	tests := []struct {
		name string
		err  *llm.Error
		want string
	}{
		{"transport", &llm.Error{Provider: "xai", Retryable: true, Err: cause}, "xai: connection reset"},
		{"status only", &llm.Error{Provider: "openai", Status: 503}, "openai: HTTP 503 Service Unavailable"},
		{"no provider", &llm.Error{Err: cause}, "model provider: connection reset"},
		{
			"api error details",
			&llm.Error{Provider: "xai", Status: 429, Err: &openai.Error{StatusCode: 429, Message: "slow down", Type: "requests", Code: "rate_limit_exceeded"}},
			"xai: HTTP 429 Too Many Requests: slow down (type=requests code=rate_limit_exceeded)",
		},
		{"wrapped context", &llm.Error{Provider: "xai", Err: fmt.Errorf("%w: %w", context.Canceled, cause)}, "xai: context canceled: connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if tt.err.Err != nil && !errors.Is(tt.err, tt.err.Err) {
				t.Errorf("errors.Is(err, err.Err) = false, want true")
			}
		})
	}
}

func TestNewOpenAIDefaults(t *testing.T) {
	tests := []struct {
		cfg       llm.Config
		wantName  string
		wantModel string
	}{
		{llm.Config{Provider: "xai", APIKey: secretKey}, "xai", "grok-4.3"},
		{llm.Config{Provider: "xai", Model: "grok-4.5"}, "xai", "grok-4.5"},
		{llm.Config{Provider: "openai"}, "openai", "gpt-4.1-mini"},
		{llm.Config{Provider: "openai", Model: "qwen3", BaseURL: "http://localhost:11434/v1"}, "openai", "qwen3"},
		{llm.Config{}, "openai", "gpt-4.1-mini"},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.String(), func(t *testing.T) {
			o := llm.NewOpenAI(tt.cfg, nil)
			if got := o.Name(); got != tt.wantName {
				t.Errorf("Name() = %q, want %q", got, tt.wantName)
			}
			if got := o.Model(); got != tt.wantModel {
				t.Errorf("Model() = %q, want %q", got, tt.wantModel)
			}
		})
	}
}

// Durations used by timing-bound tests: generous enough for -race on a
// loaded machine, small enough to notice a call that does not abort.
const (
	shortTimeout = 200 * time.Millisecond
	guard        = 10 * time.Second
)
