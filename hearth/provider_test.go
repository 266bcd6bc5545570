package hearth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
)

// retryingModel plays a model call that fails once and is retried: it
// tells the request's OnRetry, waits for the test, then answers.
type retryingModel struct {
	retry   llm.Retry
	release chan struct{}
}

func (m *retryingModel) Name() string  { return "xai" }
func (m *retryingModel) Model() string { return "grok-test" }
func (m *retryingModel) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	if req.OnRetry == nil {
		return llm.Response{}, errors.New("the core set no OnRetry")
	}
	req.OnRetry(m.retry)
	select {
	case <-m.release:
	case <-ctx.Done():
		return llm.Response{}, context.Cause(ctx)
	}
	onText("at last")
	return llm.Response{Text: "at last", Model: "grok-test"}, nil
}

// failingModel fails every call with err.
type failingModel struct{ err error }

func (m failingModel) Name() string  { return "xai" }
func (m failingModel) Model() string { return "grok-test" }
func (m failingModel) Stream(context.Context, llm.Request, func(string)) (llm.Response, error) {
	return llm.Response{}, m.err
}

func startCoreWith(t *testing.T, m hearth.Model) *hearth.Hearth {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() }) // after the core stops: cleanups run last first
	return runCore(t, hearth.Config{Journal: j, Models: fixed{m}, ShutdownGrace: 5 * time.Second})
}

// TestRetryDetailPublished: a model call being retried is told to every
// subscriber as the thinking state's detail, is in the snapshot of one
// that joins meanwhile, and is cleared when the reply comes.
func TestRetryDetailPublished(t *testing.T) {
	m := &retryingModel{
		retry:   llm.Retry{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryTimeout, Timeout: llm.TimeoutFirstByte, Wait: 3500 * time.Millisecond},
		release: make(chan struct{}),
	}
	h := startCoreWith(t, m)
	first := newRecorder()
	first.watch(t, h, hearth.WatchOptions{})
	if err := h.Send("r1", "hello?"); err != nil {
		t.Fatal(err)
	}
	const want = "provider not responding, retry 2/3 in 4 s"
	first.waitFor(t, func(e hearth.Event) bool {
		s, ok := e.(*hearth.StateChanged)
		return ok && s.State == hearth.StateThinking && s.Detail == want
	})

	late := newRecorder()
	late.watch(t, h, hearth.WatchOptions{})
	late.waitFor(t, func(hearth.Event) bool { return true })
	snap, ok := late.snapshot()[0].(*hearth.Snapshot)
	if !ok || snap.State != hearth.StateThinking || snap.Detail != want {
		t.Fatalf("late subscriber's first event = %+v, want a thinking snapshot with detail %q", late.snapshot()[0], want)
	}

	close(m.release)
	first.waitFor(t, isIdle)
	// After the detail: a thinking state without it, before the first token.
	var cleared, token bool
	seenDetail := false
	for _, e := range first.snapshot() {
		switch e := e.(type) {
		case *hearth.StateChanged:
			if e.Detail == want {
				seenDetail = true
			} else if seenDetail && e.State == hearth.StateThinking && e.Detail == "" && !token {
				cleared = true
			}
		case *hearth.Token:
			token = true
		}
	}
	if !cleared {
		t.Errorf("the retry detail was not cleared before the reply streamed: %s", kinds(first.snapshot()))
	}
	if got := text(first.snapshot()); got != "at last" {
		t.Errorf("reply = %q, want %q", got, "at last")
	}
}

// TestProviderProblemMessages: a failed turn's problem names what went
// wrong and what to do, never the provider's text or a secret.
func TestProviderProblemMessages(t *testing.T) {
	const secret = "sk-SECRET-in-the-body"
	body := errors.New("HTTP error body mentioning " + secret + " and https://user:" + secret + "@proxy")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  *llm.Error
		want string
	}{
		{"rate limited", &llm.Error{Provider: "xai", Status: 429, Retryable: true, RetryAfter: time.Minute, Attempts: 3, Err: body},
			"the model provider is rate limiting; tried 3 times — try again in 60 s"},
		{"unreachable", &llm.Error{Provider: "xai", Retryable: true, Attempts: 3, Err: refused},
			"the model provider is unreachable (connection refused); tried 3 times — check XAI_BASE_URL (model.xai_base_url) and the network"},
		{"first byte", &llm.Error{Provider: "xai", Retryable: true, Attempts: 3, Err: &llm.TimeoutError{Kind: llm.TimeoutFirstByte, After: time.Minute}},
			"the model provider did not answer within 1m0s; tried 3 times — try again later, or raise model.first_byte_timeout"},
		{"idle", &llm.Error{Provider: "xai", Retryable: true, Attempts: 1, Err: &llm.TimeoutError{Kind: llm.TimeoutIdle, After: 30 * time.Second}},
			"the model provider stopped answering for 30s mid-reply — try again later, or raise model.idle_timeout"},
		{"total", &llm.Error{Provider: "xai", Attempts: 1, Err: &llm.TimeoutError{Kind: llm.TimeoutTotal, After: 5 * time.Minute}},
			"the model provider did not finish the reply within 5m0s (model.timeout)"},
		{"rejected key", &llm.Error{Provider: "anthropic", Status: 401, Attempts: 1, Err: body},
			"the model provider rejected the API key (HTTP 401) — set ANTHROPIC_API_KEY to a valid key"},
		{"overloaded", &llm.Error{Provider: "xai", Status: 503, Retryable: true, Attempts: 3, Err: body},
			"the model provider is overloaded or failing (HTTP 503; tried 3 times) — try again later"},
		{"bad request", &llm.Error{Provider: "xai", Status: 400, Attempts: 1, Err: body},
			"the model provider refused the request (HTTP 400); details are in hearth's log"},
		{"cut mid-reply", &llm.Error{Provider: "xai", Attempts: 1, Err: fmt.Errorf("reading the reply stream: %w", io.ErrUnexpectedEOF)},
			"the connection to the model provider broke mid-reply — try again"},
		{"reset", &llm.Error{Provider: "xai", Retryable: true, Attempts: 3, Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
			"the connection to the model provider broke mid-reply; tried 3 times — try again"},
		{"other", &llm.Error{Provider: "xai", Attempts: 1, Err: body},
			"the model provider failed to answer; details are in hearth's log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startCoreWith(t, failingModel{err: tt.err})
			r := newRecorder()
			r.watch(t, h, hearth.WatchOptions{})
			if err := h.Send("r1", "hello?"); err != nil {
				t.Fatal(err)
			}
			var p *hearth.Problem
			r.waitFor(t, func(e hearth.Event) bool {
				p, _ = e.(*hearth.Problem)
				return p != nil
			})
			if p.Code != hearth.CodeProviderError || p.Message != tt.want || p.Ref != "r1" {
				t.Errorf("problem = %+v, want provider_error %q", p, tt.want)
			}
			if strings.Contains(p.Message, secret) || strings.Contains(p.Message, "http") {
				t.Errorf("problem %q shows the provider's text", p.Message)
			}
		})
	}
}
