package llm_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth/llm"
)

// TestSettingsResolve covers what only typed settings can say; the rules
// themselves are TestConfigFromEnv's, which goes through Resolve.
func TestSettingsResolve(t *testing.T) {
	xai := llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses"}
	tests := []struct {
		name    string
		s       llm.Settings
		want    llm.Config
		wantErr string
		noProv  bool
	}{
		{name: "nothing", noProv: true},
		{name: "xai key", s: llm.Settings{XAIKey: secretKey}, want: xai},
		{
			name: "server tools as a list",
			s:    llm.Settings{XAIKey: secretKey, XAIServerTools: []string{" Web_Search", "", "x_search", "web_search"}},
			want: llm.Config{Provider: "xai", Model: "grok-4.3", BaseURL: "https://api.x.ai/v1", APIKey: secretKey, API: "responses", ServerTools: []string{"web_search", "x_search"}},
		},
		{
			name: "timeout",
			s:    llm.Settings{AnthropicKey: anthropicKey, Timeout: 90 * time.Second, Model: " claude-x "},
			want: llm.Config{Provider: "anthropic", Model: "claude-x", BaseURL: "https://api.anthropic.com", APIKey: anthropicKey, Timeout: 90 * time.Second},
		},
		{name: "negative timeout", s: llm.Settings{XAIKey: secretKey, Timeout: -time.Second}, wantErr: "MNEMO_MODEL_TIMEOUT"},
		{name: "unknown provider", s: llm.Settings{Provider: "gemini", XAIKey: secretKey}, wantErr: `MNEMO_PROVIDER="gemini" is not supported`},
		{name: "server tools with chat", s: llm.Settings{XAIKey: secretKey, XAIAPI: "chat", XAIServerTools: []string{"x_search"}}, wantErr: "needs the Responses API"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Resolve()
			switch {
			case tt.noProv:
				if !errors.Is(err, llm.ErrNoProvider) {
					t.Errorf("Resolve() error = %v, want ErrNoProvider", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Resolve() error = %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Resolve() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigFromEnvTimeoutErrorComesLast: a bad MNEMO_MODEL_TIMEOUT is
// reported only when the provider itself is configured, as before Settings.
func TestConfigFromEnvTimeoutErrorComesLast(t *testing.T) {
	_, err := llm.ConfigFromEnv(func(k string) string {
		return map[string]string{"MNEMO_MODEL_TIMEOUT": "soon"}[k]
	})
	if !errors.Is(err, llm.ErrNoProvider) {
		t.Errorf("error = %v, want ErrNoProvider", err)
	}
}

func TestSettingsNeverShowKeys(t *testing.T) {
	s := llm.Settings{XAIKey: secretKey, AnthropicKey: anthropicKey, OpenAIKey: "sk-SECRET-openai", OpenAIBaseURL: "http://user:SECRET-pw@localhost:1/v1"}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("settings", "s", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), logs.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("output %q shows a secret", out)
		}
		if !strings.Contains(out, "xai_key=set") {
			t.Errorf("output %q does not say the xAI key is set", out)
		}
	}
}
