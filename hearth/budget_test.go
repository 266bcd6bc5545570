package hearth

import (
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func budget(tokens, recent, memories, tools int) ContextBudget {
	return ContextBudget{Tokens: tokens, Shares: ContextShares{Recent: recent, Memories: memories, Tools: tools}}
}

func TestContextBudgetValidate(t *testing.T) {
	tests := []struct {
		name    string
		b       ContextBudget
		wantErr []string // substrings of the error; none: valid
	}{
		{"default", DefaultContextBudget(), nil},
		{"shares may leave some unspent", budget(8000, 50, 20, 10), nil},
		{"all to recent", budget(MinContextTokens, 100, 0, 0), nil},
		{"no shares at all", budget(MaxContextTokens, 0, 0, 0), nil},
		{"too small", budget(MinContextTokens-1, 75, 15, 10), []string{"budget_tokens 999", "[1000, 2000000]"}},
		{"zero tokens", budget(0, 75, 15, 10), []string{"budget_tokens 0"}},
		{"too large", budget(MaxContextTokens+1, 75, 15, 10), []string{"budget_tokens 2000001"}},
		{"negative share", budget(24000, 110, -10, 0), []string{`share "memories" is -10%`}},
		{"over 100", budget(24000, 80, 15, 10), []string{"add up to 105%"}},
		{"several problems at once", budget(1, -1, 0, 0), []string{"budget_tokens 1", `share "recent"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to mention %q", err, want)
				}
			}
		})
	}
}

func TestContextBudgetAllowance(t *testing.T) {
	tests := []struct {
		name string
		b    ContextBudget
		want Allowance
	}{
		{"default", DefaultContextBudget(), Allowance{Recent: 18000, Memories: 3600, Tools: 2400}},
		{"rounded down", budget(1001, 33, 33, 33), Allowance{Recent: 330, Memories: 330, Tools: 330}},
		{"unspent remainder", budget(10000, 50, 20, 0), Allowance{Recent: 5000, Memories: 2000, Tools: 0}},
		{"largest budget does not overflow", budget(MaxContextTokens, 100, 0, 0), Allowance{Recent: MaxContextTokens}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.b.Allowance()); diff != "" {
				t.Errorf("Allowance() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("x", 400), 100},
		{"héllo", 2}, // bytes, not runes: 6 bytes
	}
	for _, tt := range tests {
		if got := estimateTokens(tt.text); got != tt.want {
			t.Errorf("estimateTokens(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestBaseBudget(t *testing.T) {
	if b, err := baseBudget(0); err != nil || b != DefaultContextBudget() {
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
		want    ContextBudget
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
				if diff := cmp.Diff(tt.want, r.Resolve()); diff != "" {
					t.Fatalf("Resolve() (-want +got):\n%s", diff)
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
	r := &budgetResolver{prefs: newPrefsReader(files.read, slog.New(slog.NewTextHandler(&logs, nil))), base: DefaultContextBudget()}
	bad, good := `{"context":{"shares":{"recent":99}}}`, `{"context":{"shares":{"recent":70}}}`
	for _, text := range []string{bad, bad, good, good, bad} {
		files.set(text)
		r.Resolve()
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("logged %d warnings, want 2:\n%s", n, logs.String())
	}
}
