// Package llm talks to model providers: the request and response types
// hearth uses for one model call, the provider configuration (Settings,
// resolved into a Config; ConfigFromEnv reads them from the environment),
// and adapters for the providers' wire protocols.
//
// An adapter makes exactly one attempt per call. Whether and when to retry
// is the caller's decision, informed by [Error.Retryable] and
// [Error.RetryAfter]; [Retrying] wraps an adapter with the usual policy.
package llm

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// Roles of a [Message].
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Provider names used in [Config.Provider].
const (
	ProviderXAI       = "xai"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// xAI endpoints, for [Config.API].
const (
	APIResponses = "responses" // POST /v1/responses with store and previous_response_id (the default for xAI)
	APIChat      = "chat"      // POST /v1/chat/completions
)

// Defaults used when the environment does not name a model, base URL or
// timeout.
const (
	DefaultXAIModel      = "grok-4.3"
	DefaultOpenAIModel   = "gpt-4.1-mini"
	DefaultXAIBaseURL    = "https://api.x.ai/v1"
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultTimeout       = 5 * time.Minute
)

// Message is one message of a conversation sent to a model.
type Message struct {
	Role    string // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content string
	// ToolCalls are the calls an assistant message made; Content is the
	// text the model wrote beside them.
	ToolCalls []ToolCall
	// ToolCallID names the call a RoleTool message answers; IsError marks
	// its Content as the tool's error.
	ToolCallID string
	IsError    bool
}

// ToolCall is a function call the model asked for.
type ToolCall struct {
	ID   string // the provider's call id, echoed in the result
	Name string // the function tool's name
	// Arguments is a JSON object: "{}" when the model sent none, and
	// {"_raw": "<text>"} when what it sent is not a JSON object, so the
	// agent can answer with a tool error that quotes it.
	Arguments json.RawMessage
}

// Tool is a function tool offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema whose root is an object
}

// Request is one model call.
type Request struct {
	Model    string // "" means the provider's configured model
	Messages []Message
	Tools    []Tool
	// Continue lets a provider that keeps conversation state (the xAI
	// Responses API with store) send only Messages[Continue.From:] after
	// its stored response Continue.ResponseID. Other adapters ignore it and
	// send every message. When the stored response is gone, the adapter
	// falls back to sending every message.
	Continue *Continuation
	// OnRetry, when set, is told of each failed attempt that [Retrying]
	// is about to try again, before it waits. Adapters ignore it.
	OnRetry func(Retry)
	// Output, when set, asks for structured output: the reply's Text is
	// one JSON value the schema describes. Each adapter maps it to its
	// provider's documented mechanism (see [OutputSchema]).
	Output *OutputSchema
}

// OutputSchema asks a model for a reply that is JSON of a schema. OpenAI
// chat sends it as response_format {type: json_schema, json_schema: {name,
// schema, strict}}, the xAI Responses API as text.format {type:
// json_schema, name, schema, strict}, Anthropic as output_config.format
// {type: json_schema, schema} (its structured outputs, always strict). The
// caller still validates what comes back: a provider may ignore it.
type OutputSchema struct {
	Name   string          // [a-zA-Z0-9_-], at most 64 characters
	Schema json.RawMessage // a JSON Schema object
	Strict bool
}

