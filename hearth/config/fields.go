package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
)

// field describes one setting: its names in the file, the environment and
// the flags, and how its value is parsed and shown.
type field struct {
	key  string // the file key and the name Print shows: "model.provider"
	env  string // "" when no variable sets it
	flag string // without the dash; "" when no flag sets it
	// envText turns the variable's text into the setting's (MNEMO_HEARTH_PORT
	// is a port; the setting is an address).
	envText func(string) (string, error)
	secret  bool   // read from the environment only
	unset   string // how Print shows an empty value
	value   func(*Config) value
}

// value is a Setting seen through its text: parse and decode set it (and
// its source) from a variable or flag and from a file value.
type value interface {
	parse(raw string, src Source) error
	decode(v any, src Source) error
	show() string
	source() Source
	empty() bool
}

// fields are every setting, in the order Print shows them.
var fields = []field{
	{key: "addr", flag: "addr", env: "MNEMO_HEARTH_PORT", envText: portAddr, value: func(c *Config) value { return text(&c.Addr, false) }},
	{key: "listen_remote", flag: "listen-remote", value: func(c *Config) value { return boolean(&c.ListenRemote) }},
	{key: "http", flag: "http", unset: "(none: no HTTP door)", value: func(c *Config) value { return text(&c.HTTPAddr, false) }},
	{key: "tls", flag: "tls", value: func(c *Config) value { return boolean(&c.TLS) }},
	{key: "root", flag: "root", value: func(c *Config) value { return path(&c.Root) }},
	{key: "token_file", flag: "token-file", value: func(c *Config) value { return path(&c.TokenFile) }},
	{key: "gateway", flag: "gateway", value: func(c *Config) value { return path(&c.Gateway) }},
	{key: "history", flag: "history", value: func(c *Config) value { return integer(&c.HistoryTurns) }},
	{key: "tool_timeout", flag: "tool-timeout", value: func(c *Config) value { return duration(&c.ToolTimeout) }},
	{key: "confirm_timeout", flag: "confirm-timeout", value: func(c *Config) value { return duration(&c.ConfirmTimeout) }},
	{key: "max_iterations", flag: "max-iterations", unset: "0 (no bound)", value: func(c *Config) value { return integer(&c.MaxIterations) }},
	{key: "context_budget", flag: "context-budget", value: func(c *Config) value { return integer(&c.ContextBudget) }},
	{key: "log_level", flag: "log-level", value: func(c *Config) value { return level(&c.LogLevel) }},
	{key: "log_file", flag: "log-file", env: "MNEMO_LOG_FILE", unset: "(none: stderr)", value: func(c *Config) value { return path(&c.LogFile) }},
	{key: "log_max_size", flag: "log-max-size", value: func(c *Config) value { return integer(&c.LogMaxSize) }},
	{key: "log_backups", flag: "log-backups", unset: "0 (none kept)", value: func(c *Config) value { return integer(&c.LogBackups) }},
	{key: "log_compress", flag: "log-compress", value: func(c *Config) value { return boolean(&c.LogCompress) }},
	{key: "auth_token", env: "APP_AUTH_TOKEN", secret: true, value: func(c *Config) value { return secret(&c.AuthToken) }},

	{key: "model.provider", env: "MNEMO_PROVIDER", unset: "(auto: by the keys set)", value: func(c *Config) value { return text(&c.Model.Provider, true) }},
	{key: "model.name", env: "MNEMO_MODEL", unset: "(the provider's default)", value: func(c *Config) value { return text(&c.Model.Name, false) }},
	{key: "model.timeout", env: "MNEMO_MODEL_TIMEOUT", value: func(c *Config) value { return duration(&c.Model.Timeout) }},
	{key: "model.first_byte_timeout", env: "MNEMO_MODEL_FIRST_BYTE_TIMEOUT", value: func(c *Config) value { return duration(&c.Model.FirstByteTimeout) }},
	{key: "model.idle_timeout", env: "MNEMO_MODEL_IDLE_TIMEOUT", value: func(c *Config) value { return duration(&c.Model.IdleTimeout) }},
	{key: "model.xai_api_key", env: "XAI_API_KEY", secret: true, value: func(c *Config) value { return secret(&c.Model.XAIKey) }},
	{key: "model.xai_base_url", env: "XAI_BASE_URL", unset: "(default: " + llm.DefaultXAIBaseURL + ")", value: func(c *Config) value { return baseURL(&c.Model.XAIBaseURL) }},
	{key: "model.xai_api", env: "MNEMO_XAI_API", value: func(c *Config) value { return text(&c.Model.XAIAPI, true) }},
	{key: "model.xai_server_tools", env: "MNEMO_XAI_SERVER_TOOLS", unset: "(none)", value: func(c *Config) value { return list(&c.Model.XAIServerTools) }},
	{key: "model.anthropic_api_key", env: "ANTHROPIC_API_KEY", secret: true, value: func(c *Config) value { return secret(&c.Model.AnthropicKey) }},
	{key: "model.anthropic_base_url", env: "ANTHROPIC_BASE_URL", unset: "(default: " + llm.DefaultAnthropicBaseURL + ")", value: func(c *Config) value { return baseURL(&c.Model.AnthropicBaseURL) }},
	{key: "model.openai_api_key", env: "OPENAI_API_KEY", secret: true, value: func(c *Config) value { return secret(&c.Model.OpenAIKey) }},
	{key: "model.openai_base_url", env: "OPENAI_BASE_URL", unset: "(default: " + llm.DefaultOpenAIBaseURL + ")", value: func(c *Config) value { return baseURL(&c.Model.OpenAIBaseURL) }},

	{key: "recall.embedder", env: "MNEMO_EMBEDDER", value: func(c *Config) value { return text(&c.Recall.Embedder, true) }},
	{key: "recall.vectors", env: "MNEMO_VECTORS", flag: "vectors", unset: "(none)", value: func(c *Config) value { return path(&c.Recall.Vectors) }},
	{key: "recall.embed_model", env: "MNEMO_EMBED_MODEL", unset: "(none)", value: func(c *Config) value { return text(&c.Recall.EmbedModel, false) }},
	{key: "recall.embed_dim", env: "MNEMO_EMBED_DIM", unset: "0 (unset)", value: func(c *Config) value { return integer(&c.Recall.EmbedDim) }},
	{key: "recall.embed_base_url", env: "MNEMO_EMBED_BASE_URL", unset: "(none)", value: func(c *Config) value { return baseURL(&c.Recall.EmbedBaseURL) }},
	{key: "recall.embed_api_key", env: "MNEMO_EMBED_API_KEY", secret: true, value: func(c *Config) value { return secret(&c.Recall.EmbedKey) }},
	{key: "recall.qdrant_addr", env: "MNEMO_QDRANT_ADDR", unset: "(none: the embedded index)", value: func(c *Config) value { return text(&c.Recall.QdrantAddr, false) }},
	{key: "recall.qdrant_api_key", env: "MNEMO_QDRANT_API_KEY", secret: true, value: func(c *Config) value { return secret(&c.Recall.QdrantKey) }},
	{key: "recall.qdrant_tls", env: "MNEMO_QDRANT_TLS", value: func(c *Config) value { return boolean(&c.Recall.QdrantTLS) }},

	{key: "voice.provider", env: "MNEMO_VOICE_PROVIDER", unset: "(auto: xai when XAI_API_KEY is set, else none)", value: func(c *Config) value { return text(&c.Voice.Provider, true) }},
	{key: "voice.model", env: "MNEMO_VOICE_MODEL", unset: "(the provider's default)", value: func(c *Config) value { return text(&c.Voice.Model, false) }},
	{key: "voice.voice", env: "MNEMO_VOICE_VOICE", unset: "(the provider's default)", value: func(c *Config) value { return text(&c.Voice.Voice, false) }},
	{key: "voice.base_url", env: "MNEMO_VOICE_BASE_URL", unset: "(the provider's default)", value: func(c *Config) value { return baseURL(&c.Voice.BaseURL) }},
	{key: "voice.vad", env: "MNEMO_VOICE_VAD", value: func(c *Config) value { return text(&c.Voice.VAD, true) }},
	{key: "voice.vad_threshold", env: "MNEMO_VOICE_VAD_THRESHOLD", value: func(c *Config) value { return number(&c.Voice.VADThreshold) }},
	{key: "voice.vad_silence", env: "MNEMO_VOICE_VAD_SILENCE", value: func(c *Config) value { return duration(&c.Voice.VADSilence) }},
	{key: "voice.vad_prefix_padding", env: "MNEMO_VOICE_VAD_PREFIX_PADDING", value: func(c *Config) value { return duration(&c.Voice.VADPrefixPadding) }},
	{key: "voice.transcription_model", env: "MNEMO_VOICE_TRANSCRIPTION_MODEL", unset: "(the provider's default)", value: func(c *Config) value { return text(&c.Voice.TranscriptionModel, false) }},

	{key: "curator.enabled", env: "MNEMO_CURATOR", value: func(c *Config) value { return boolean(&c.Curator.Enabled) }},
	{key: "curator.model", env: "MNEMO_CURATOR_MODEL", unset: "(the chat model)", value: func(c *Config) value { return text(&c.Curator.Model, false) }},
	{key: "curator.flush", env: "MNEMO_CURATOR_FLUSH", value: func(c *Config) value { return boolean(&c.Curator.Flush) }},

	{key: "jobs.enabled", env: "MNEMO_JOBS", value: func(c *Config) value { return boolean(&c.Jobs.Enabled) }},

	{key: "rate.owner", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.Owner) }},
	{key: "rate.collaborator", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.Collaborator) }},
	{key: "rate.system_agent", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.SystemAgent) }},
	{key: "rate.background_agent", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.BackgroundAgent) }},
	{key: "rate.external_agent", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.ExternalAgent) }},
	{key: "rate.service", unset: "0 (no limit)", value: func(c *Config) value { return integer(&c.RateLimit.Service) }},
}

