// Package voicekey mints ephemeral realtime voice credentials: it calls
// the voice provider's client-secret endpoint (xAI's, or OpenAI GA's) with
// the API key, which never leaves hearth, and returns a short-lived value
// a client opens one realtime session with. *Minter implements
// hearth.VoiceMinter.
package voicekey

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mnemo/mnemo/hearth"
)

// Providers (and their realtime dialects).
const (
	XAI    = "xai"
	OpenAI = "openai"
)

// Provider defaults.
const (
	DefaultXAIBaseURL            = "https://api.x.ai/v1"
	DefaultXAIModel              = "grok-voice-latest"
	DefaultXAIVoice              = "eve"
	DefaultXAITranscription      = "grok-transcribe"
	DefaultOpenAIBaseURL         = "https://api.openai.com/v1"
	DefaultOpenAIModel           = "gpt-realtime"
	DefaultOpenAIVoice           = "marin"
	DefaultOpenAITranscription   = "gpt-4o-transcribe"
	DefaultTTL                   = 10 * time.Minute // xAI's default; both accept it
	DefaultTimeout               = 10 * time.Second
	maxBody                      = 64 << 10
	maxSecret                    = 4 << 10
	minTTL, maxTTLXAI, maxTTLOAI = 10 * time.Second, time.Hour, 2 * time.Hour
)

// Settings configure a Minter.
type Settings struct {
	Provider string // XAI or OpenAI
	Key      string // the provider's API key
	BaseURL  string // the provider's API base; "": its default

	Model, Voice, Transcription string // "": the provider's defaults
	VAD                         hearth.VoiceVAD

	TTL     time.Duration // how long a credential may open a session; default 10m
	Timeout time.Duration // bound on one mint; default 10s
	Client  *http.Client  // default a new client
	Log     *slog.Logger
}

// Minter mints credentials for one provider.
type Minter struct {
	s        Settings
	endpoint string // the client-secret endpoint
	wsURL    string // the realtime URL, model included
}