// schemaObject returns o.Schema's top-level members, each kept as raw
// JSON so that the schema goes out exactly as written.
func (o *OutputSchema) schemaObject() (map[string]any, error) {
	if o.Name == "" || len(o.Name) > 64 || strings.IndexFunc(o.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return nil, fmt.Errorf("output schema name %q: want 1 to 64 of a-z, A-Z, 0-9, _ and -", o.Name)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(o.Schema, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("output schema %s: the schema must be a JSON object", o.Name)
	}
	m := make(map[string]any, len(fields))
	for k, v := range fields {
		m[k] = v
	}
	return m, nil
}

// Retry is a failed attempt of a model call that will be tried again.
type Retry struct {
	Attempt     int // the attempt that failed, from 1
	MaxAttempts int
	Category    Category
	Timeout     TimeoutKind   // which timeout ended it, for CategoryTimeout
	Wait        time.Duration // before the next attempt
	RetryAfter  time.Duration // what the provider asked for, before the cap; 0: nothing
}

// Continuation points at a stored provider response; see Request.Continue.
type Continuation struct {
	ResponseID string
	From       int
}

// Usage is the token accounting a provider reported for one call.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Response is the accumulated result of one model call.
type Response struct {
	Text         string
	ToolCalls    []ToolCall // calls to run before the model can go on
	Model        string     // as reported by the provider, else as requested
	FinishReason string     // "stop", "length", "tool_calls", ... as reported
	Usage        *Usage     // nil if the provider did not report usage
	// ResponseID is the stored response to continue from next time, for
	// providers that keep state (see Request.Continue); "" otherwise.
	ResponseID string
}

// Config is which provider to talk to. Its String, GoString and LogValue
// never include the API key.
type Config struct {
	Provider string // ProviderXAI, ProviderOpenAI, ProviderAnthropic or "" (none configured)
	Model    string
	BaseURL  string
	APIKey   string        // never logged
	Timeout  time.Duration // per model call; 0 means DefaultTimeout
	// FirstByteTimeout ends a call when no byte of the reply (headers
	// and first stream event) arrives within it; IdleTimeout, when the
	// reply stream then goes silent that long. Both are retryable, unlike
	// Timeout; 0 means DefaultFirstByteTimeout and DefaultIdleTimeout, and
	// one at or past Timeout is not armed.
	FirstByteTimeout, IdleTimeout time.Duration
	// API selects the xAI endpoint: APIResponses or APIChat. ConfigFromEnv
	// sets it for xAI only; "" there means APIResponses.
	API string
	// ServerTools are provider-side tools to prepend to the tool list
	// (xAI Responses: "web_search", "x_search", "code_interpreter").
	ServerTools []string
}

// String describes c without its API key, for example
// "xai model=grok-4.3 base=https://api.x.ai/v1".
func (c Config) String() string {
	if c.Provider == "" {
		return "none"
	}
	return fmt.Sprintf("%s model=%s base=%s", c.Provider, c.Model, redactURL(c.BaseURL))
}

// GoString keeps %#v from printing the API key.
func (c Config) GoString() string { return "llm.Config{" + c.String() + "}" }

// LogValue keeps structured logging from printing the API key.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// redactURL hides a password embedded in a base URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// KeyVariable names the environment variable holding provider's API key.
func KeyVariable(provider string) string {
	switch provider {
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	case ProviderOpenAI:
		return "OPENAI_API_KEY"
	}
	return "XAI_API_KEY"
}

// BaseURLVariable names the environment variable (and config key) of
// provider's base URL, as a message to the owner names it.
func BaseURLVariable(provider string) string {
	switch provider {
	case ProviderAnthropic:
		return "ANTHROPIC_BASE_URL (model.anthropic_base_url)"
	case ProviderOpenAI:
		return "OPENAI_BASE_URL (model.openai_base_url)"
	}
	return "XAI_BASE_URL (model.xai_base_url)"
}

// ErrNoProvider reports that the environment configures no model provider.
var ErrNoProvider = errors.New("no model provider is configured: set XAI_API_KEY or ANTHROPIC_API_KEY, or MNEMO_PROVIDER=openai with OPENAI_BASE_URL (and OPENAI_API_KEY if the server needs one)")

// Settings are the raw model provider settings, wherever they come from:
// the environment (ConfigFromEnv), or hearth/config, which gathers them
// from its config file, the environment and the owner's preferences.
// Resolve checks them and picks the provider. Its String, GoString and
// LogValue never include the API keys.
type Settings struct {
	// Provider is "xai", "anthropic" or "openai" (any case); "" chooses by
	// the keys set (see ConfigFromEnv).
	Provider string
	Model    string        // "" means the provider's default
	Timeout  time.Duration // per model call; 0 means DefaultTimeout
	// FirstByteTimeout and IdleTimeout bound the wait for a reply and
	// the silences inside it (see Config); 0 means the defaults.
	FirstByteTimeout, IdleTimeout time.Duration

	XAIKey, XAIBaseURL string
	// XAIAPI is the xAI endpoint, APIResponses (also for "") or APIChat;
	// XAIServerTools are xAI server-side tools (Responses only). Both are
	// read only when the provider is xAI.
	XAIAPI         string
	XAIServerTools []string

	AnthropicKey, AnthropicBaseURL string
	OpenAIKey, OpenAIBaseURL       string
}

// String describes s without its API keys, saying only which are set.
func (s Settings) String() string {
	set := func(k string) string {
		if k == "" {
			return "unset"
		}
		return "set"
	}
	return fmt.Sprintf("provider=%q model=%q timeout=%v first_byte_timeout=%v idle_timeout=%v xai_key=%s xai_base=%s xai_api=%q xai_server_tools=%q anthropic_key=%s anthropic_base=%s openai_key=%s openai_base=%s",
		s.Provider, s.Model, s.Timeout, s.FirstByteTimeout, s.IdleTimeout, set(s.XAIKey), redactURL(s.XAIBaseURL), s.XAIAPI, s.XAIServerTools,
		set(s.AnthropicKey), redactURL(s.AnthropicBaseURL), set(s.OpenAIKey), redactURL(s.OpenAIBaseURL))
}

// GoString keeps %#v from printing the API keys.
func (s Settings) GoString() string { return "llm.Settings{" + s.String() + "}" }

// LogValue keeps structured logging from printing the API keys.
func (s Settings) LogValue() slog.Value { return slog.StringValue(s.String()) }

// ConfigFromEnv reads the provider configuration through getenv (os.Getenv
// in production):
//
//   - MNEMO_PROVIDER: "xai", "anthropic" or "openai"; when unset, xAI is
//     chosen if XAI_API_KEY is set, else Anthropic if ANTHROPIC_API_KEY is
//     set, else OpenAI-compatible if OPENAI_BASE_URL or OPENAI_API_KEY is
//     set.
//   - MNEMO_MODEL: the model; defaults to DefaultXAIModel,
//     DefaultAnthropicModel or DefaultOpenAIModel (Ollama and llama.cpp users
//     set it).
//   - MNEMO_MODEL_TIMEOUT: the per-call timeout as a Go duration ("90s",
//     "10m"); unset means DefaultTimeout.
//   - MNEMO_MODEL_FIRST_BYTE_TIMEOUT, MNEMO_MODEL_IDLE_TIMEOUT: how long to
//     wait for the first byte of a reply and through a silence inside it
//     (Config.FirstByteTimeout, Config.IdleTimeout); unset means
//     DefaultFirstByteTimeout and DefaultIdleTimeout.
//   - XAI_API_KEY, XAI_BASE_URL (default DefaultXAIBaseURL).
//   - MNEMO_XAI_API: the xAI endpoint, "responses" (default) or "chat".
//   - MNEMO_XAI_SERVER_TOOLS: a comma-separated list of xAI server-side
//     tools ("web_search", "x_search", "code_interpreter"); Responses only.
//   - ANTHROPIC_API_KEY (required for Anthropic), ANTHROPIC_BASE_URL
//     (default https://api.anthropic.com).
//   - OPENAI_API_KEY, OPENAI_BASE_URL (default DefaultOpenAIBaseURL). A key
//     is optional when OPENAI_BASE_URL names another server (Ollama,
//     llama.cpp, vLLM).
//
// The MNEMO_XAI_* variables are read only when the provider is xAI.
//
// With nothing configured it returns Config{} and ErrNoProvider. A
// contradictory environment is an error naming the variable to fix. It is
// the environment read into Settings, then Settings.Resolve.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	s, timeoutErr := settingsFromEnv(getenv)
	c, err := s.Resolve()
	if err != nil {
		return Config{}, err
	}
	if timeoutErr != nil {
		return Config{}, timeoutErr
	}
	return c, nil
}