// tables are the file's tables.
var tables = map[string]bool{"model": true, "recall": true, "voice": true, "curator": true, "jobs": true, "rate": true}

func fieldByKey(key string) (field, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

func fieldByFlag(name string) (field, bool) {
	for _, f := range fields {
		if f.flag != "" && f.flag == name {
			return f, true
		}
	}
	return field{}, false
}

// portAddr is MNEMO_HEARTH_PORT as a listen address: the port on
// loopback, as clients look for it.
func portAddr(p string) (string, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", errors.New("not a port number")
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n)), nil
}

// typed is a value of type T with its parsers.
type typed[T any] struct {
	s        *Setting[T]
	fromText func(string) (T, error)
	fromTOML func(v any, src Source) (T, error) // nil: not in the file
	format   func(T) string
	isEmpty  func(T) bool
}

func (t typed[T]) parse(raw string, src Source) error {
	v, err := t.fromText(raw)
	if err != nil {
		return err
	}
	t.s.Value, t.s.Source = v, src
	return nil
}

func (t typed[T]) decode(raw any, src Source) error {
	if t.fromTOML == nil {
		return errors.New("not accepted in the config file")
	}
	v, err := t.fromTOML(raw, src)
	if err != nil {
		return err
	}
	t.s.Value, t.s.Source = v, src
	return nil
}

