package hearth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
// (the window, oldest dropped first), relevant older turns and relevant
// tool results (both found by recall and injected). Shares are percentages
// of Tokens; what they leave (100 minus their sum) is not spent. The
// session context (AGENT.md, the continuity anchor) is outside the budget.
//
// In PreferencesFile it is the "context" object:
//
//	{"context": {"budget_tokens": 24000, "shares": {"recent": 75, "memories": 15, "tools": 10}}}
//
// and an omitted field keeps its value from -context-budget or the default.
type ContextBudget struct {
	Tokens int           `json:"budget_tokens"`
	Shares ContextShares `json:"shares"`
}

// ContextShares are the percentages of a ContextBudget each part may use.
type ContextShares struct {
	Recent   int `json:"recent"`   // the recent turns
	Memories int `json:"memories"` // relevant older turns
	Tools    int `json:"tools"`    // relevant tool results
}

// Allowance is a ContextBudget in tokens per part.
type Allowance struct {
	Recent, Memories, Tools int
}

// DefaultContextBudget is 24000 tokens shared 75/15/10.
func DefaultContextBudget() ContextBudget {
	return ContextBudget{Tokens: DefaultContextTokens, Shares: ContextShares{Recent: 75, Memories: 15, Tools: 10}}
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
	}{{"recent", s.Recent}, {"memories", s.Memories}, {"tools", s.Tools}} {
		if sh.pct < 0 {
			errs = append(errs, fmt.Errorf("share %q is %d%%; shares must not be negative", sh.name, sh.pct))
		}
	}
	if sum := s.Recent + s.Memories + s.Tools; sum > 100 {
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
	return Allowance{Recent: part(b.Shares.Recent), Memories: part(b.Shares.Memories), Tools: part(b.Shares.Tools)}
}

// estimateTokens is the one token estimate hearth uses: 4 bytes a token,
// rounded up, so any non-empty text is at least 1.
func estimateTokens(s string) int {
	return (len(s) + 3) / 4
}

// budgetResolver gives each turn its context budget: the base (the
// -context-budget flag over the default) overridden by the "context"
// object of PreferencesFile, which is read every time so that an edit
// applies on the next turn. An invalid override is logged once and the
// base applies.
type budgetResolver struct {
	prefs *prefsReader
	base  ContextBudget
}

// Resolve returns the budget for the next turn.
func (r *budgetResolver) Resolve() ContextBudget {
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
func overrideBudget(base ContextBudget, raw json.RawMessage) (ContextBudget, error) {
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

func budgetString(b ContextBudget) string {
	return fmt.Sprintf("%d tokens, %d/%d/%d%%", b.Tokens, b.Shares.Recent, b.Shares.Memories, b.Shares.Tools)
}

// baseBudget is the default budget with the -context-budget flag's total,
// when given.
func baseBudget(tokens int) (ContextBudget, error) {
	b := DefaultContextBudget()
	if tokens != 0 {
		b.Tokens = tokens
	}
	if err := b.Validate(); err != nil {
		return b, fmt.Errorf("-context-budget: %w", err)
	}
	return b, nil
}
