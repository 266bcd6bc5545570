package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// MinRemoteToken is the shortest APP_AUTH_TOKEN accepted for a network
// bind.
const MinRemoteToken = 16

// validate reports every invalid value of c.
func (l *loader) validate(c *Config) []error {
	var errs []error
	bad := func(src Source, v any, format string, args ...any) {
		errs = append(errs, problem(src, display(v), fmt.Sprintf(format, args...)))
	}

	// Defaults that could not be found, where they are needed.
	need := func(s Setting[string], needed bool, hint string) {
		if err := l.missing[s.Source.Name]; err != nil && needed && s.Source.Origin == FromDefault {
			bad(s.Source, s.Value, "no default (%v): %s", err, hint)
		}
	}
	need(c.Root, true, "pass -root or set root in the config file")
	need(c.Gateway, true, "pass -gateway or set gateway in the config file")
	need(c.TokenFile, !c.AuthToken.Value.IsSet(), "set APP_AUTH_TOKEN, pass -token-file or set token_file in the config file")
	need(c.Recall.Vectors, c.Recall.Embedder.Value == EmbedderWordvec, "pass -vectors, set MNEMO_VECTORS or recall.vectors in the config file")

	if host, _, err := net.SplitHostPort(c.Addr.Value); err != nil {
		bad(c.Addr.Source, c.Addr.Value, "want host:port")
	} else if !isLoopback(host) {
		token := c.AuthToken.Value.Reveal()
		switch {
		case !c.ListenRemote.Value:
			bad(c.Addr.Source, c.Addr.Value, "refusing to listen on a non-loopback address: pass -listen-remote (or set listen_remote = true in the config file) to serve the network")
		case token == "":
			bad(c.Addr.Source, c.Addr.Value, "refusing to listen on the network without a token: set APP_AUTH_TOKEN (at least %d characters)", MinRemoteToken)
		case len(token) < MinRemoteToken:
			bad(c.Addr.Source, c.Addr.Value, "refusing to listen on the network with a short token: APP_AUTH_TOKEN must have at least %d characters", MinRemoteToken)
		}
	}
	if a := c.HTTPAddr.Value; a != "" {
		if host, _, err := net.SplitHostPort(a); err != nil {
			bad(c.HTTPAddr.Source, a, "want host:port")
		} else if !isLoopback(host) {
			token := c.AuthToken.Value.Reveal()
			switch {
			case !c.ListenRemote.Value:
				bad(c.HTTPAddr.Source, a, "refusing to serve HTTP on a non-loopback address: pass -listen-remote (or set listen_remote = true in the config file) to serve the network")
			case len(token) < MinRemoteToken:
				bad(c.HTTPAddr.Source, a, "refusing to serve HTTP on the network without a token of at least %d characters: set APP_AUTH_TOKEN", MinRemoteToken)
			}
		}
	}
	if c.HistoryTurns.Value < 1 {
		bad(c.HistoryTurns.Source, c.HistoryTurns.Value, "must be at least 1")
	}
	for _, d := range []Setting[time.Duration]{c.ToolTimeout, c.ConfirmTimeout, c.Model.Timeout, c.Model.FirstByteTimeout, c.Model.IdleTimeout} {
		if d.Value <= 0 {
			bad(d.Source, d.Value, "must be positive")
		}
	}
	for _, d := range []Setting[time.Duration]{c.Model.FirstByteTimeout, c.Model.IdleTimeout} {
		if total := c.Model.Timeout; d.Value > total.Value && total.Value > 0 {
			bad(d.Source, d.Value, "must not exceed model.timeout %v (%s)", total.Value, total.Source)
		}
	}
	if c.LogMaxSize.Value < 1 {
		bad(c.LogMaxSize.Source, c.LogMaxSize.Value, "must be at least 1 (MiB)")
	}
	if c.LogBackups.Value < 0 {
		bad(c.LogBackups.Source, c.LogBackups.Value, "must not be negative")
	}
	r := c.RateLimit
	for _, n := range []Setting[int]{r.Owner, r.Collaborator, r.SystemAgent, r.BackgroundAgent, r.ExternalAgent, r.Service} {
		if n.Value < 0 {
			bad(n.Source, n.Value, "must not be negative (requests a minute; 0 is no limit)")
		}
	}
	if c.MaxIterations.Value < 0 {
		bad(c.MaxIterations.Source, c.MaxIterations.Value, "must not be negative (0: no bound)")
	}
	if n := c.ContextBudget.Value; n < hearth.MinContextTokens || n > hearth.MaxContextTokens {
		bad(c.ContextBudget.Source, n, "must be between %d and %d", hearth.MinContextTokens, hearth.MaxContextTokens)
	}

	errs = append(errs, validateModel(c)...)
	errs = append(errs, validateRecall(c)...)
	errs = append(errs, validateVoice(c)...)
	return errs
}