func (t typed[T]) show() string   { return t.format(t.s.Value) }
func (t typed[T]) source() Source { return t.s.Source }
func (t typed[T]) empty() bool    { return t.isEmpty(t.s.Value) }

// path is a file path; a relative path in the config file is relative to
// the file's directory.
func path(s *Setting[string]) value {
	t := text(s, false).(typed[string])
	fromTOML := t.fromTOML
	t.fromTOML = func(v any, src Source) (string, error) {
		p, err := fromTOML(v, src)
		if err == nil && !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(src.Path), p)
		}
		return p, err
	}
	return t
}

// baseURL is a URL, shown without its password.
func baseURL(s *Setting[string]) value {
	t := text(s, false).(typed[string])
	t.format = func(v string) string {
		if v == "" {
			return ""
		}
		return redactURL(v)
	}
	return t
}

// text is a string setting, lower-cased when fold is set.
func text(s *Setting[string], fold bool) value {
	norm := func(v string) string {
		v = strings.TrimSpace(v)
		if fold {
			v = strings.ToLower(v)
		}
		return v
	}
	return typed[string]{
		s:        s,
		fromText: func(raw string) (string, error) { return norm(raw), nil },
		fromTOML: func(v any, _ Source) (string, error) {
			str, ok := v.(string)
			if !ok {
				return "", errors.New("want a string")
			}
			return norm(str), nil
		},
		format:  func(v string) string { return v },
		isEmpty: func(v string) bool { return v == "" },
	}
}

