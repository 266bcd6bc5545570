package daemon

import (
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth"
)

func TestBaseBudget(t *testing.T) {
	if b, err := baseBudget(0); err != nil || b != hearth.DefaultContextBudget() {
		t.Errorf("baseBudget(0) = %+v, %v, want the default", b, err)
	}
	if b, err := baseBudget(8000); err != nil || b != budget(8000, 75, 15, 10) {
		t.Errorf("baseBudget(8000) = %+v, %v", b, err)
	}
	if _, err := baseBudget(10); err == nil || !strings.Contains(err.Error(), "-context-budget") {
		t.Errorf("baseBudget(10) error = %v, want one naming the flag", err)
	}
}

// prefsFiles is a memory root holding only PreferencesFile.
type prefsFiles struct {
	mu   sync.Mutex
	text *string
}

func (f *prefsFiles) set(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.text = &s
}

func (f *prefsFiles) read(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != PreferencesFile || f.text == nil {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return []byte(*f.text), nil
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBudgetResolver(t *testing.T) {
	base := budget(10000, 75, 15, 10)
	tests := []struct {
		name    string
		file    *string
		want    hearth.ContextBudget
		wantLog string // a warning that must be logged, once; "" none
	}{
		{"no file", nil, base, ""},
		{"no context section", ptr(`{"model":"m"}`), base, ""},
		{"total only", ptr(`{"context":{"budget_tokens":40000}}`), budget(40000, 75, 15, 10), ""},
		{"all shares", ptr(`{"context":{"shares":{"recent":50,"memories":30,"tools":20}}}`), budget(10000, 50, 30, 20), ""},
		{"an omitted share keeps its value", ptr(`{"context":{"shares":{"recent":70}}}`), budget(10000, 70, 15, 10), ""},
		{"everything", ptr(`{"context":{"budget_tokens":5000,"shares":{"recent":60,"memories":20,"tools":20}}}`), budget(5000, 60, 20, 20), ""},
		{"shares over 100", ptr(`{"context":{"shares":{"recent":90}}}`), base, "add up to 115%"},
		{"negative share", ptr(`{"context":{"shares":{"tools":-5}}}`), base, `share \"tools\" is -5%`},
		{"tiny total", ptr(`{"context":{"budget_tokens":10}}`), base, "budget_tokens 10"},
		{"wrong type", ptr(`{"context":{"budget_tokens":"lots"}}`), base, "budget_tokens"},
		{"misspelt field", ptr(`{"context":{"budget":9000}}`), base, `unknown field \"budget\"`},
		{"broken file", ptr(`{"context":`), base, "ignoring preferences.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := &prefsFiles{}
			if tt.file != nil {
				files.set(*tt.file)
			}
			var logs syncBuffer
			r := &budgetResolver{prefs: newPrefsReader(files.read, slog.New(slog.NewTextHandler(&logs, nil))), base: base}
			for range 3 { // every turn reads the file again
				if diff := cmp.Diff(tt.want, r.Budget()); diff != "" {
					t.Fatalf("Budget() (-want +got):\n%s", diff)
				}
			}
			warnings := strings.Count(logs.String(), "level=WARN")
			switch {
			case tt.wantLog == "" && warnings != 0:
				t.Errorf("logged %q, want nothing", logs.String())
			case tt.wantLog != "" && (warnings != 1 || !strings.Contains(logs.String(), tt.wantLog)):
				t.Errorf("logged %q, want one warning mentioning %q", logs.String(), tt.wantLog)
			}
		})
	}
}

// TestBudgetResolverLogsAgainAfterAFix: a problem is logged once while it
// lasts, and again if it comes back after the owner fixed it.
func TestBudgetResolverLogsAgainAfterAFix(t *testing.T) {
	files := &prefsFiles{}
	var logs syncBuffer
	r := &budgetResolver{prefs: newPrefsReader(files.read, slog.New(slog.NewTextHandler(&logs, nil))), base: hearth.DefaultContextBudget()}
	bad, good := `{"context":{"shares":{"recent":99}}}`, `{"context":{"shares":{"recent":70}}}`
	for _, text := range []string{bad, bad, good, good, bad} {
		files.set(text)
		r.Budget()
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("logged %d warnings, want 2:\n%s", n, logs.String())
	}
}

// TestPreferencesChangeContextBudgetNextTurn edits the context budget in
// preferences.json between turns: each turn's budget (Budget is asked once
// per turn) follows the file with no restart, and a broken edit falls back
// to the base budget. (That the core runs each turn with the budget it is
// given is ndjson's TestContextBudgetChangesNextTurn.)
func TestPreferencesChangeContextBudgetNextTurn(t *testing.T) {
	files := &prefsFiles{}
	var logs syncBuffer
	r := &budgetResolver{prefs: newPrefsReader(files.read, slog.New(slog.NewTextHandler(&logs, nil))), base: hearth.DefaultContextBudget()}
	for _, step := range []struct {
		name string
		file string // "" leaves the file as it is
		want hearth.ContextBudget
	}{
		{"no preferences yet", "", hearth.DefaultContextBudget()},
		{"an edit applies on the next turn", `{"context":{"budget_tokens":2000,"shares":{"recent":50,"memories":30,"tools":20}}}`, budget(2000, 50, 30, 20)},
		{"and stays", "", budget(2000, 50, 30, 20)},
		{"a broken edit gives the base", `{"context":{"shares":{"recent":95}}}`, hearth.DefaultContextBudget()}, // 120%
	} {
		if step.file != "" {
			files.set(step.file)
		}
		if diff := cmp.Diff(step.want, r.Budget()); diff != "" {
			t.Errorf("%s: Budget() (-want +got):\n%s", step.name, diff)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("logged %d warnings, want 1 for the broken edit:\n%s", n, logs.String())
	}
}
