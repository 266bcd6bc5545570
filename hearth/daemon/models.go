package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// PreferencesFile, in the memory root, holds the owner's preferences:
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5",
//	 "context": {"budget_tokens": 24000, "shares": {"recent": 75, "memories": 15, "tools": 10}}}
//
// Every field is optional. provider and model override MNEMO_PROVIDER and
// MNEMO_MODEL; context overrides the -context-budget flag and the default
// shares (see hearth.ContextBudget). It is read before every turn, so an edit
// applies to the next message with no restart (seed 000, SWAP-1 and
// SWAP-2). Keys stay in the environment.
const PreferencesFile = "preferences.json"

// Preferences is the content of PreferencesFile.
type Preferences struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Context is a hearth.ContextBudget whose omitted fields keep their base
	// values; it is decoded (and validated) by budgetResolver.
	Context json.RawMessage `json:"context,omitempty"`
}

// prefsReader reads PreferencesFile for the resolvers, logging each
// distinct problem once (again only if it comes back after being fixed).
type prefsReader struct {
	readFile func(name string) ([]byte, error)
	log      *slog.Logger

	mu   sync.Mutex
	last map[string]string // by topic, the last problem logged
}

func newPrefsReader(readFile func(string) ([]byte, error), log *slog.Logger) *prefsReader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &prefsReader{readFile: readFile, log: log, last: make(map[string]string)}
}

// read returns the preferences; a missing file is no preference, a broken
// one is logged and ignored (ok is false: the environment and flags
// apply).
func (r *prefsReader) read() (Preferences, bool) {
	var p Preferences
	b, err := r.readFile(PreferencesFile)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.clear("file")
		return Preferences{}, true
	case err != nil:
		r.warnOnce("file", "ignoring "+PreferencesFile, err)
		return Preferences{}, false
	}
	r.clear("file")
	return p, true
}

// warnOnce logs msg with err unless the same problem of topic was the last
// one logged.
func (r *prefsReader) warnOnce(topic, msg string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := err.Error(); s != r.last[topic] {
		r.last[topic] = s
		r.log.Warn(msg, "err", err)
	}
}

// clear forgets topic's last problem: it is fixed.
func (r *prefsReader) clear(topic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, topic)
}

// modelResolver builds the model for each turn from the environment and
// the owner's preferences, reusing adapters while the configuration stays
// the same.
type modelResolver struct {
	prefs  *prefsReader
	getenv func(string) string
	hc     *http.Client
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]hearth.Model
}

func newModelResolver(prefs *prefsReader, getenv func(string) string, log *slog.Logger) *modelResolver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &modelResolver{prefs: prefs, getenv: getenv, hc: &http.Client{}, log: log, cache: make(map[string]hearth.Model)}
}

// Resolve returns the model the next turn uses. Its error is safe to show:
// it names what to configure.
func (r *modelResolver) Resolve() (hearth.Model, error) {
	p, _ := r.prefs.read()
	getenv := func(k string) string {
		switch {
		case k == "MNEMO_PROVIDER" && p.Provider != "":
			return p.Provider
		case k == "MNEMO_MODEL" && p.Model != "":
			return p.Model
		}
		return r.getenv(k)
	}
	cfg, err := llm.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s|%s|%s|%v", cfg.String(), cfg.API, strings.Join(cfg.ServerTools, ","), cfg.Timeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.cache[key]; ok {
		return m, nil
	}
	m, err := newModel(cfg, r.hc, r.log)
	if err != nil {
		return nil, err
	}
	r.log.Info("model provider", "provider", cfg.String())
	r.cache[key] = m
	return m, nil
}

// newModel builds the adapter for cfg, with retries on transient failures.
func newModel(cfg llm.Config, hc *http.Client, log *slog.Logger) (hearth.Model, error) {
	var m llm.Streamer
	switch {
	case cfg.Provider == llm.ProviderXAI && cfg.API != llm.APIChat:
		m = llm.NewResponses(cfg, hc).WithLogger(log)
	case cfg.Provider == llm.ProviderXAI, cfg.Provider == llm.ProviderOpenAI:
		m = llm.NewOpenAI(cfg, hc)
	case cfg.Provider == llm.ProviderAnthropic:
		m = llm.NewAnthropic(cfg, hc)
	default:
		return nil, fmt.Errorf("provider %q is not supported", cfg.Provider)
	}
	return llm.NewRetrying(m, llm.RetryPolicy{Log: log}), nil
}

// budgetResolver gives each turn its context budget: the base (the
// -context-budget flag over the default) overridden by the "context"
// object of PreferencesFile, which is read every time so that an edit
// applies on the next turn. An invalid override is logged once and the
// base applies.
type budgetResolver struct {
	prefs *prefsReader
	base  hearth.ContextBudget
}

// Budget returns the budget for the next turn.
func (r *budgetResolver) Budget() hearth.ContextBudget {
	p, ok := r.prefs.read()
	if !ok || len(p.Context) == 0 {
		return r.base
	}
	b, err := overrideBudget(r.base, p.Context)
	if err != nil {
		r.prefs.warnOnce("context", "ignoring the context budget in "+PreferencesFile+"; using "+budgetString(r.base), err)
		return r.base
	}
	r.prefs.clear("context")
	return b
}

// overrideBudget applies a "context" object to base: the fields it names
// replace base's, and the result must be valid.
func overrideBudget(base hearth.ContextBudget, raw json.RawMessage) (hearth.ContextBudget, error) {
	b := base
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return base, fmt.Errorf("context: %w", err)
	}
	if err := b.Validate(); err != nil {
		return base, err
	}
	return b, nil
}

func budgetString(b hearth.ContextBudget) string {
	return fmt.Sprintf("%d tokens, %d/%d/%d%%", b.Tokens, b.Shares.Recent, b.Shares.Memories, b.Shares.Tools)
}

// baseBudget is the default budget with the -context-budget flag's total,
// when given.
func baseBudget(tokens int) (hearth.ContextBudget, error) {
	b := hearth.DefaultContextBudget()
	if tokens != 0 {
		b.Tokens = tokens
	}
	if err := b.Validate(); err != nil {
		return b, fmt.Errorf("-context-budget: %w", err)
	}
	return b, nil
}