// Voice defaults: seed 004's VAD (threshold 0.2, 500 ms of silence ends
// a turn), which keeps a silent session from being answered, and a
// prefix padding.
const (
	DefaultVADThreshold     = 0.2
	DefaultVADSilence       = 500 * time.Millisecond
	DefaultVADPrefixPadding = 300 * time.Millisecond
)

// Bounds of the VAD settings both providers accept.
const (
	maxVADSilence = 10 * time.Second
	maxVADPadding = 10 * time.Second
)

func validateVoice(c *Config) []error {
	var errs []error
	bad := func(src Source, v any, format string, args ...any) {
		errs = append(errs, problem(src, display(v), fmt.Sprintf(format, args...)))
	}
	v := c.Voice
	switch p := v.Provider.Value; p {
	case "", VoiceNone:
	case VoiceXAI:
		if !c.Model.XAIKey.Value.IsSet() {
			bad(v.Provider.Source, p, "needs XAI_API_KEY in the environment")
		}
	case VoiceOpenAI:
		if !c.Model.OpenAIKey.Value.IsSet() {
			bad(v.Provider.Source, p, "needs OPENAI_API_KEY in the environment")
		}
	default:
		bad(v.Provider.Source, p, "use %s, %s or %s (left out: %s when XAI_API_KEY is set)", VoiceXAI, VoiceOpenAI, VoiceNone, VoiceXAI)
	}
	if u := v.BaseURL; u.Value != "" {
		if err := checkURL(u.Value); err != nil {
			bad(u.Source, redactURL(u.Value), "%v", err)
		}
	}
	switch v.VAD.Value {
	case VADServer, VADManual:
	default:
		bad(v.VAD.Source, v.VAD.Value, "use %s or %s", VADServer, VADManual)
	}
	lo, hi := 0.0, 1.0
	if p, _ := c.VoiceProvider(); p == VoiceXAI {
		lo, hi = 0.1, 0.9 // xAI's range
	}
	if t := v.VADThreshold.Value; t < lo || t > hi || (t == 0 && lo == 0) {
		if lo == 0 {
			bad(v.VADThreshold.Source, t, "must be above 0 and at most 1")
		} else {
			bad(v.VADThreshold.Source, t, "must be between %g and %g for %s", lo, hi, VoiceXAI)
		}
	}
	if d := v.VADSilence.Value; d <= 0 || d > maxVADSilence {
		bad(v.VADSilence.Source, d, "must be positive and at most %v", maxVADSilence)
	}
	if d := v.VADPrefixPadding.Value; d < 0 || d > maxVADPadding {
		bad(v.VADPrefixPadding.Source, d, "must be between 0s and %v", maxVADPadding)
	}
	return errs
}

