package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of the watchdog's timeouts, used when Config leaves them zero.
const (
	DefaultFirstByteTimeout = time.Minute
	DefaultIdleTimeout      = time.Minute
)

// TimeoutKind says which of a model call's timeouts ended it.
type TimeoutKind int

// Timeouts of one model call.
const (
	// TimeoutFirstByte: no byte of the reply (neither its headers nor the
	// first stream event) arrived within Config.FirstByteTimeout.
	TimeoutFirstByte TimeoutKind = iota + 1
	// TimeoutIdle: the reply stream went silent mid-way for
	// Config.IdleTimeout.
	TimeoutIdle
	// TimeoutTotal: the whole call took Config.Timeout. A provider that
	// keeps streaming that long will do it again: never retried.
	TimeoutTotal
)

func (k TimeoutKind) String() string {
	switch k {
	case TimeoutFirstByte:
		return "first byte"
	case TimeoutIdle:
		return "idle stream"
	case TimeoutTotal:
		return "total"
	}
	return "unknown"
}

// TimeoutError is the cause of a call a timeout ended; it unwraps to
// context.DeadlineExceeded.
type TimeoutError struct {
	Kind  TimeoutKind
	After time.Duration // the timeout that expired
}

func (e *TimeoutError) Error() string {
	switch e.Kind {
	case TimeoutFirstByte:
		return fmt.Sprintf("no reply within %v (first-byte timeout)", e.After)
	case TimeoutIdle:
		return fmt.Sprintf("the reply stream was silent for %v (idle timeout)", e.After)
	}
	return fmt.Sprintf("no complete reply within %v", e.After)
}

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// callTimeouts are an adapter's resolved timeouts.
type callTimeouts struct {
	total, firstByte, idle time.Duration
}

func timeoutsOf(cfg Config) callTimeouts {
	t := callTimeouts{total: cfg.Timeout, firstByte: cfg.FirstByteTimeout, idle: cfg.IdleTimeout}
	if t.total <= 0 {
		t.total = DefaultTimeout
	}
	if t.firstByte <= 0 {
		t.firstByte = DefaultFirstByteTimeout
	}
	if t.idle <= 0 {
		t.idle = DefaultIdleTimeout
	}
	return t
}

// startCall bounds one call: by the total timeout, and by a watchdog
// that ends it when no byte of the reply arrives within the first-byte
// timeout or the stream then goes silent for the idle timeout. A
// watchdog at or past the total is not armed: the total governs. The
// cause of the returned context's end is a *TimeoutError, unless the
// caller's ctx ended first. stop releases it.
func (t callTimeouts) startCall(ctx context.Context) (w *watchdog, stop func()) {
	total, cancelTotal := context.WithTimeoutCause(ctx, t.total, &TimeoutError{Kind: TimeoutTotal, After: t.total})
	w = t.watch(total)
	return w, func() {
		w.stop()
		cancelTotal()
	}
}

// watch arms a watchdog under ctx, which carries the total timeout: one
// per HTTP request of a call.
func (t callTimeouts) watch(ctx context.Context) *watchdog {
	w := &watchdog{firstByte: t.firstByte, idle: t.idle}
	if t.idle >= t.total {
		w.idle = 0
	}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	if t.firstByte < t.total {
		w.timer = time.AfterFunc(t.firstByte, w.fire)
	}
	return w
}

// watchdog ends a call whose reply does not come or stalls. ctx is the
// context to make the request with.
type watchdog struct {
	ctx             context.Context
	cancel          context.CancelCauseFunc
	firstByte, idle time.Duration // 0: not armed

	mu      sync.Mutex
	timer   *time.Timer // nil: not armed
	started bool        // a byte of the body arrived: the idle timeout applies
}

func (w *watchdog) fire() {
	w.mu.Lock()
	cause := &TimeoutError{Kind: TimeoutFirstByte, After: w.firstByte}
	if w.started {
		cause = &TimeoutError{Kind: TimeoutIdle, After: w.idle}
	}
	w.mu.Unlock()
	w.cancel(cause)
}

// progress is called for every read of the body that returned bytes: it
// turns the first-byte timer into the idle one, and restarts it.
func (w *watchdog) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return // ended or stopped: no timer to arm
	}
	w.started = true
	switch {
	case w.timer != nil && w.idle == 0:
		w.timer.Stop()
		w.timer = nil
	case w.timer != nil:
		w.timer.Reset(w.idle)
	case w.idle > 0:
		w.timer = time.AfterFunc(w.idle, w.fire)
	}
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel(nil)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// timeout is the *TimeoutError that ended the call, or nil.
func (w *watchdog) timeout() *TimeoutError {
	te, _ := context.Cause(w.ctx).(*TimeoutError)
	return te
}

// wrap puts the watchdog in front of res's body, like bodyTap.wrap.
func (w *watchdog) wrap(res *http.Response, err error) (*http.Response, error) {
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	res.Body = &watchedBody{body: res.Body, w: w}
	return res, nil
}

type watchedBody struct {
	body io.ReadCloser
	w    *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.w.progress()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.body.Close() }

// timedOut fills e for a call that te ended: retryable unless it was the
// total timeout, which a provider slow to stream would hit again.
func timedOut(e *Error, te *TimeoutError, err error) {
	e.Retryable = te.Kind != TimeoutTotal
	e.Err = withCause(te, err)
}
