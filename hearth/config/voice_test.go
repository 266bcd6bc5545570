package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestVoiceProvider: the voice provider in effect and the key it mints
// with, from voice.provider and the keys set.
func TestVoiceProvider(t *testing.T) {
	tests := []struct {
		name     string
		fx       fixture
		provider string
		key      string
	}{
		{name: "no key: none", fx: fixture{}},
		{name: "XAI_API_KEY: xai", fx: fixture{env: map[string]string{"XAI_API_KEY": "xk"}}, provider: "xai", key: "xk"},
		{name: "OPENAI_API_KEY alone: none (openai voice is chosen explicitly)", fx: fixture{env: map[string]string{"OPENAI_API_KEY": "ok"}}},
		{name: "openai chosen", fx: fixture{env: map[string]string{"OPENAI_API_KEY": "ok", "XAI_API_KEY": "xk", "MNEMO_VOICE_PROVIDER": "OpenAI"}}, provider: "openai", key: "ok"},
		{name: "openai chosen in the file", fx: fixture{file: "[voice]\nprovider = \"openai\"\n", env: map[string]string{"OPENAI_API_KEY": "ok"}}, provider: "openai", key: "ok"},
		{name: "none turns voice off", fx: fixture{env: map[string]string{"XAI_API_KEY": "xk", "MNEMO_VOICE_PROVIDER": "none"}}},
		{name: "the chat provider does not choose the voice provider", fx: fixture{env: map[string]string{"XAI_API_KEY": "xk", "OPENAI_API_KEY": "ok", "MNEMO_PROVIDER": "openai"}}, provider: "xai", key: "xk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, _ := tt.fx.load(t)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			p, key := c.VoiceProvider()
			if p != tt.provider || key.Reveal() != tt.key {
				t.Errorf("VoiceProvider() = %q, %q; want %q, %q", p, key.Reveal(), tt.provider, tt.key)
			}
		})
	}
}

// TestVoiceSettings: each voice setting from the file and the environment.
func TestVoiceSettings(t *testing.T) {
	c, err, _ := fixture{
		file: "[voice]\nmodel = \"m\"\nvoice = \"ara\"\nvad_threshold = 0.5\nvad_silence = \"800ms\"\n",
		env: map[string]string{
			"XAI_API_KEY": "xk", "MNEMO_VOICE_MODEL": "grok-voice-2", "MNEMO_VOICE_VAD": "Manual",
			"MNEMO_VOICE_VAD_PREFIX_PADDING": "0s", "MNEMO_VOICE_BASE_URL": "http://127.0.0.1:9/v1",
			"MNEMO_VOICE_TRANSCRIPTION_MODEL": "grok-transcribe",
		},
	}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	v := c.Voice
	got := []any{v.Model.Value, v.Voice.Value, v.VAD.Value, v.VADThreshold.Value, v.VADSilence.Value, v.VADPrefixPadding.Value, v.BaseURL.Value, v.TranscriptionModel.Value}
	want := []any{"grok-voice-2", "ara", "manual", 0.5, 800 * time.Millisecond, time.Duration(0), "http://127.0.0.1:9/v1", "grok-transcribe"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("voice settings (-want +got):\n%s", diff)
	}
	if v.Model.Source.Origin != FromEnv || v.Voice.Source.Origin != FromFile {
		t.Errorf("sources: model %v, voice %v", v.Model.Source, v.Voice.Source)
	}
	fx := fixture{file: "[voice]\nvad_threshold = 1\n", env: map[string]string{"MNEMO_VOICE_PROVIDER": "none"}}
	if i, err, _ := fx.load(t); err != nil || i.Voice.VADThreshold.Value != 1 {
		t.Errorf("an integer threshold in the file reads as %v (%v)", i.Voice.VADThreshold.Value, err)
	}
}

// TestVoiceErrors: invalid voice settings, each named with where it came
// from, and never the key.
func TestVoiceErrors(t *testing.T) {
	tests := []struct {
		name string
		fx   fixture
		want []string
	}{
		{
			name: "a provider without its key",
			fx:   fixture{env: map[string]string{"MNEMO_VOICE_PROVIDER": "openai", "XAI_API_KEY": "SECRET"}},
			want: []string{`MNEMO_VOICE_PROVIDER openai (env): needs OPENAI_API_KEY in the environment`},
		},
		{
			name: "xai without its key",
			fx:   fixture{file: "[voice]\nprovider = \"xai\"\n"},
			want: []string{`voice.provider xai (file $DIR/mnemo/hearth.toml:2): needs XAI_API_KEY in the environment`},
		},
		{
			name: "an unknown provider",
			fx:   fixture{env: map[string]string{"MNEMO_VOICE_PROVIDER": "anthropic"}},
			want: []string{`MNEMO_VOICE_PROVIDER anthropic (env): use xai, openai or none (left out: xai when XAI_API_KEY is set)`},
		},
		{
			name: "out of range, for xai",
			fx: fixture{
				file: "[voice]\nvad = \"semantic\"\nvad_threshold = 0.95\nvad_silence = \"0s\"\nvad_prefix_padding = \"-1s\"\nbase_url = \"ftp://x\"\n",
				env:  map[string]string{"XAI_API_KEY": "SECRET"},
			},
			want: []string{
				`voice.base_url ftp://x (file $DIR/mnemo/hearth.toml:6): the scheme must be http or https`,
				`voice.vad semantic (file $DIR/mnemo/hearth.toml:2): use server_vad or manual`,
				`voice.vad_threshold 0.95 (file $DIR/mnemo/hearth.toml:3): must be between 0.1 and 0.9 for xai`,
				`voice.vad_silence 0s (file $DIR/mnemo/hearth.toml:4): must be positive and at most 10s`,
				`voice.vad_prefix_padding -1s (file $DIR/mnemo/hearth.toml:5): must be between 0s and 10s`,
			},
		},
		{
			name: "threshold for openai",
			fx:   fixture{env: map[string]string{"MNEMO_VOICE_PROVIDER": "openai", "OPENAI_API_KEY": "SECRET", "MNEMO_VOICE_VAD_THRESHOLD": "0"}},
			want: []string{`MNEMO_VOICE_VAD_THRESHOLD 0 (env): must be above 0 and at most 1`},
		},
		{
			name: "not a number",
			fx:   fixture{file: "[voice]\nvad_threshold = \"low\"\n", env: map[string]string{"MNEMO_VOICE_VAD_SILENCE": "NaN"}},
			want: []string{
				`voice.vad_threshold "low" (file $DIR/mnemo/hearth.toml:2): want a number such as 0.5`,
				`MNEMO_VOICE_VAD_SILENCE NaN (env): want a Go duration such as 90s or 10m`,
			},
		},
		{
			name: "no key in the file",
			fx:   fixture{file: "[voice]\napi_key = \"SECRET\"\n"},
			want: []string{`voice.api_key (file $DIR/mnemo/hearth.toml:2): unknown setting; secrets are not read from the config file: set them in the environment`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err, dir := tt.fx.load(t)
			if diff := cmp.Diff(tt.want, messages(err, dir)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}
