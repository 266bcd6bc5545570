package hearth

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
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
		{"knowledge counts", ContextBudget{Tokens: 24000, Shares: ContextShares{Recent: 75, Knowledge: 10, Memories: 15, Tools: 10}}, []string{"add up to 110%"}},
		{"negative knowledge", ContextBudget{Tokens: 24000, Shares: ContextShares{Recent: 75, Knowledge: -1}}, []string{`share "knowledge" is -1%`}},
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
		// Notes may use 2400 tokens, turns 1200 and what the notes leave.
		{"default", DefaultContextBudget(), Allowance{Recent: 18000, Knowledge: 2400, Memories: 1200, Tools: 2400}},
		{"knowledge", ContextBudget{Tokens: 10000, Shares: ContextShares{Recent: 60, Knowledge: 25, Memories: 5, Tools: 10}}, Allowance{Recent: 6000, Knowledge: 2500, Memories: 500, Tools: 1000}},
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

// requestRecorder is a Memory that records the context requests it gets.
type requestRecorder struct{ got []memory.ContextRequest }

func (r *requestRecorder) Relevant(_ context.Context, req memory.ContextRequest) string {
	r.got = append(r.got, req)
	return ""
}
func (*requestRecorder) Search(context.Context, memory.SearchRequest) ([]memory.Hit, error) {
	return nil, nil
}
func (*requestRecorder) Notify(string)                                {}
func (*requestRecorder) Health() *memory.IndexHealth                  { return nil }
func (*requestRecorder) Forget(context.Context, []string, bool) error { return nil }

// TestMemoriesAllowances: a turn asks memory for notes, older turns and
// tool results, each within its allowance; once a session's opening block
// holds half of each, a turn asks for the other half.
func TestMemoriesAllowances(t *testing.T) {
	rec := &requestRecorder{}
	h := &Hearth{cfg: Config{Memory: rec}}
	window := []journal.Record{{ID: "01A", Role: memory.RoleUser, Text: "where do I live?"}}
	allow := DefaultContextBudget().Allowance()
	h.memories(t.Context(), window, allow, &session{})
	h.memories(t.Context(), window, allow, &session{opened: true})
	if len(rec.got) != 2 {
		t.Fatalf("%d requests, want 2", len(rec.got))
	}
	for i, want := range [][3]int{{2400, 1200, 2400}, {1200, 600, 1200}} {
		r := rec.got[i]
		if got := [3]int{r.Knowledge, r.Turns, r.Tools}; got != want {
			t.Errorf("request %d: knowledge, turns, tools = %v, want %v", i, got, want)
		}
	}
}
