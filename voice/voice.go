package voice

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"
)

// Dialects of the realtime protocol.
const (
	DialectXAI    = "xai"
	DialectOpenAI = "openai"
)

// VAD modes.
const (
	VADServer = "server_vad" // the provider detects turns
	VADManual = "manual"     // push-to-talk: the client commits each turn
)

// Product defaults for server VAD (seed 004, VOICE.md lesson 2).
const (
	DefaultThreshold       = 0.2
	DefaultSilenceMS       = 500
	DefaultPrefixPaddingMS = 300
)

// SampleRate is the PCM rate both ways: int16 little-endian mono.
const SampleRate = 24000

// Credential opens one realtime session. Value is an ephemeral client
// secret (or, in tests, a key); it is sent only as the Authorization header
// of the WebSocket handshake.
type Credential struct {
	Value     string
	ExpiresAt time.Time
	URL       string // wss://…/v1/realtime
	Model     string
	Dialect   string // DialectXAI or DialectOpenAI
}

// Settings is what the client configures with session.update.
type Settings struct {
	Instructions  string
	Voice         string
	VAD           VAD
	Transcription string // input transcription model; empty: the dialect's default
	Tools         []Tool
}

// VAD is turn detection. A zero value means server VAD with the product
// defaults; zero fields of a server VAD take the defaults.
type VAD struct {
	Mode            string // VADServer (default) or VADManual
	Threshold       float64
	SilenceMS       int
	PrefixPaddingMS int
}

// withDefaults fills the zero fields.
func (v VAD) withDefaults() VAD {
	if v.Mode == "" {
		v.Mode = VADServer
	}
	if v.Threshold == 0 {
		v.Threshold = DefaultThreshold
	}
	if v.SilenceMS == 0 {
		v.SilenceMS = DefaultSilenceMS
	}
	if v.PrefixPaddingMS == 0 {
		v.PrefixPaddingMS = DefaultPrefixPaddingMS
	}
	return v
}

// Tool is a function offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema
}

// Credentials hands out a fresh credential and the settings for every
// (re)connect attempt: one ephemeral token opens one session. The client
// implements it by asking hearth (voice_request).
type Credentials interface {
	Credential(ctx context.Context) (Credential, Settings, error)
}

// Options tune a Session. Zero values take the defaults.
type Options struct {
	// CreatedTimeout bounds the wait for session.created after the
	// handshake; then the attempt is abandoned for a new credential.
	// Default 5 s.
	CreatedTimeout time.Duration
	// ConnectAttempts is how many credentials Dial tries. Default 3.
	ConnectAttempts int
	// MaxResumes is how many reconnects an xAI session tries after one
	// dropped connection before it ends. Default 3.
	MaxResumes int
	// PreReadyAudioMS is how much microphone audio SendAudio keeps while
	// the session is not ready (before session.updated, during a resume):
	// the most recent audio is sent once ready. Default 1000.
	PreReadyAudioMS int
	// WriteTimeout bounds one WebSocket write. Default 10 s.
	WriteTimeout time.Duration
	// HTTPClient carries the handshake; nil: http.DefaultClient.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.CreatedTimeout <= 0 {
		o.CreatedTimeout = 5 * time.Second
	}
	if o.ConnectAttempts <= 0 {
		o.ConnectAttempts = 3
	}
	if o.MaxResumes <= 0 {
		o.MaxResumes = 3
	}
	if o.PreReadyAudioMS <= 0 {
		o.PreReadyAudioMS = 1000
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