// settingsFromEnv reads the variables ConfigFromEnv documents into
// Settings. A timeout variable that is not a positive duration leaves its
// field zero and is returned as the error, for ConfigFromEnv to report
// only when Resolve finds nothing more fundamental wrong, as it always has.
func settingsFromEnv(getenv func(string) string) (Settings, error) {
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	s := Settings{
		Provider:         env("MNEMO_PROVIDER"),
		Model:            env("MNEMO_MODEL"),
		XAIKey:           env("XAI_API_KEY"),
		XAIBaseURL:       env("XAI_BASE_URL"),
		XAIAPI:           env("MNEMO_XAI_API"),
		AnthropicKey:     env("ANTHROPIC_API_KEY"),
		AnthropicBaseURL: env("ANTHROPIC_BASE_URL"),
		OpenAIKey:        env("OPENAI_API_KEY"),
		OpenAIBaseURL:    env("OPENAI_BASE_URL"),
	}
	if tools := env("MNEMO_XAI_SERVER_TOOLS"); tools != "" {
		s.XAIServerTools = strings.Split(tools, ",")
	}
	for _, t := range []struct {
		name string
		d    *time.Duration
	}{
		{"MNEMO_MODEL_TIMEOUT", &s.Timeout},
		{"MNEMO_MODEL_FIRST_BYTE_TIMEOUT", &s.FirstByteTimeout},
		{"MNEMO_MODEL_IDLE_TIMEOUT", &s.IdleTimeout},
	} {
		if raw := env(t.name); raw != "" {
			d, err := time.ParseDuration(raw)
			if err != nil || d <= 0 {
				return s, durationError(t.name, raw)
			}
			*t.d = d
		}
	}
	return s, nil
}

