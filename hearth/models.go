package hearth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/mnemo/mnemo/hearth/llm"
)

// PreferencesFile, in the memory root, holds the owner's model preference:
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5"}
//
// Both fields are optional and override MNEMO_PROVIDER and MNEMO_MODEL. It
// is read before every turn, so an edit applies to the next message with no
// restart (seed 000, SWAP-1 and SWAP-2). Keys stay in the environment.
const PreferencesFile = "preferences.json"

// Preferences is the content of PreferencesFile.
type Preferences struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// modelResolver builds the model for each turn from the environment and
// the owner's preferences, reusing adapters while the configuration stays
// the same.
type modelResolver struct {
	readFile func(name string) ([]byte, error)
	getenv   func(string) string
	hc       *http.Client
	log      *slog.Logger

	mu    sync.Mutex
	cache map[string]Model
	last  string // the last preference error logged, to log each once
}

func newModelResolver(readFile func(string) ([]byte, error), getenv func(string) string, log *slog.Logger) *modelResolver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &modelResolver{readFile: readFile, getenv: getenv, hc: &http.Client{}, log: log, cache: make(map[string]Model)}
}

// Resolve returns the model the next turn uses. Its error is safe to show:
// it names what to configure.
func (r *modelResolver) Resolve() (Model, error) {
	p := r.preferences()
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

// preferences reads PreferencesFile; a missing file is no preference, a
// broken one is logged and ignored (the environment still applies).
func (r *modelResolver) preferences() Preferences {
	var p Preferences
	b, err := r.readFile(PreferencesFile)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.mu.Lock()
		if msg := err.Error(); msg != r.last {
			r.last = msg
			r.log.Warn("ignoring "+PreferencesFile, "err", err)
		}
		r.mu.Unlock()
		return Preferences{}
	}
	return p
}

// newModel builds the adapter for cfg, with retries on transient failures.
func newModel(cfg llm.Config, hc *http.Client, log *slog.Logger) (Model, error) {
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
