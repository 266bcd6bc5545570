package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// Config is hearth's configuration, loaded and validated once by Load.
// Every value carries where it came from.
type Config struct {
	// File is the config file Load looked for ("" when there is no
	// config dir and no -config); FileFound says whether it was there.
	File      Setting[string]
	FileFound bool

	Addr         Setting[string] // host:port to listen on
	ListenRemote Setting[bool]   // allow a non-loopback Addr (requires AuthToken)
	// HTTPAddr is the HTTP door's host:port; "" serves no HTTP. Like
	// Addr, loopback unless ListenRemote.
	HTTPAddr  Setting[string]
	Root      Setting[string] // the memory root
	TokenFile Setting[string] // the auth token file, used when AuthToken is unset
	Gateway   Setting[string] // gateway.json listing MCP servers
	TLS       Setting[bool]   // serve the NDJSON port over TLS (self-signed, pinned by clients)

	HistoryTurns   Setting[int]           // turns sent to a client when it connects
	ToolTimeout    Setting[time.Duration] // bound on one tool call
	ConfirmTimeout Setting[time.Duration] // how long a confirm-class tool waits
	MaxIterations  Setting[int]           // model calls in one turn; 0: no bound
	ContextBudget  Setting[int]           // tokens of conversation per turn (see Budget)
	LogLevel       Setting[slog.Level]
	// LogFile is where hearth logs; "" means stderr (journald under the
	// service unit). It rotates at LogMaxSize MiB, keeping LogBackups
	// older files, gzip'd when LogCompress.
	LogFile     Setting[string]
	LogMaxSize  Setting[int]
	LogBackups  Setting[int]
	LogCompress Setting[bool]

	// AuthToken is APP_AUTH_TOKEN; unset means the token file's.
	AuthToken Setting[Secret]

	Model   ModelConfig
	Recall  RecallConfig
	Voice   VoiceConfig
	Curator CuratorConfig
	Jobs    JobsConfig
	// RateLimit is the requests a minute each actor type may make,
	// through every door (auth.Limiter); 0 is no limit.
	RateLimit RateLimitConfig
}

// JobsConfig is the vault's job runner's settings (DESIGN.md "Jobs").
type JobsConfig struct {
	// Enabled runs the vault's jobs (daily, weekly, session summary);
	// default true. They run only with the curator on, whose model they
	// use.
	Enabled Setting[bool]
}

// RateLimitConfig is the per-actor request rate limits (seed 002: 429
// with retry_after_ms). Requests a minute; 0 is no limit.
type RateLimitConfig struct {
	Owner, Collaborator, SystemAgent, BackgroundAgent, ExternalAgent, Service Setting[int]
}

// RateLimits are the limits as auth.LimiterOptions takes them.
func (c *Config) RateLimits() map[auth.Actor]int {
	r := c.RateLimit
	return map[auth.Actor]int{
		auth.ActorOwner:           r.Owner.Value,
		auth.ActorCollaborator:    r.Collaborator.Value,
		auth.ActorSystemAgent:     r.SystemAgent.Value,
		auth.ActorBackgroundAgent: r.BackgroundAgent.Value,
		auth.ActorExternalAgent:   r.ExternalAgent.Value,
		auth.ActorService:         r.Service.Value,
	}
}

// CuratorConfig is the post-turn curator pass's settings (DESIGN.md "The
// curator").
type CuratorConfig struct {
	// Enabled runs the curator after each turn when a model is
	// configured; default true.
	Enabled Setting[bool]
	// Model is the model name the curator asks its provider for; "": the
	// chat model.
	Model Setting[string]
	// Flush runs the flush pass (compaction without forgetting) before
	// turns leave the context window; default true. Off, the window
	// trims the oldest turns as without a curator.
	Flush Setting[bool]
}

// Log file defaults: 10 MiB a file, five older ones kept.
const (
	DefaultLogMaxSize = 10
	DefaultLogBackups = 5
)

// Voice providers, for VoiceConfig.Provider.
const (
	VoiceXAI    = "xai"
	VoiceOpenAI = "openai"
	VoiceNone   = "none"
)

// Voice turn detection, for VoiceConfig.VAD.
const (
	VADServer = "server_vad" // the provider detects when the owner speaks and stops
	VADManual = "manual"     // push-to-talk: the client commits each turn
)

// VoiceConfig is the realtime voice provider's settings. Its key is the
// provider's API key (Model.XAIKey or Model.OpenAIKey): never a setting
// of its own, never in the file, never sent to a client.
type VoiceConfig struct {
	// Provider is "", "xai", "openai" or "none"; "": xai when XAI_API_KEY
	// is set, else none (OpenAI voice is chosen explicitly, as
	// OPENAI_API_KEY often serves a local model).
	Provider           Setting[string]
	Model              Setting[string]  // "": the provider's default
	Voice              Setting[string]  // "": the provider's default
	BaseURL            Setting[string]  // the provider's API base; "": its default
	VAD                Setting[string]  // VADServer or VADManual
	VADThreshold       Setting[float64] // speech probability, lower is more sensitive
	VADSilence         Setting[time.Duration]
	VADPrefixPadding   Setting[time.Duration]
	TranscriptionModel Setting[string] // "": the provider's default
}

// VoiceProvider is the voice provider in effect: "xai", "openai" or ""
// (none), with the key it mints with.
func (c *Config) VoiceProvider() (provider string, key Secret) {
	switch c.Voice.Provider.Value {
	case VoiceXAI:
		return VoiceXAI, c.Model.XAIKey.Value
	case VoiceOpenAI:
		return VoiceOpenAI, c.Model.OpenAIKey.Value
	case "":
		if c.Model.XAIKey.Value.IsSet() {
			return VoiceXAI, c.Model.XAIKey.Value
		}
	}
	return "", Secret{}
}

