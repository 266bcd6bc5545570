package daemon

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm"
)

func TestPreferencesSwapModelWithoutRestart(t *testing.T) {
	files := map[string]string{}
	var mu sync.Mutex
	read := func(name string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}
	env := map[string]string{"XAI_API_KEY": "xk", "ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"}
	r := newModelResolver(newPrefsReader(read, nil), func(k string) string { return env[k] }, nil)
	check := func(wantProvider, wantModel string) {
		t.Helper()
		m, err := r.Resolve()
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if m.Name() != wantProvider || m.Model() != wantModel {
			t.Errorf("model = %s %s, want %s %s", m.Name(), m.Model(), wantProvider, wantModel)
		}
	}
	check("xai", llm.DefaultXAIModel)
	files[PreferencesFile] = `{"model":"grok-4.5"}`
	check("xai", "grok-4.5")
	files[PreferencesFile] = `{"provider":"anthropic","model":"claude-opus-4"}`
	check("anthropic", "claude-opus-4")
	files[PreferencesFile] = `{"provider":"openai"}`
	check("openai", llm.DefaultOpenAIModel)
	files[PreferencesFile] = `{not json`
	check("xai", llm.DefaultXAIModel) // a broken file is ignored, not fatal
	files[PreferencesFile] = `{"provider":"mystery"}`
	if _, err := r.Resolve(); err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Errorf("unknown provider preference: err = %v", err)
	}
}
