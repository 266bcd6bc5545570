package hearth

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
)

// ProviderCheck is the outcome of CheckProvider, safe to show: Problem
// names settings and variables, never a key, a URL or the provider's
// text.
type ProviderCheck struct {
	OK              bool
	Provider, Model string
	// Latency is the wait for the first text of the reply, or for the
	// failure.
	Latency time.Duration
	// Category is what kind of failure it was: CategoryNoProvider,
	// CategoryModelUnknown or an llm.Category; "" when OK.
	Category string
	Problem  string // what went wrong and the fix; "" when OK
}

// Categories of a ProviderCheck beyond llm's.
const (
	CategoryNoProvider   = "no_provider"
	CategoryModelUnknown = "model_unknown"
)

// providerCheckPrompt is the check's whole conversation: a reply of one
// word, cut off at its first text anyway.
const providerCheckPrompt = "This is a connectivity check. Reply with the single word: ok"

// errChecked ends a provider check once the first text has arrived.
var errChecked = errors.New("hearth: provider check answered")

// CheckProvider makes one cheap call to the model the next turn would
// use (the preferences applied): a one-line prompt, cancelled as soon as
// the first text streams, so that it costs a handful of tokens. It goes
// through the same adapter, timeouts and retries as a turn; ctx bounds
// it. Its error is only ever ctx's.
func (h *Hearth) CheckProvider(ctx context.Context) (ProviderCheck, error) {
	if h.cfg.Models == nil {
		return ProviderCheck{Category: CategoryNoProvider, Problem: llm.ErrNoProvider.Error()}, nil
	}
	m, err := h.cfg.Models.Resolve()
	if err != nil {
		// Resolve's errors name what to configure (see Models).
		return ProviderCheck{Category: CategoryNoProvider, Problem: err.Error()}, nil
	}
	r := ProviderCheck{Provider: m.Name(), Model: m.Model()}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var firstAt atomic.Int64 // nanoseconds to the first text; 0: none yet
	resp, err := m.Stream(callCtx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: providerCheckPrompt}}}, func(string) {
		if firstAt.CompareAndSwap(0, int64(max(time.Since(start), time.Nanosecond))) {
			cancel(errChecked)
		}
	})
	first := time.Duration(firstAt.Load())
	r.Latency = time.Since(start)
	if first > 0 {
		r.Latency = first
	}
	if resp.Model != "" {
		r.Model = resp.Model
	}
	switch {
	case first > 0 || err == nil:
		// Text came (the cut that follows is the check's own), or the
		// model answered with nothing to stream.
		r.OK = true
		return r, nil
	case ctx.Err() != nil:
		return r, ctx.Err()
	}
	h.log.Warn("provider check failed", "provider", r.Provider, "model", r.Model, "err", err)
	r.Category, r.Problem = checkProblem(err, r.Model)
	return r, nil
}

// checkProblem is a failed check's category and message: a turn's
// message (providerProblem), with an unknown model told apart.
func checkProblem(err error, model string) (string, string) {
	var e *llm.Error
	if !errors.As(err, &e) {
		return string(llm.CategoryOther), msgProviderError
	}
	if e.Status == 404 { // Not Found: the model, on every provider
		return CategoryModelUnknown, fmt.Sprintf("the model provider does not know the model %q (HTTP 404) — set MNEMO_MODEL (model.name) to a model it serves", model)
	}
	return string(e.Category()), providerProblem(e)
}
