package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/llm"
)

// preferences applies the owner's preference file (config.PreferencesFile
// in the memory root) turn by turn: it is checked before every turn, a
// valid change applies to that turn, and an invalid one is reported once —
// logged, and told to every client — while the last good preferences stay.
type preferences struct {
	cfg     *config.Config
	watcher *config.PrefsWatcher
	log     *slog.Logger
	hc      *http.Client

	mu       sync.Mutex
	announce func(hearth.Notice) // the core's, once it exists
	cache    map[string]hearth.Model
	applied  bool // preferences other than none are in force
}

func newPreferences(cfg *config.Config, rootDir string, log *slog.Logger) *preferences {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := func(name string) string { return filepath.Join(rootDir, name) }
	return &preferences{
		cfg: cfg,
		watcher: config.NewPrefsWatcher(config.PrefsOptions{
			ReadFile: func(name string) ([]byte, error) { return os.ReadFile(in(name)) },
			Stat:     func(name string) (fs.FileInfo, error) { return os.Stat(in(name)) },
			Base:     cfg.Budget(),
		}),
		log:   log,
		hc:    &http.Client{},
		cache: make(map[string]hearth.Model),
	}
}

// current is the preferences for this turn, reporting an invalid change.
func (p *preferences) current() config.Preferences {
	prefs, ch := p.watcher.Current()
	if ch.Err != nil {
		p.log.Warn("ignoring an invalid change to the preferences; the last good ones stay", "err", ch.Err)
		p.mu.Lock()
		announce := p.announce
		p.mu.Unlock()
		if announce != nil {
			announce(hearth.Notice{Code: hearth.CodeConfigInvalid, Message: prefsProblem(ch.Err)})
		}
	}
	if ch.Updated {
		p.logApplied(prefs)
	}
	return prefs
}

// logApplied says which preferences now apply, and when none do after
// some did; no preferences at all (no file, or an empty one) from the
// start is not news.
func (p *preferences) logApplied(prefs config.Preferences) {
	some := prefs.Provider != "" || prefs.Model != "" || prefs.Context != nil
	p.mu.Lock()
	was := p.applied
	p.applied = some
	p.mu.Unlock()
	switch {
	case some:
		p.log.Info("preferences applied", "provider", prefs.Provider, "model", prefs.Model, "context", prefs.Context != nil)
	case was:
		p.log.Info("preferences cleared: the configuration applies")
	}
}

// prefsProblem is an invalid preference file's error as clients see it:
// what is wrong with the content, never a path or a system error.
func prefsProblem(err error) string {
	const keep = "; the previous preferences stay in force"
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return config.PreferencesFile + " cannot be read" + keep + " (details in hearth's log)"
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return "invalid change to " + msg + keep
}

// Resolve returns the model of the next turn: the configuration with the
// owner's provider and model preferences over it. Adapters are reused
// while the resolved configuration stays the same. Its error is safe to
// show: it names what to configure.
func (p *preferences) Resolve() (hearth.Model, error) {
	cfg, err := p.cfg.ModelSettings(p.current()).Resolve()
	if err != nil {
		return nil, err
	}
	return p.adapter(cfg)
}

// adapter is the model for cfg, made once and reused while cfg stays.
func (p *preferences) adapter(cfg llm.Config) (hearth.Model, error) {
	key := fmt.Sprintf("%s|%s|%s|%v|%v|%v", cfg.String(), cfg.API, strings.Join(cfg.ServerTools, ","), cfg.Timeout, cfg.FirstByteTimeout, cfg.IdleTimeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.cache[key]; ok {
		return m, nil
	}
	m, err := newModel(cfg, p.hc, p.log)
	if err != nil {
		return nil, err
	}
	p.log.Info("model provider", "provider", cfg.String())
	p.cache[key] = m
	return m, nil
}

// Choices are the models a request may name for its own turn (the HTTP
// doors' model field), each as "provider/model" and as its bare model
// name: the turn's model (Resolve's) first, then the configuration's when
// a preference moved away from it, then every other provider whose key is
// configured, at its default model. A bare name two providers share
// names the first.
func (p *preferences) Choices() []string {
	var names []string
	for _, c := range p.choices() {
		names = append(names, c.Model, c.Provider+"/"+c.Model)
	}
	return names
}

// Named is the model a request named (one of Choices), for that turn
// only; false when no choice has that name or its adapter cannot be made.
func (p *preferences) Named(name string) (hearth.Model, bool) {
	for _, c := range p.choices() {
		if name == c.Provider+"/"+c.Model || name == c.Model {
			m, err := p.adapter(c)
			if err != nil {
				p.log.Warn("a requested model cannot be used", "model", name, "err", err)
				return nil, false
			}
			return m, true
		}
	}
	return nil, false
}

// choices are the resolved configurations Choices lists, in its order,
// without repeats.
func (p *preferences) choices() []llm.Config {
	var out []llm.Config
	add := func(s llm.Settings) (llm.Config, bool) {
		c, err := s.Resolve()
		if err != nil {
			return c, false // that provider has no key: not configured
		}
		if !slices.ContainsFunc(out, func(o llm.Config) bool { return o.Provider == c.Provider && o.Model == c.Model }) {
			out = append(out, c)
		}
		return c, true
	}
	add(p.cfg.ModelSettings(p.current()))
	base := p.cfg.ModelSettings(config.Preferences{})
	own, ok := add(base)
	for _, prov := range []string{llm.ProviderXAI, llm.ProviderAnthropic, llm.ProviderOpenAI} {
		if ok && own.Provider == prov {
			continue // at its configured model, above
		}
		s := base
		s.Provider, s.Model = prov, ""
		add(s)
	}
	return out
}

// Budget is the context budget of the next turn: the preference's, else
// the configured base.
func (p *preferences) Budget() hearth.ContextBudget {
	if b := p.current().Context; b != nil {
		return *b
	}
	return p.cfg.Budget()
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
