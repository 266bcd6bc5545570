package voicekey_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/voicekey"
	"github.com/mnemo/mnemo/hearth/voicekey/voicekeytest"
)

const key = "sk-SECRET-voice-key"

func minter(t *testing.T, provider, base, k string) *voicekey.Minter {
	t.Helper()
	m, err := voicekey.New(voicekey.Settings{
		Provider: provider, Key: k, BaseURL: base,
		VAD: hearth.VoiceVAD{Type: "server_vad", Threshold: 0.2, Silence: 500 * time.Millisecond, PrefixPadding: 300 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMintPerDialect: each provider is sent the request VOICE.md
// documents, with the key as a bearer, and the credential carries the
// minted value, its expiry, the realtime URL and the session settings.
func TestMintPerDialect(t *testing.T) {
	tests := []struct {
		dialect  string
		wantBody map[string]any
		model    string
		voice    string
	}{
		{
			dialect:  "xai",
			wantBody: map[string]any{"expires_after": map[string]any{"seconds": 600.0}},
			model:    voicekey.DefaultXAIModel, voice: voicekey.DefaultXAIVoice,
		},
		{
			dialect: "openai",
			wantBody: map[string]any{
				"expires_after": map[string]any{"anchor": "created_at", "seconds": 600.0},
				"session":       map[string]any{"type": "realtime", "model": "gpt-realtime", "audio": map[string]any{"output": map[string]any{"voice": "marin"}}},
			},
			model: voicekey.DefaultOpenAIModel, voice: voicekey.DefaultOpenAIVoice,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			srv := voicekeytest.New(tt.dialect, key)
			defer srv.Close()
			m := minter(t, tt.dialect, srv.BaseURL(), key)
			before := time.Now()
			c, err := m.MintVoice(context.Background())
			if err != nil {
				t.Fatalf("MintVoice: %v", err)
			}
			if c.Value != voicekeytest.Minted(tt.dialect, 1) {
				t.Errorf("Value = %q, want the minted one", c.Value)
			}
			if d := c.ExpiresAt.Sub(before); d < 9*time.Minute || d > 11*time.Minute {
				t.Errorf("ExpiresAt is %v from now, want about 10m", d)
			}
			wantURL := "ws" + strings.TrimPrefix(srv.BaseURL(), "http") + "/realtime?model=" + tt.model
			if c.URL != wantURL || c.Model != tt.model || c.Dialect != tt.dialect || c.Voice != tt.voice || c.VAD.Threshold != 0.2 || c.Transcription == "" {
				t.Errorf("credential = %+v, want URL %s and the %s defaults", c, wantURL, tt.dialect)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
				t.Fatalf("requests = %+v, want one with the bearer key", reqs)
			}
			if diff := cmp.Diff(tt.wantBody, reqs[0].Body); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			// Each request mints anew.
			c2, err := m.MintVoice(context.Background())
			if err != nil || c2.Value == c.Value {
				t.Errorf("second mint = %q, %v; want a fresh value", c2.Value, err)
			}
		})
	}
}

// TestMintFailures: every failure maps to a category whose message says
// what to do, and never holds the key, the provider's body or the URL.
func TestMintFailures(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/v1"
	dead.Close()

	tests := []struct {
		name    string
		dialect string
		status  int    // the stand-in fails with it
		key     string // sent
		base    string // "" the stand-in
		want    voicekey.Category
		msg     string
	}{
		{name: "xai wrong key: 400", dialect: "xai", key: "wrong-SECRET", want: voicekey.CategoryBadRequest, msg: "refused the request (HTTP 400) — check XAI_API_KEY"},
		{name: "openai wrong key: 401", dialect: "openai", key: "wrong-SECRET", want: voicekey.CategoryRejectedKey, msg: "rejected the API key (HTTP 401) — set OPENAI_API_KEY"},
		{name: "401", dialect: "xai", status: http.StatusUnauthorized, want: voicekey.CategoryRejectedKey, msg: "set XAI_API_KEY to a valid key"},
		{name: "400", dialect: "openai", status: http.StatusBadRequest, want: voicekey.CategoryBadRequest, msg: "HTTP 400"},
		{name: "429", dialect: "xai", status: http.StatusTooManyRequests, want: voicekey.CategoryRateLimited, msg: "try again in 7 s"},
		{name: "500", dialect: "xai", status: http.StatusInternalServerError, want: voicekey.CategoryOverloaded, msg: "(HTTP 500) — try again later"},
		{name: "unreachable", dialect: "xai", base: deadURL, want: voicekey.CategoryUnreachable, msg: "check voice.base_url (MNEMO_VOICE_BASE_URL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := voicekeytest.New(tt.dialect, key)
			defer srv.Close()
			srv.Fail(tt.status)
			base, k := srv.BaseURL(), key
			if tt.base != "" {
				base = tt.base
			}
			if tt.key != "" {
				k = tt.key
			}
			_, err := minter(t, tt.dialect, base, k).MintVoice(context.Background())
			var e *voicekey.Error
			if !errors.As(err, &e) || e.Category != tt.want {
				t.Fatalf("MintVoice error = %v, want category %s", err, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q does not say %q", msg, tt.msg)
			}
			for _, leak := range []string{"SECRET", "Incorrect", "stand-in", "127.0.0.1", "http"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message %q shows %q", msg, leak)
				}
			}
		})
	}
}

// TestMintTimeout: a provider that never answers is cut off at the
// timeout, as a timeout.
func TestMintTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := voicekeytest.New("xai", key)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer srv.Close()
	defer close(release)
	m, err := voicekey.New(voicekey.Settings{Provider: "xai", Key: key, BaseURL: srv.BaseURL(), Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.MintVoice(context.Background())
	var e *voicekey.Error
	if !errors.As(err, &e) || e.Category != voicekey.CategoryTimeout {
		t.Fatalf("MintVoice = %v, want a timeout", err)
	}
}

// TestDecodeSecret: both response forms, each expiry form, and what is
// refused.
func TestDecodeSecret(t *testing.T) {
	at := time.Unix(1773609243, 0).UTC()
	tests := []struct {
		in      string
		want    voicekey.Secret
		wantErr bool
	}{
		{in: `{"value":"xai-eph-1","expires_at":1773609243}`, want: voicekey.Secret{"xai-eph-1", at}},
		{in: `{"value":"ek_1","expires_at":1773609243,"session":{"type":"realtime"}}`, want: voicekey.Secret{"ek_1", at}},
		{in: `{"client_secret":{"value":"ek_2","expires_at":"1773609243"}}`, want: voicekey.Secret{"ek_2", at}},
		{in: `{"value":"v","expires_at":"2026-03-15T21:14:03Z"}`, want: voicekey.Secret{"v", at}},
		{in: `{"value":"v"}`, want: voicekey.Secret{Value: "v"}},
		{in: `{"value":""}`, wantErr: true},
		{in: `{"value":"has space"}`, wantErr: true},
		{in: `{"value":"v","expires_at":-1}`, wantErr: true},
		{in: `{"value":"v","expires_at":1e300}`, wantErr: true},
		{in: `{"value":"v","expires_at":"soon"}`, wantErr: true},
		{in: `[]`, wantErr: true},
		{in: `not json`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := voicekey.DecodeSecret([]byte(tt.in))
		if (err != nil) != tt.wantErr || !got.ExpiresAt.Equal(tt.want.ExpiresAt) || got.Value != tt.want.Value {
			t.Errorf("DecodeSecret(%s) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzDecodeSecret: any body decodes to a token-like value or an error,
// never a panic.
func FuzzDecodeSecret(f *testing.F) {
	for _, s := range []string{
		`{"value":"xai-eph-1","expires_at":1773609243}`, `{"client_secret":{"value":"ek_2","expires_at":"1773609243"}}`,
		`{"value":"v","expires_at":"2026-03-15T21:14:03Z"}`, `{"value":"v","expires_at":1.5}`, `{}`, `null`, `{"value":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := voicekey.DecodeSecret(b)
		if err != nil {
			return
		}
		if s.Value == "" || len(s.Value) > 4096 || strings.ContainsAny(s.Value, " \n\r\t\x00") {
			t.Errorf("DecodeSecret(%q) accepted value %q", b, s.Value)
		}
	})
}

// TestNewRefuses: settings that cannot mint.
func TestNewRefuses(t *testing.T) {
	for _, s := range []voicekey.Settings{
		{Provider: "anthropic", Key: "k"},
		{Provider: "xai"},
		{Provider: "xai", Key: "k", BaseURL: "ftp://x"},
	} {
		if _, err := voicekey.New(s); err == nil || strings.Contains(err.Error(), "k\"") {
			t.Errorf("New(%+v) = %v, want a refusal", s.Provider, err)
		}
	}
}
