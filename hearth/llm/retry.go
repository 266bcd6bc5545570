package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mnemo/mnemo/internal/backoff"
)

// Streamer is a model adapter: [OpenAI], [Retrying], and the other
// providers' adapters.
type Streamer interface {
	// Stream makes one model call; see [OpenAI.Stream] for the contract.
	Stream(ctx context.Context, req Request, onText func(string)) (Response, error)
	// Name reports the provider, e.g. "xai".
	Name() string
	// Model reports the model used when a Request names none.
	Model() string
}

var (
	_ Streamer = (*OpenAI)(nil)
	_ Streamer = (*Retrying)(nil)
)

// Retry defaults, used for RetryPolicy's zero fields.
const (
	DefaultMaxAttempts   = 3
	DefaultMaxRetryAfter = 30 * time.Second
)

// defaultDelays are the waits before the second, third and later attempts.
func defaultDelays() []time.Duration {
	p := backoff.Policy{Initial: 250 * time.Millisecond, Multiplier: 4, Max: 2 * time.Second}
	return []time.Duration{p.Delay(1), p.Delay(2), p.Delay(3)}
}

// RetryPolicy says when and how long [Retrying] waits before calling again.
// The zero value is the default policy.
type RetryPolicy struct {
	// Delays are the waits before the second attempt, the third, and so
	// on; the last one repeats. nil means 250ms, 1s, 2s: with the default
	// MaxAttempts, a call is tried three times, waiting 250ms and then 1s.
	Delays []time.Duration
	// MaxAttempts is the number of attempts, the first included; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// MaxRetryAfter caps how long a provider's Retry-After can make the
	// caller wait; 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then. nil
	// means a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives a warning for each retry; nil means no logging.
	Log *slog.Logger
}

// Retrying is a Streamer that calls another one again after a transient
// failure. It is safe for concurrent use if the wrapped Streamer is.
type Retrying struct {
	s        Streamer
	delays   []time.Duration
	attempts int
	maxAfter time.Duration
	sleep    func(ctx context.Context, d time.Duration) error
	log      *slog.Logger
}

// NewRetrying wraps s with policy p.
func NewRetrying(s Streamer, p RetryPolicy) *Retrying {
	r := &Retrying{
		s:        s,
		delays:   p.Delays,
		attempts: p.MaxAttempts,
		maxAfter: p.MaxRetryAfter,
		sleep:    p.Sleep,
		log:      p.Log,
	}
	if len(r.delays) == 0 {
		r.delays = defaultDelays()
	} else {
		r.delays = append([]time.Duration(nil), r.delays...)
	}
	if r.attempts <= 0 {
		r.attempts = DefaultMaxAttempts
	}
	if r.maxAfter <= 0 {
		r.maxAfter = DefaultMaxRetryAfter
	}
	if r.sleep == nil {
		r.sleep = sleep
	}
	return r
}

// Name reports the wrapped Streamer's provider.
func (r *Retrying) Name() string { return r.s.Name() }

// Model reports the wrapped Streamer's default model.
func (r *Retrying) Model() string { return r.s.Model() }

// Stream calls the wrapped Streamer, and again after a failure worth
// retrying: an *Error marked Retryable with status 429, a 5xx, or 0 (a
// transport failure, a cut stream, a first-byte or idle timeout). Other
// 4xx replies are never retried, nor is a call that hit the total
// timeout, nor an attempt that already passed text to onText: the caller
// has shown it, so the error goes back to the caller instead.
//
// Before attempt n+1 it waits the policy's nth delay, or the provider's
// Retry-After (capped by MaxRetryAfter) when that is longer, after
// telling req.OnRetry. Cancelling ctx ends the wait at once, with a
// non-retryable *Error wrapping ctx's error and the last failure. When
// the attempts run out, or ctx's deadline would pass during the wait, the
// last attempt's result and error are returned as they were, its
// Attempts set to the number of attempts made.
func (r *Retrying) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	for attempt := 1; ; attempt++ {
		var sent bool
		resp, err := r.s.Stream(ctx, req, func(s string) {
			sent = true
			if onText != nil {
				onText(s)
			}
		})
		if err == nil {
			return resp, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return resp, err
		}
		e.Attempts = attempt
		if attempt >= r.attempts || sent || ctx.Err() != nil || !retryable(e) {
			return resp, err
		}
		wait := r.delays[min(attempt, len(r.delays))-1]
		if after := min(e.RetryAfter, r.maxAfter); after > wait {
			wait = after
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			// ctx would expire during the wait: report the failure now.
			return resp, err
		}
		if r.log != nil {
			r.log.LogAttrs(ctx, slog.LevelWarn, "model call failed, retrying",
				slog.String("provider", cmp.Or(e.Provider, r.s.Name())),
				slog.Int("status", e.Status),
				slog.String("category", string(e.Category())),
				slog.Int("attempt", attempt),
				slog.Int("max_attempts", r.attempts),
				slog.Duration("wait", wait),
				slog.Duration("retry_after", e.RetryAfter),
				slog.String("error", e.Error()), // Error redacts the API key
			)
		}
		if req.OnRetry != nil {
			kind, _ := e.Timeout()
			req.OnRetry(Retry{
				Attempt: attempt, MaxAttempts: r.attempts, Category: e.Category(), Timeout: kind,
				Wait: wait, RetryAfter: e.RetryAfter,
			})
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			return resp, &Error{Provider: e.Provider, Attempts: attempt, Err: fmt.Errorf("%w while waiting to retry after: %w", serr, err)}
		}
	}
}

// retryable reports whether e is worth another attempt.
func retryable(e *Error) bool {
	if !e.Retryable {
		return false
	}
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= http.StatusInternalServerError
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