func integer(s *Setting[int]) value {
	return typed[int]{
		s: s,
		fromText: func(raw string) (int, error) {
			n, err := strconv.Atoi(raw)
			if err != nil {
				return 0, errors.New("want a whole number")
			}
			return n, nil
		},
		fromTOML: func(v any, _ Source) (int, error) {
			n, ok := v.(int64)
			if !ok || int64(int(n)) != n {
				return 0, errors.New("want a whole number")
			}
			return int(n), nil
		},
		format:  strconv.Itoa,
		isEmpty: func(n int) bool { return n == 0 },
	}
}

// number is a decimal number: a TOML float or integer in the file.
func number(s *Setting[float64]) value {
	parse := func(raw string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, errors.New("want a number such as 0.5")
		}
		return f, nil
	}
	return typed[float64]{
		s:        s,
		fromText: parse,
		fromTOML: func(v any, _ Source) (float64, error) {
			switch n := v.(type) {
			case float64:
				if math.IsNaN(n) || math.IsInf(n, 0) {
					break
				}
				return n, nil
			case int64:
				return float64(n), nil
			}
			return 0, errors.New("want a number such as 0.5")
		},
		format:  func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
		isEmpty: func(float64) bool { return false },
	}
}

func boolean(s *Setting[bool]) value {
	return typed[bool]{
		s: s,
		fromText: func(raw string) (bool, error) {
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return false, errors.New("want true or false (or 1 or 0)")
			}
			return b, nil
		},
		fromTOML: func(v any, _ Source) (bool, error) {
			b, ok := v.(bool)
			if !ok {
				return false, errors.New("want true or false")
			}
			return b, nil
		},
		format:  strconv.FormatBool,
		isEmpty: func(bool) bool { return false },
	}
}

const durationHint = "want a Go duration such as 90s or 10m"

func duration(s *Setting[time.Duration]) value {
	parse := func(raw string) (time.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return 0, errors.New(durationHint)
		}
		return d, nil
	}
	return typed[time.Duration]{
		s:        s,
		fromText: parse,
		fromTOML: func(v any, _ Source) (time.Duration, error) {
			str, ok := v.(string)
			if !ok {
				return 0, fmt.Errorf("%s, as a string", durationHint)
			}
			return parse(str)
		},
		format:  time.Duration.String,
		isEmpty: func(d time.Duration) bool { return d == 0 },
	}
}

// list is a list of lower-case names without repeats: comma-separated in
// the environment, an array of strings in the file.
func list(s *Setting[[]string]) value {
	norm := func(names []string) []string {
		var out []string
		for _, n := range names {
			n = strings.ToLower(strings.TrimSpace(n))
			if n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	return typed[[]string]{
		s:        s,
		fromText: func(raw string) ([]string, error) { return norm(strings.Split(raw, ",")), nil },
		fromTOML: func(v any, _ Source) ([]string, error) {
			arr, ok := v.([]any)
			if !ok {
				return nil, errors.New("want an array of strings")
			}
			names := make([]string, len(arr))
			for i, e := range arr {
				if names[i], ok = e.(string); !ok {
					return nil, errors.New("want an array of strings")
				}
			}
			return norm(names), nil
		},
		format:  func(v []string) string { return strings.Join(v, ",") },
		isEmpty: func(v []string) bool { return len(v) == 0 },
	}
}

func level(s *Setting[slog.Level]) value {
	parse := func(raw string) (slog.Level, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(strings.TrimSpace(raw))); err != nil {
			return 0, errors.New("want debug, info, warn or error")
		}
		return l, nil
	}
	return typed[slog.Level]{
		s:        s,
		fromText: parse,
		fromTOML: func(v any, _ Source) (slog.Level, error) {
			str, ok := v.(string)
			if !ok {
				return 0, errors.New("want debug, info, warn or error, as a string")
			}
			return parse(str)
		},
		format:  func(l slog.Level) string { return strings.ToLower(l.String()) },
		isEmpty: func(slog.Level) bool { return false },
	}
}

// secret is read from the environment only: it has no fromTOML.
func secret(s *Setting[Secret]) value {
	return typed[Secret]{
		s:        s,
		fromText: func(raw string) (Secret, error) { return NewSecret(strings.TrimSpace(raw)), nil },
		format:   Secret.String,
		isEmpty:  func(v Secret) bool { return !v.IsSet() },
	}
}
