package hearth

import (
	"errors"
	"fmt"

	"github.com/mnemo/mnemo/memory"
)

// Context budget defaults and bounds, in estimated tokens (see
// estimateTokens).
const (
	DefaultContextTokens = 24000
	MinContextTokens     = 1000
	MaxContextTokens     = 2_000_000
)

// ContextBudget is how many tokens of conversation hearth assembles for
// each turn, and how they are shared between the parts: the recent turns
// (the window, oldest dropped first), sections of knowledge notes,
// relevant older turns and relevant tool results (all three found by
// recall and injected). Notes come first (seed 003 §5.1's tiers): what
// they leave of their share goes to the older turns. Shares are
// percentages of Tokens; what they leave (100 minus their sum) is not
// spent. The session context (AGENT.md, the continuity anchor) is outside
// the budget.
//
// In PreferencesFile it is the "context" object:
//
//	{"context": {"budget_tokens": 24000, "shares": {"recent": 75, "knowledge": 10, "memories": 5, "tools": 10}}}
//
// and an omitted field keeps its value from -context-budget or the default.
type ContextBudget struct {
	Tokens int           `json:"budget_tokens"`
	Shares ContextShares `json:"shares"`
}

// ContextShares are the percentages of a ContextBudget each part may use.
type ContextShares struct {
	Recent    int `json:"recent"`    // the recent turns
	Knowledge int `json:"knowledge"` // sections of relevant knowledge notes, first
	Memories  int `json:"memories"`  // relevant older turns
	Tools     int `json:"tools"`     // relevant tool results
}

// Allowance is a ContextBudget in tokens per part.
type Allowance struct {
	Recent, Knowledge, Memories, Tools int
}

// DefaultContextBudget is 24000 tokens shared 75 recent, 10 knowledge, 5
// older turns (15 when no note is relevant), 10 tool results.
func DefaultContextBudget() ContextBudget {
	return ContextBudget{Tokens: DefaultContextTokens, Shares: ContextShares{Recent: 75, Knowledge: 10, Memories: 5, Tools: 10}}
}

// Validate says what is wrong with b, in terms the owner can act on.
func (b ContextBudget) Validate() error {
	var errs []error
	if b.Tokens < MinContextTokens || b.Tokens > MaxContextTokens {
		errs = append(errs, fmt.Errorf("budget_tokens %d is outside [%d, %d]", b.Tokens, MinContextTokens, MaxContextTokens))
	}
	s := b.Shares
	for _, sh := range []struct {
		name string
		pct  int
	}{{"recent", s.Recent}, {"knowledge", s.Knowledge}, {"memories", s.Memories}, {"tools", s.Tools}} {
		if sh.pct < 0 {
			errs = append(errs, fmt.Errorf("share %q is %d%%; shares must not be negative", sh.name, sh.pct))
		}
	}
	if sum := s.Recent + s.Knowledge + s.Memories + s.Tools; sum > 100 {
		errs = append(errs, fmt.Errorf("shares add up to %d%%, more than 100%%", sum))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("context budget: %w", err)
	}
	return nil
}

// Allowance is b's tokens for each part, rounded down.
func (b ContextBudget) Allowance() Allowance {
	part := func(pct int) int { return b.Tokens * pct / 100 }
	return Allowance{Recent: part(b.Shares.Recent), Knowledge: part(b.Shares.Knowledge), Memories: part(b.Shares.Memories), Tools: part(b.Shares.Tools)}
}

// estimateTokens is the one token estimate hearth uses: 4 bytes a token,
// rounded up, so any non-empty text is at least 1.
func estimateTokens(s string) int {
	return memory.EstimateTokens(s)
}