// New checks s and returns its Minter.
func New(s Settings) (*Minter, error) {
	switch s.Provider {
	case XAI:
		s.BaseURL = or(s.BaseURL, DefaultXAIBaseURL)
		s.Model, s.Voice, s.Transcription = or(s.Model, DefaultXAIModel), or(s.Voice, DefaultXAIVoice), or(s.Transcription, DefaultXAITranscription)
	case OpenAI:
		s.BaseURL = or(s.BaseURL, DefaultOpenAIBaseURL)
		s.Model, s.Voice, s.Transcription = or(s.Model, DefaultOpenAIModel), or(s.Voice, DefaultOpenAIVoice), or(s.Transcription, DefaultOpenAITranscription)
	default:
		return nil, fmt.Errorf("voicekey: unknown provider %q", s.Provider)
	}
	if s.Key == "" {
		return nil, errors.New("voicekey: no API key")
	}
	if s.TTL <= 0 {
		s.TTL = DefaultTTL
	}
	maxTTL := maxTTLXAI
	if s.Provider == OpenAI {
		maxTTL = maxTTLOAI
	}
	s.TTL = min(max(s.TTL, minTTL), maxTTL)
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Client == nil {
		s.Client = &http.Client{}
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	base, err := url.Parse(strings.TrimRight(s.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errors.New("voicekey: the base URL must be an absolute http or https URL")
	}
	ws := *base
	ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[base.Scheme]
	ws.User = nil
	ws.Path += "/realtime"
	ws.RawQuery = url.Values{"model": {s.Model}}.Encode()
	return &Minter{s: s, endpoint: base.String() + "/realtime/client_secrets", wsURL: ws.String()}, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Provider is the provider m mints for.
func (m *Minter) Provider() string { return m.s.Provider }

// MintVoice calls the client-secret endpoint and returns the credential
// with the session settings; the core adds instructions and tools. Its
// error is an *Error, safe to show.
func (m *Minter) MintVoice(ctx context.Context) (hearth.VoiceCredential, error) {
	ctx, cancel := context.WithTimeout(ctx, m.s.Timeout)
	defer cancel()
	body, err := json.Marshal(m.requestBody())
	if err != nil {
		return hearth.VoiceCredential{}, m.fail(CategoryBadResponse, 0, 0, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return hearth.VoiceCredential{}, m.fail(CategoryUnreachable, 0, 0, err)
	}
	req.Header.Set("Authorization", "Bearer "+m.s.Key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := m.s.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return hearth.VoiceCredential{}, m.fail(CategoryTimeout, 0, 0, err)
		}
		return hearth.VoiceCredential{}, m.fail(CategoryUnreachable, 0, 0, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil {
			return hearth.VoiceCredential{}, m.fail(CategoryTimeout, resp.StatusCode, 0, err)
		}
		return hearth.VoiceCredential{}, m.fail(CategoryUnreachable, resp.StatusCode, 0, err)
	}
	if resp.StatusCode/100 != 2 {
		return hearth.VoiceCredential{}, m.fail(categorize(resp.StatusCode), resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	secret, err := DecodeSecret(raw)
	if err != nil {
		return hearth.VoiceCredential{}, m.fail(CategoryBadResponse, resp.StatusCode, 0, err)
	}
	if secret.ExpiresAt.IsZero() {
		secret.ExpiresAt = start.Add(m.s.TTL)
	}
	m.s.Log.Debug("voice credential minted", "provider", m.s.Provider, "expires_at", secret.ExpiresAt)
	return hearth.VoiceCredential{
		Value: secret.Value, ExpiresAt: secret.ExpiresAt, URL: m.wsURL, Model: m.s.Model, Dialect: m.s.Provider,
		Voice: m.s.Voice, VAD: m.s.VAD, Transcription: m.s.Transcription,
	}, nil
}

// requestBody is the client-secret request VOICE.md documents: xAI takes
// the expiry alone; OpenAI GA also binds the session (its type and model,
// and the voice, which cannot change once audio has played).
func (m *Minter) requestBody() any {
	secs := int64(m.s.TTL / time.Second)
	if m.s.Provider == XAI {
		return map[string]any{"expires_after": map[string]any{"seconds": secs}}
	}
	return map[string]any{
		"expires_after": map[string]any{"anchor": "created_at", "seconds": secs},
		"session": map[string]any{
			"type":  "realtime",
			"model": m.s.Model,
			"audio": map[string]any{"output": map[string]any{"voice": m.s.Voice}},
		},
	}
}

// Secret is a decoded client-secret response.
type Secret struct {
	Value     string
	ExpiresAt time.Time // zero when the provider did not say
}

// DecodeSecret reads a client-secret response: {"value", "expires_at"}
// (xAI, OpenAI GA), or the same under "client_secret" (OpenAI's earlier
// form). expires_at is Unix seconds (a number, or its text) or RFC 3339.
func DecodeSecret(body []byte) (Secret, error) {
	type secret struct {
		Value     string          `json:"value"`
		ExpiresAt json.RawMessage `json:"expires_at"`
	}
	var r struct {
		secret
		ClientSecret *secret `json:"client_secret"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Secret{}, errors.New("the response is not a JSON object")
	}
	s := r.secret
	if s.Value == "" && r.ClientSecret != nil {
		s = *r.ClientSecret
	}
	if s.Value == "" {
		return Secret{}, errors.New("the response has no value")
	}
	if len(s.Value) > maxSecret || strings.ContainsFunc(s.Value, func(c rune) bool { return unicode.IsSpace(c) || !unicode.IsPrint(c) }) {
		return Secret{}, errors.New("the response's value is not a token")
	}
	at, err := decodeTime(s.ExpiresAt)
	if err != nil {
		return Secret{}, err
	}
	return Secret{Value: s.Value, ExpiresAt: at}, nil
}

func decodeTime(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		return unix(n)
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return time.Time{}, errors.New("expires_at is neither a number nor a string")
	}
	if n, err := strconv.ParseFloat(str, 64); err == nil {
		return unix(n)
	}
	t, err := time.Parse(time.RFC3339, str)
	if err != nil {
		return time.Time{}, errors.New("expires_at is not a time")
	}
	return t, nil
}

// unix is Unix seconds as a time; years past 9999 are refused.
func unix(n float64) (time.Time, error) {
	if math.IsNaN(n) || n <= 0 || n > 253402300799 {
		return time.Time{}, errors.New("expires_at is out of range")
	}
	sec, frac := math.Modf(n)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

func retryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 && n < 3600 {
		return time.Duration(n) * time.Second
	}
	return 0
}
