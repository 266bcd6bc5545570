package llm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// step is one scripted attempt of a fakeStreamer: text deltas, then err
// (nil for success).
type step struct {
	texts []string
	err   error
}

// fakeStreamer plays steps in order and records when each attempt began.
// It is used inside synctest bubbles, where time.Now is the fake clock.
type fakeStreamer struct {
	steps []step
	start time.Time
	at    []time.Duration
}

func (f *fakeStreamer) Name() string  { return "fake" }
func (f *fakeStreamer) Model() string { return "fake-model" }

func (f *fakeStreamer) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	f.at = append(f.at, time.Since(f.start))
	if len(f.at) > len(f.steps) {
		return llm.Response{}, errors.New("fakeStreamer: more attempts than steps")
	}
	s := f.steps[len(f.at)-1]
	var resp llm.Response
	for _, t := range s.texts {
		resp.Text += t
		if onText != nil {
			onText(t)
		}
	}
	if s.err == nil {
		resp.FinishReason = "stop"
	}
	return resp, s.err
}

func status(code int, retryable bool, retryAfter time.Duration) *llm.Error {
	return &llm.Error{Provider: "fake", Status: code, Retryable: retryable, RetryAfter: retryAfter, Err: errors.New("scripted")}
}

func TestRetrying(t *testing.T) {
	ok := step{texts: []string{"fine"}}
	e503 := func() step { return step{err: status(503, true, 0)} }
	tests := []struct {
		name       string
		policy     llm.RetryPolicy
		steps      []step
		wantAt     []time.Duration // when each attempt began
		wantErrIdx int             // index of the step whose error is returned; -1 for success
		wantText   []string        // onText calls
	}{
		{
			name:       "429, 429, then success",
			steps:      []step{{err: status(429, true, 0)}, {err: status(429, true, 0)}, ok},
			wantAt:     []time.Duration{0, 250 * time.Millisecond, 1250 * time.Millisecond},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "Retry-After honoured",
			steps:      []step{{err: status(429, true, 5*time.Second)}, ok},
			wantAt:     []time.Duration{0, 5 * time.Second},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "Retry-After shorter than the delay",
			steps:      []step{{err: status(503, true, 100*time.Millisecond)}, ok},
			wantAt:     []time.Duration{0, 250 * time.Millisecond},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "Retry-After capped by default",
			steps:      []step{{err: status(429, true, 10*time.Minute)}, ok},
			wantAt:     []time.Duration{0, 30 * time.Second},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "Retry-After capped by the policy",
			policy:     llm.RetryPolicy{MaxRetryAfter: 2 * time.Second},
			steps:      []step{{err: status(429, true, time.Minute)}, ok},
			wantAt:     []time.Duration{0, 2 * time.Second},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "three 503s give the last error",
			steps:      []step{e503(), e503(), e503()},
			wantAt:     []time.Duration{0, 250 * time.Millisecond, 1250 * time.Millisecond},
			wantErrIdx: 2,
		},
		{
			name:       "more attempts use the last delay again",
			policy:     llm.RetryPolicy{MaxAttempts: 5},
			steps:      []step{e503(), e503(), e503(), e503(), e503()},
			wantAt:     []time.Duration{0, 250 * time.Millisecond, 1250 * time.Millisecond, 3250 * time.Millisecond, 5250 * time.Millisecond},
			wantErrIdx: 4,
		},
		{
			name:       "custom delays",
			policy:     llm.RetryPolicy{Delays: []time.Duration{time.Second}},
			steps:      []step{e503(), {err: status(502, true, 0)}, ok},
			wantAt:     []time.Duration{0, time.Second, 2 * time.Second},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "one attempt only",
			policy:     llm.RetryPolicy{MaxAttempts: 1},
			steps:      []step{e503()},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "transport failure retried",
			steps:      []step{{err: status(0, true, 0)}, ok},
			wantAt:     []time.Duration{0, 250 * time.Millisecond},
			wantErrIdx: -1,
			wantText:   []string{"fine"},
		},
		{
			name:       "400 not retried",
			steps:      []step{{err: status(400, false, 0)}},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "retryable 408 not retried: no 4xx but 429",
			steps:      []step{{err: status(408, true, 0)}},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "429 marked not retryable",
			steps:      []step{{err: status(429, false, time.Second)}},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "caller cancellation not retried",
			steps:      []step{{err: &llm.Error{Provider: "fake", Err: context.Canceled}}},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "not an *llm.Error",
			steps:      []step{{err: errors.New("plain")}},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
		},
		{
			name:       "partial stream then cut",
			steps:      []step{{texts: []string{"par", "tial"}, err: status(0, true, 0)}, ok},
			wantAt:     []time.Duration{0},
			wantErrIdx: 0,
			wantText:   []string{"par", "tial"},
		},
		{
			name:       "text only from the attempt that succeeds",
			steps:      []step{e503(), {texts: []string{"a", "b"}}},
			wantAt:     []time.Duration{0, 250 * time.Millisecond},
			wantErrIdx: -1,
			wantText:   []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeStreamer{steps: tt.steps, start: time.Now()}
				var texts []string
				_, err := llm.NewRetrying(f, tt.policy).Stream(t.Context(), hello, collect(&texts))
				if diff := cmp.Diff(tt.wantAt, f.at); diff != "" {
					t.Errorf("attempt times mismatch (-want +got):\n%s", diff)
				}
				var wantErr error
				if tt.wantErrIdx >= 0 {
					wantErr = tt.steps[tt.wantErrIdx].err
				}
				if err != wantErr {
					t.Errorf("Stream() error = %v, want step %d's error %v", err, tt.wantErrIdx, wantErr)
				}
				if diff := cmp.Diff(tt.wantText, texts); diff != "" {
					t.Errorf("onText calls mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestRetryingCancelDuringWait(t *testing.T) {
	tests := []struct {
		name    string
		policy  llm.RetryPolicy
		wantErr error
	}{
		{name: "timer", wantErr: context.Canceled},
		{
			name: "custom sleep",
			policy: llm.RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
				<-ctx.Done()
				return context.Cause(ctx)
			}},
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				last := status(429, true, time.Hour)
				f := &fakeStreamer{steps: []step{{err: last}, {}}, start: time.Now()}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				time.AfterFunc(100*time.Millisecond, cancel)
				_, err := llm.NewRetrying(f, tt.policy).Stream(ctx, hello, nil)
				if took := time.Since(f.start); took != 100*time.Millisecond {
					t.Errorf("Stream() returned after %v, want 100ms (at the cancel)", took)
				}
				var e *llm.Error
				if !errors.As(err, &e) || e.Retryable || !errors.Is(err, tt.wantErr) || !errors.Is(err, last) {
					t.Errorf("Stream() error = %v, want a non-retryable *llm.Error wrapping %v and the last failure", err, tt.wantErr)
				}
				if len(f.at) != 1 {
					t.Errorf("made %d attempts, want 1", len(f.at))
				}
			})
		})
	}
}