// ModelConfig is the model provider's settings; see llm.Settings for what
// each means, and Config.ModelSettings for the owner's preference over
// them.
type ModelConfig struct {
	Provider Setting[string]        // "", "xai", "anthropic" or "openai" (lower case); "": by the keys set
	Name     Setting[string]        // the model; "": the provider's default
	Timeout  Setting[time.Duration] // bound on one model call; never retried
	// FirstByteTimeout bounds the wait for the first byte of a reply,
	// IdleTimeout a silence inside it; both are retried, and at most
	// Timeout.
	FirstByteTimeout Setting[time.Duration]
	IdleTimeout      Setting[time.Duration]

	XAIKey         Setting[Secret]
	XAIBaseURL     Setting[string]   // "": llm.DefaultXAIBaseURL
	XAIAPI         Setting[string]   // "responses" or "chat"
	XAIServerTools Setting[[]string] // lower case, no repeats

	AnthropicKey     Setting[Secret]
	AnthropicBaseURL Setting[string] // "": llm.DefaultAnthropicBaseURL

	OpenAIKey     Setting[Secret]
	OpenAIBaseURL Setting[string] // "": llm.DefaultOpenAIBaseURL
}

// Embedder kinds, for RecallConfig.Embedder.
const (
	// EmbedderAuto is the offline word vectors when Vectors exists, else
	// none (recall is lexical only).
	EmbedderAuto    = "auto"
	EmbedderWordvec = "wordvec" // the offline word vectors; Vectors must exist
	EmbedderOpenAI  = "openai"  // an OpenAI-compatible /embeddings endpoint
	EmbedderOllama  = "ollama"  // Ollama's /api/embed
	EmbedderNone    = "none"    // lexical only
)

// RecallConfig is the semantic memory's settings.
type RecallConfig struct {
	Embedder Setting[string] // an Embedder… constant
	Vectors  Setting[string] // the word-vector file of the offline embedder

	// For the openai and ollama embedders, which need EmbedModel and
	// EmbedDim. EmbedBaseURL defaults to Model.OpenAIBaseURL, then
	// llm.DefaultOpenAIBaseURL, for openai, and to
	// http://localhost:11434 for ollama; EmbedKey defaults to
	// Model.OpenAIKey.
	EmbedModel   Setting[string]
	EmbedDim     Setting[int]
	EmbedBaseURL Setting[string]
	EmbedKey     Setting[Secret]

	// QdrantAddr is Qdrant's gRPC host:port; "" means the embedded index
	// in the memory root.
	QdrantAddr Setting[string]
	QdrantKey  Setting[Secret]
	QdrantTLS  Setting[bool]
}

// Setting is one configuration value and where it came from.
type Setting[T any] struct {
	Value  T
	Source Source
}

// Origin is the kind of place a value came from, in increasing
// precedence.
type Origin int

// Origins of a value.
const (
	FromDefault Origin = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where a value came from.
type Source struct {
	Origin Origin
	// Name is how that place names the setting: the file key
	// ("model.provider") for a default or the file, the variable
	// ("MNEMO_PROVIDER") for the environment, the flag ("-addr") for a
	// flag.
	Name string
	// Path and Line locate a value from the file (Line 0: unknown).
	Path string
	Line int
}

// String is "default", "file <path>", "env <NAME>" or "flag -<name>".
func (s Source) String() string {
	switch s.Origin {
	case FromFile:
		return "file " + s.Path
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag " + s.Name
	}
	return "default"
}

// where is the source as an error names it after the setting: "flag",
// "env", "default", or "file <path>:<line>".
func (s Source) where() string {
	switch s.Origin {
	case FromFile:
		if s.Line > 0 {
			return "file " + s.Path + ":" + strconv.Itoa(s.Line)
		}
		return "file " + s.Path
	case FromEnv:
		return "env"
	case FromFlag:
		return "flag"
	}
	return "default"
}

// Budget is the base context budget: the default shares of ContextBudget
// tokens. The owner's preferences may override it (Preferences.Context).
func (c *Config) Budget() hearth.ContextBudget {
	b := hearth.DefaultContextBudget()
	b.Tokens = c.ContextBudget.Value
	return b
}

// ModelSettings are the model settings for a turn: c's, with the owner's
// provider and model preferences, when set, over them.
func (c *Config) ModelSettings(p Preferences) llm.Settings {
	m := c.Model
	s := llm.Settings{
		Provider:         m.Provider.Value,
		Model:            m.Name.Value,
		Timeout:          m.Timeout.Value,
		FirstByteTimeout: m.FirstByteTimeout.Value,
		IdleTimeout:      m.IdleTimeout.Value,
		XAIKey:           m.XAIKey.Value.Reveal(),
		XAIBaseURL:       m.XAIBaseURL.Value,
		XAIAPI:           m.XAIAPI.Value,
		XAIServerTools:   m.XAIServerTools.Value,
		AnthropicKey:     m.AnthropicKey.Value.Reveal(),
		AnthropicBaseURL: m.AnthropicBaseURL.Value,
		OpenAIKey:        m.OpenAIKey.Value.Reveal(),
		OpenAIBaseURL:    m.OpenAIBaseURL.Value,
	}
	if p.Provider != "" {
		s.Provider = p.Provider
	}
	if p.Model != "" {
		s.Model = p.Model
	}
	return s
}

// problem is a setting's invalid value: "<name> <value> (<where>): <msg>".
func problem(src Source, value, msg string) error {
	return fmt.Errorf("%s %s (%s): %s", src.Name, value, src.where(), msg)
}
