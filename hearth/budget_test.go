package hearth

import (
	"strings"
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