// TestRetryingDeadline checks a wait that would outlast ctx's deadline is
// not started.
func TestRetryingDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := status(429, true, 5*time.Second)
		f := &fakeStreamer{steps: []step{{err: status(503, true, 0)}, {err: last}, {}}, start: time.Now()}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := llm.NewRetrying(f, llm.RetryPolicy{}).Stream(ctx, hello, nil)
		if err != last {
			t.Errorf("Stream() error = %v, want the 429 that asked for a wait past the deadline", err)
		}
		if diff := cmp.Diff([]time.Duration{0, 250 * time.Millisecond}, f.at); diff != "" {
			t.Errorf("attempt times mismatch (-want +got):\n%s", diff)
		}
		if took := time.Since(f.start); took != 250*time.Millisecond {
			t.Errorf("Stream() returned after %v, want 250ms (no wait for the Retry-After)", took)
		}
	})
}

// TestRetryingOpenAI drives the real adapter against the stand-in: the
// Retry-After the stand-in sends reaches the wait.
func TestRetryingOpenAI(t *testing.T) {
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		wantWaits []time.Duration
		wantErr   bool
		wantText  string
	}{
		{
			name:      "retry-after-ms honoured",
			replies:   []llmtest.Reply{{Status: 429, RetryAfter: 1500 * time.Millisecond}, {Chunks: chunks("ok")}},
			wantWaits: []time.Duration{1500 * time.Millisecond},
			wantText:  "ok",
		},
		{
			name:      "server errors then success",
			replies:   []llmtest.Reply{{Status: 500}, {Status: 503}, {Chunks: chunks("o", "k")}},
			wantWaits: []time.Duration{250 * time.Millisecond, time.Second},
			wantText:  "ok",
		},
		{
			name:      "bad gateway then success",
			replies:   []llmtest.Reply{{Status: 502}, {Chunks: chunks("ok")}},
			wantWaits: []time.Duration{250 * time.Millisecond},
			wantText:  "ok",
		},
		{
			name:      "cut before any text",
			replies:   []llmtest.Reply{{CutAfter: 1}, {Chunks: chunks("ok")}},
			wantWaits: []time.Duration{250 * time.Millisecond},
			wantText:  "ok",
		},
		{
			name:      "rate limited three times",
			replies:   []llmtest.Reply{{Status: 429}, {Status: 429}, {Status: 429}},
			wantWaits: []time.Duration{250 * time.Millisecond, time.Second},
			wantErr:   true,
		},
		{
			name:     "cut after text",
			replies:  []llmtest.Reply{{Chunks: chunks("par", "tial"), CutAfter: 1}},
			wantErr:  true,
			wantText: "par",
		},
		{
			name:    "context overflow",
			replies: []llmtest.Reply{{Status: 400, ErrorCode: "context_length_exceeded"}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, secretKey)
			srv.Enqueue(tt.replies...)
			var waits []time.Duration
			r := llm.NewRetrying(newAdapter(srv, secretKey, nil), llm.RetryPolicy{
				Sleep: func(ctx context.Context, d time.Duration) error {
					waits = append(waits, d)
					return nil
				},
			})
			var texts []string
			resp, err := r.Stream(t.Context(), hello, collect(&texts))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stream() error = %v, want error: %v", err, tt.wantErr)
			}
			if got := strings.Join(texts, ""); got != tt.wantText || (!tt.wantErr && resp.Text != tt.wantText) {
				t.Errorf("onText %q, Response.Text %q; want %q", got, resp.Text, tt.wantText)
			}
			if diff := cmp.Diff(tt.wantWaits, waits, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("waits mismatch (-want +got):\n%s", diff)
			}
			if got, want := len(srv.Requests()), len(tt.replies); got != want {
				t.Errorf("stand-in saw %d requests, want %d", got, want)
			}
		})
	}
}