func timeoutError(raw string) error { return durationError("MNEMO_MODEL_TIMEOUT", raw) }

func durationError(name, raw string) error {
	return fmt.Errorf("%s=%q: want a positive Go duration such as 90s or 10m", name, raw)
}

// Resolve picks the provider and checks s, by the rules ConfigFromEnv
// documents (its errors name the environment variable to fix). With no
// provider configured it returns Config{} and ErrNoProvider.
func (s Settings) Resolve() (Config, error) {
	trim := strings.TrimSpace
	provider := strings.ToLower(trim(s.Provider))
	xaiKey, xaiBase := trim(s.XAIKey), trim(s.XAIBaseURL)
	anthropicKey, anthropicBase := trim(s.AnthropicKey), trim(s.AnthropicBaseURL)
	openaiKey, openaiBase := trim(s.OpenAIKey), trim(s.OpenAIBaseURL)

	if provider == "" {
		switch {
		case xaiKey != "":
			provider = ProviderXAI
		case anthropicKey != "":
			provider = ProviderAnthropic
		case openaiKey != "" || openaiBase != "":
			provider = ProviderOpenAI
		case xaiBase != "":
			return Config{}, errors.New("XAI_BASE_URL is set but XAI_API_KEY is not: set XAI_API_KEY to use xAI")
		case anthropicBase != "":
			return Config{}, errors.New("ANTHROPIC_BASE_URL is set but ANTHROPIC_API_KEY is not: set ANTHROPIC_API_KEY to use Anthropic")
		default:
			return Config{}, ErrNoProvider
		}
	}

	var c Config
	switch provider {
	case ProviderXAI:
		if xaiKey == "" {
			return Config{}, errors.New("MNEMO_PROVIDER=xai but XAI_API_KEY is not set")
		}
		c = Config{Provider: ProviderXAI, Model: DefaultXAIModel, BaseURL: cmp.Or(xaiBase, DefaultXAIBaseURL), APIKey: xaiKey}
		if err := checkBaseURL(c.BaseURL); err != nil {
			return Config{}, fmt.Errorf("XAI_BASE_URL: %w", err)
		}
		var err error
		if c.API, c.ServerTools, err = xaiOptions(trim(s.XAIAPI), s.XAIServerTools); err != nil {
			return Config{}, err
		}
	case ProviderAnthropic:
		if anthropicKey == "" {
			return Config{}, errors.New("MNEMO_PROVIDER=anthropic but ANTHROPIC_API_KEY is not set")
		}
		c = Config{Provider: ProviderAnthropic, Model: DefaultAnthropicModel, BaseURL: cmp.Or(anthropicBase, DefaultAnthropicBaseURL), APIKey: anthropicKey}
		if err := checkBaseURL(c.BaseURL); err != nil {
			return Config{}, fmt.Errorf("ANTHROPIC_BASE_URL: %w", err)
		}
	case ProviderOpenAI:
		if openaiKey == "" && openaiBase == "" {
			return Config{}, fmt.Errorf("MNEMO_PROVIDER=openai but neither OPENAI_API_KEY (for %s) nor OPENAI_BASE_URL (for a local server such as Ollama) is set", DefaultOpenAIBaseURL)
		}
		c = Config{Provider: ProviderOpenAI, Model: DefaultOpenAIModel, BaseURL: cmp.Or(openaiBase, DefaultOpenAIBaseURL), APIKey: openaiKey}
		if err := checkBaseURL(c.BaseURL); err != nil {
			return Config{}, fmt.Errorf("OPENAI_BASE_URL: %w", err)
		}
	default:
		return Config{}, fmt.Errorf("MNEMO_PROVIDER=%q is not supported: use %q, %q or %q", provider, ProviderXAI, ProviderAnthropic, ProviderOpenAI)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.Model = cmp.Or(trim(s.Model), c.Model)
	if s.Timeout < 0 {
		return Config{}, timeoutError(s.Timeout.String())
	}
	if s.FirstByteTimeout < 0 || s.IdleTimeout < 0 {
		return Config{}, errors.New("the first-byte and idle timeouts must not be negative")
	}
	c.Timeout, c.FirstByteTimeout, c.IdleTimeout = s.Timeout, s.FirstByteTimeout, s.IdleTimeout
	return c, nil
}

// xaiOptions checks the xAI endpoint and server tools (MNEMO_XAI_API and
// MNEMO_XAI_SERVER_TOOLS), ignoring empty names and repeats.
func xaiOptions(api string, serverTools []string) (string, []string, error) {
	switch api = strings.ToLower(api); api {
	case "":
		api = APIResponses
	case APIResponses, APIChat:
	default:
		return "", nil, fmt.Errorf("MNEMO_XAI_API=%q is not supported: use %q or %q", api, APIResponses, APIChat)
	}
	var tools []string
	for _, name := range serverTools {
		name = strings.ToLower(strings.TrimSpace(name))
		switch name {
		case "":
			continue
		case "web_search", "x_search", "code_interpreter":
		default:
			return "", nil, fmt.Errorf("MNEMO_XAI_SERVER_TOOLS: unknown tool %q: use web_search, x_search or code_interpreter", name)
		}
		if !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	if len(tools) > 0 && api != APIResponses {
		return "", nil, fmt.Errorf("MNEMO_XAI_SERVER_TOOLS needs the Responses API, but MNEMO_XAI_API=%q: unset one of them", api)
	}
	return api, tools, nil
}

// checkBaseURL accepts absolute http and https URLs.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; the input is not secret but may be
		// long, so keep only the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("not a valid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: the scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return fmt.Errorf("%s: the URL has no host", u.Redacted())
	}
	return nil
}

