package daemon

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/logtest"
)

// loadConfig is the configuration hearth would load from env alone.
func loadConfig(t *testing.T, vars map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Load(config.LoadOptions{Getenv: env(vars), ConfigDir: filepath.Join(dir, "config"), DataDir: filepath.Join(dir, "data"), CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// notices records what the preferences announce to clients.
type notices struct {
	mu  sync.Mutex
	got []hearth.Notice
}

func (n *notices) add(x hearth.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, x)
}

func (n *notices) take() []hearth.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	got := n.got
	n.got = nil
	return got
}

func newTestPreferences(t *testing.T, vars map[string]string) (*preferences, func(string), *notices) {
	t.Helper()
	root := t.TempDir()
	p := newPreferences(loadConfig(t, vars), root, nil)
	n := &notices{}
	p.announce = n.add
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, config.PreferencesFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p, write, n
}

// The owner swaps provider and model by editing preferences.json, with no
// restart; a broken edit leaves the last good choice in force and is told
// to clients once, without paths.
func TestPreferencesSwapModelWithoutRestart(t *testing.T) {
	p, write, n := newTestPreferences(t, map[string]string{"XAI_API_KEY": "xk", "ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"})
	check := func(wantProvider, wantModel string) {
		t.Helper()
		m, err := p.Resolve()
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if m.Name() != wantProvider || m.Model() != wantModel {
			t.Errorf("model = %s %s, want %s %s", m.Name(), m.Model(), wantProvider, wantModel)
		}
	}
	check("xai", llm.DefaultXAIModel)
	write(`{"model":"grok-4.5"}`)
	check("xai", "grok-4.5")
	write(`{"provider":"anthropic","model":"claude-opus-4"}`)
	check("anthropic", "claude-opus-4")
	if got := n.take(); len(got) != 0 {
		t.Errorf("valid edits announced %+v", got)
	}

	write(`{not json`)
	check("anthropic", "claude-opus-4") // the last good preferences stay
	check("anthropic", "claude-opus-4")
	got := n.take()
	if len(got) != 1 || got[0].Code != hearth.CodeConfigInvalid || !strings.Contains(got[0].Message, "preferences.json") {
		t.Fatalf("a broken edit announced %+v, want one config_invalid notice", got)
	}
	if strings.Contains(got[0].Message, "/") {
		t.Errorf("the notice %q shows a path", got[0].Message)
	}

	write(`{"provider":"openai"}`)
	check("openai", llm.DefaultOpenAIModel)
	write(`{"provider":"mystery"}`)
	check("openai", llm.DefaultOpenAIModel)
	if got := n.take(); len(got) != 1 || !strings.Contains(got[0].Message, "mystery") {
		t.Errorf("an unknown provider announced %+v, want one notice naming it", got)
	}
}

// withRecent is b with its recent share set.
func withRecent(b hearth.ContextBudget, recent int) hearth.ContextBudget {
	b.Shares.Recent = recent
	return b
}

// The context budget follows the file turn by turn; an invalid edit keeps
// the last good budget and is announced once. (A file naming
// recent+memories+tools that adds up to 100 leaves no knowledge share.)
func TestPreferencesChangeContextBudgetNextTurn(t *testing.T) {
	p, write, n := newTestPreferences(t, nil)
	base := hearth.DefaultContextBudget()
	for _, step := range []struct {
		name    string
		file    string // "" leaves the file as it is
		want    hearth.ContextBudget
		notices int
	}{
		{"no preferences yet", "", base, 0},
		{"an edit applies on the next turn", `{"context":{"budget_tokens":2000,"shares":{"recent":50,"memories":30,"tools":20}}}`, budget(2000, 50, 30, 20), 0},
		{"and stays", "", budget(2000, 50, 30, 20), 0},
		{"an omitted field keeps the base", `{"context":{"shares":{"recent":70}}}`, withRecent(base, 70), 0},
		{"over 100% keeps the last good", `{"context":{"shares":{"recent":95}}}`, withRecent(base, 70), 1},
		{"announced once", "", withRecent(base, 70), 0},
		{"a misspelt field too", `{"context":{"budget":9000}}`, withRecent(base, 70), 1},
		{"fixed", `{"context":{"budget_tokens":5000}}`, hearth.ContextBudget{Tokens: 5000, Shares: base.Shares}, 0},
	} {
		if step.file != "" {
			write(step.file)
		}
		if diff := cmp.Diff(step.want, p.Budget()); diff != "" {
			t.Errorf("%s: Budget() (-want +got):\n%s", step.name, diff)
		}
		if got := n.take(); len(got) != step.notices {
			t.Errorf("%s: %d notices %+v, want %d", step.name, len(got), got, step.notices)
		}
	}
}

// What the preferences log: nothing while there are none, what applies
// when the file sets something, and that it no longer does when cleared.
func TestPreferencesLogged(t *testing.T) {
	root := t.TempDir()
	log, logs := logtest.New()
	p := newPreferences(loadConfig(t, map[string]string{"XAI_API_KEY": "xk"}), root, log)
	path := filepath.Join(root, config.PreferencesFile)
	steps := []struct {
		name string
		file string // "-": no file
		want string // the INFO about preferences; "" none
	}{
		{"no file", "-", ""},
		{"no file, again", "-", ""},
		{"a model", `{"model":"grok-4.5"}`, `msg="preferences applied" provider="" model=grok-4.5 context=false`},
		{"removed", "-", `msg="preferences cleared: the configuration applies"`},
		{"empty object", `{}`, ""},
	}
	for _, s := range steps {
		logs.Reset()
		if s.file == "-" {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte(s.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Resolve(); err != nil {
			t.Fatalf("%s: Resolve: %v", s.name, err)
		}
		got := logs.Lines(slog.LevelInfo, "preferences")
		switch {
		case s.want == "" && len(got) != 0:
			t.Errorf("%s: logged %q, want nothing", s.name, got)
		case s.want != "" && (len(got) != 1 || !strings.Contains(got[0], s.want)):
			t.Errorf("%s: logged %q, want one line with %s", s.name, got, s.want)
		}
	}
}