// validateModel checks each model setting, then, when they are all
// right, that together they configure a provider (or none).
func validateModel(c *Config) []error {
	var errs []error
	bad := func(src Source, v any, format string, args ...any) {
		errs = append(errs, problem(src, display(v), fmt.Sprintf(format, args...)))
	}
	m := c.Model
	if err := checkProvider(m.Provider.Value); err != nil {
		bad(m.Provider.Source, m.Provider.Value, "%v", err)
	}
	for _, u := range []Setting[string]{m.XAIBaseURL, m.AnthropicBaseURL, m.OpenAIBaseURL} {
		if err := checkURL(u.Value); u.Value != "" && err != nil {
			bad(u.Source, redactURL(u.Value), "%v", err)
		}
	}
	switch m.XAIAPI.Value {
	case llm.APIResponses, llm.APIChat:
	default:
		bad(m.XAIAPI.Source, m.XAIAPI.Value, "must be %q or %q", llm.APIResponses, llm.APIChat)
	}
	for _, t := range m.XAIServerTools.Value {
		switch t {
		case "web_search", "x_search", "code_interpreter":
		default:
			bad(m.XAIServerTools.Source, strings.Join(m.XAIServerTools.Value, ","), "unknown tool %q: use web_search, x_search or code_interpreter", t)
		}
	}
	if len(m.XAIServerTools.Value) > 0 && m.XAIAPI.Value == llm.APIChat {
		bad(m.XAIServerTools.Source, strings.Join(m.XAIServerTools.Value, ","), "server tools need the Responses API, but model.xai_api is %q (%s)", m.XAIAPI.Value, m.XAIAPI.Source)
	}
	if len(errs) > 0 || m.Timeout.Value <= 0 || m.FirstByteTimeout.Value <= 0 || m.IdleTimeout.Value <= 0 {
		return errs
	}
	if _, err := c.ModelSettings(Preferences{}).Resolve(); err != nil && !errors.Is(err, llm.ErrNoProvider) {
		if m.Provider.Value != "" {
			return []error{problem(m.Provider.Source, m.Provider.Value, err.Error())}
		}
		return []error{fmt.Errorf("model provider: %w", err)}
	}
	return nil
}

// checkProvider accepts the providers llm supports, and "" (by the keys
// set).
func checkProvider(p string) error {
	switch p {
	case "", llm.ProviderXAI, llm.ProviderAnthropic, llm.ProviderOpenAI:
		return nil
	}
	return fmt.Errorf("not supported: use %q, %q or %q", llm.ProviderXAI, llm.ProviderAnthropic, llm.ProviderOpenAI)
}

func validateRecall(c *Config) []error {
	var errs []error
	bad := func(src Source, v any, format string, args ...any) {
		errs = append(errs, problem(src, display(v), fmt.Sprintf(format, args...)))
	}
	r := c.Recall
	kind := r.Embedder.Value
	switch kind {
	case EmbedderAuto, EmbedderWordvec, EmbedderNone:
	case EmbedderOpenAI, EmbedderOllama:
		if r.EmbedDim.Value <= 0 {
			bad(r.Embedder.Source, kind, "needs recall.embed_dim (MNEMO_EMBED_DIM): the model's vector size, e.g. 1024 for Qwen3-Embedding-0.6B")
		}
		if r.EmbedModel.Value == "" {
			bad(r.Embedder.Source, kind, "needs recall.embed_model (MNEMO_EMBED_MODEL)")
		}
	default:
		bad(r.Embedder.Source, kind, "use %s, %s, %s, %s or %s", EmbedderAuto, EmbedderWordvec, EmbedderOpenAI, EmbedderOllama, EmbedderNone)
	}
	if r.EmbedDim.Value < 0 {
		bad(r.EmbedDim.Source, r.EmbedDim.Value, "must not be negative")
	}
	if u := r.EmbedBaseURL; u.Value != "" {
		if err := checkURL(u.Value); err != nil {
			bad(u.Source, redactURL(u.Value), "%v", err)
		}
	}
	return errs
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkURL accepts absolute http and https URLs, as llm does.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("the scheme must be http or https")
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	return nil
}

// redactURL hides a password in a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// display shows a value in an error: a string quoted when it is empty or
// holds spaces.
func display(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" || strings.ContainsAny(v, " \t\n\"") {
			return strconv.Quote(v)
		}
		return v
	case Secret:
		if v.IsSet() {
			return "(set)"
		}
		return "(unset)"
	}
	return fmt.Sprint(v)
}