// Error is a failed model call. hearth shows the user a message made of
// its Category (never its text) and logs Error's text, which never
// contains the API key.
type Error struct {
	Provider string
	Status   int // HTTP status of an error reply; 0 if there was none
	// Retryable: rate limits, server errors, transport failures, and the
	// first-byte and idle timeouts; never the total timeout.
	Retryable bool
	// Attempts is how many attempts [Retrying] made before giving up with
	// this error; 0 when no Retrying was involved.
	Attempts int
	// RetryAfter is the provider's Retry-After (or retry-after-ms), 0 if
	// it sent none.
	RetryAfter time.Duration
	// ContextOverflow marks a request the provider refused because the
	// conversation exceeds the model's context window.
	ContextOverflow bool
	Err             error

	secret string // redacted from Error's text
}

// Error describes the failure, including the provider's own message when it
// sent one, with the API key redacted.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(cmp.Or(e.Provider, "model provider"))
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
		if text := http.StatusText(e.Status); text != "" {
			b.WriteString(" " + text)
		}
	}
	apiErr, isAPIErr := e.Err.(*openai.Error)
	switch {
	case isAPIErr:
		// openai.Error's own text is only the status; the details a log
		// reader needs are in its fields.
		if apiErr.Message != "" {
			b.WriteString(": " + apiErr.Message)
		}
		var details []string
		if apiErr.Type != "" {
			details = append(details, "type="+apiErr.Type)
		}
		if apiErr.Code != "" {
			details = append(details, "code="+apiErr.Code)
		}
		if len(details) > 0 {
			b.WriteString(" (" + strings.Join(details, " ") + ")")
		}
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	if e.secret == "" {
		return b.String()
	}
	return strings.ReplaceAll(b.String(), e.secret, "[redacted]")
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