// TestRetryingLog checks each retry is logged with its status, attempt and
// wait, and without the API key even when the provider echoes it.
func TestRetryingLog(t *testing.T) {
	url := rawServer(t, 503, "application/json", `{"error":{"message":"overloaded for key {{key}}","type":"server_error"}}`)
	var logged bytes.Buffer
	r := llm.NewRetrying(llm.NewOpenAI(llm.Config{Provider: "xai", Model: "grok-test", BaseURL: url, APIKey: secretKey}, nil), llm.RetryPolicy{
		Sleep: func(context.Context, time.Duration) error { return nil },
		Log:   slog.New(slog.NewTextHandler(&logged, nil)),
	})
	_, err := r.Stream(t.Context(), hello, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != 503 {
		t.Fatalf("Stream() error = %v, want the last 503", err)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2 (one per retry):\n%s", len(lines), logged.String())
	}
	for i, want := range [][]string{
		{"level=WARN", "provider=xai", "status=503", "attempt=1", "max_attempts=3", "wait=250ms"},
		{"status=503", "attempt=2", "wait=1s"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("log line %d = %q, want it to contain %q", i, lines[i], w)
			}
		}
	}
	if strings.Contains(logged.String(), secretKey) {
		t.Errorf("log contains the API key:\n%s", logged.String())
	}
}

func TestRetryingDelegates(t *testing.T) {
	f := &fakeStreamer{}
	r := llm.NewRetrying(f, llm.RetryPolicy{})
	if r.Name() != "fake" || r.Model() != "fake-model" {
		t.Errorf("Name(), Model() = %q, %q; want %q, %q", r.Name(), r.Model(), "fake", "fake-model")
	}
}
