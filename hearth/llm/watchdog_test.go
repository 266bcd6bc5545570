package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
)

// fakeProvider is an http.RoundTripper playing one scripted behaviour per
// request, inside a synctest bubble: every wait is on a channel or a
// timer, so the bubble's clock runs only while everything is blocked.
type fakeProvider struct {
	mu    sync.Mutex
	plays []play
	calls int
}

// play is how the fake answers one request.
type play struct {
	silent     bool          // never answer, not even headers
	status     int           // 0: 200 with an event stream
	retryAfter string        // Retry-After of an error reply
	events     string        // the stream's first bytes
	stall      bool          // after events, send nothing more
	ping       time.Duration // after events, a comment line this often, forever
}

func (f *fakeProvider) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	p := f.plays[min(f.calls, len(f.plays)-1)]
	f.calls++
	f.mu.Unlock()
	ctx := req.Context()
	if p.silent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if p.status != 0 {
		h := http.Header{"Content-Type": {"application/json"}}
		if p.retryAfter != "" {
			h.Set("Retry-After", p.retryAfter)
		}
		body := `{"error":{"message":"scripted","type":"scripted","param":null,"code":null}}`
		return &http.Response{StatusCode: p.status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       &fakeBody{ctx: ctx, data: []byte(p.events), stall: p.stall, ping: p.ping},
		Request:    req,
	}, nil
}

func (f *fakeProvider) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type fakeBody struct {
	ctx   context.Context
	data  []byte
	stall bool
	ping  time.Duration
}

func (b *fakeBody) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	switch {
	case b.ping > 0:
		t := time.NewTimer(b.ping)
		defer t.Stop()
		select {
		case <-t.C:
			return copy(p, ": ping\n\n"), nil
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	case b.stall:
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	return 0, io.EOF
}

func (b *fakeBody) Close() error { return nil }

// Chat completions events.
const (
	roleEvent = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	textEvent = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}` + "\n\n"
	doneEvent = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
)

// TestRetryingTimeouts drives Retrying over the OpenAI adapter on a fake
// clock: a provider that hangs costs first_byte × attempts plus the
// delays, not the total timeout three times; a total timeout is never
// retried; Retry-After is honoured up to its cap; OnRetry hears of each
// retry.
func TestRetryingTimeouts(t *testing.T) {
	const (
		total     = 5 * time.Minute
		firstByte = 10 * time.Second
		idle      = 20 * time.Second
	)
	tests := []struct {
		name         string
		plays        []play
		wantErr      bool
		wantKind     llm.TimeoutKind
		wantCategory llm.Category
		wantTook     time.Duration
		wantRequests int
		wantRetries  []llm.Retry
	}{
		{
			name:  "silent provider: first byte, three times",
			plays: []play{{silent: true}},
			// 3 attempts of 10s, with 250ms and 1s between them.
			wantErr: true, wantKind: llm.TimeoutFirstByte, wantCategory: llm.CategoryTimeout,
			wantTook: 3*firstByte + 250*time.Millisecond + time.Second, wantRequests: 3,
			wantRetries: []llm.Retry{
				{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryTimeout, Timeout: llm.TimeoutFirstByte, Wait: 250 * time.Millisecond},
				{Attempt: 2, MaxAttempts: 3, Category: llm.CategoryTimeout, Timeout: llm.TimeoutFirstByte, Wait: time.Second},
			},
		},
		{
			name:     "headers, then silence; then an answer",
			plays:    []play{{stall: true}, {events: roleEvent + textEvent + doneEvent}},
			wantTook: firstByte + 250*time.Millisecond, wantRequests: 2,
			wantRetries: []llm.Retry{
				{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryTimeout, Timeout: llm.TimeoutFirstByte, Wait: 250 * time.Millisecond},
			},
		},
		{
			name:     "stall before any text: idle, retried",
			plays:    []play{{events: roleEvent, stall: true}, {events: roleEvent + textEvent + doneEvent}},
			wantTook: idle + 250*time.Millisecond, wantRequests: 2,
			wantRetries: []llm.Retry{
				{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryTimeout, Timeout: llm.TimeoutIdle, Wait: 250 * time.Millisecond},
			},
		},
		{
			name:    "stall after text: idle, not retried (the text was shown)",
			plays:   []play{{events: roleEvent + textEvent, stall: true}},
			wantErr: true, wantKind: llm.TimeoutIdle, wantCategory: llm.CategoryTimeout,
			wantTook: idle, wantRequests: 1,
		},
		{
			name:    "total timeout: never retried",
			plays:   []play{{events: roleEvent, ping: idle / 2}},
			wantErr: true, wantKind: llm.TimeoutTotal, wantCategory: llm.CategoryTimeout,
			wantTook: total, wantRequests: 1,
		},
		{
			name:     "429 with Retry-After: waited for",
			plays:    []play{{status: 429, retryAfter: "20"}, {events: roleEvent + textEvent + doneEvent}},
			wantTook: 20 * time.Second, wantRequests: 2,
			wantRetries: []llm.Retry{
				{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryRateLimited, Wait: 20 * time.Second, RetryAfter: 20 * time.Second},
			},
		},
		{
			name:    "429 with a long Retry-After: capped",
			plays:   []play{{status: 429, retryAfter: "60"}},
			wantErr: true, wantCategory: llm.CategoryRateLimited,
			wantTook: 2 * llm.DefaultMaxRetryAfter, wantRequests: 3,
			wantRetries: []llm.Retry{
				{Attempt: 1, MaxAttempts: 3, Category: llm.CategoryRateLimited, Wait: llm.DefaultMaxRetryAfter, RetryAfter: time.Minute},
				{Attempt: 2, MaxAttempts: 3, Category: llm.CategoryRateLimited, Wait: llm.DefaultMaxRetryAfter, RetryAfter: time.Minute},
			},
		},
		{
			name:    "401: not retried",
			plays:   []play{{status: 401}},
			wantErr: true, wantCategory: llm.CategoryRejectedKey, wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &fakeProvider{plays: tt.plays}
				m := llm.NewOpenAI(llm.Config{
					Provider: llm.ProviderOpenAI, BaseURL: "http://model.invalid/v1",
					Timeout: total, FirstByteTimeout: firstByte, IdleTimeout: idle,
				}, &http.Client{Transport: fake})
				r := llm.NewRetrying(m, llm.RetryPolicy{})
				var retries []llm.Retry
				req := llm.Request{
					Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
					OnRetry:  func(x llm.Retry) { retries = append(retries, x) },
				}
				start := time.Now()
				resp, err := r.Stream(t.Context(), req, nil)
				took := time.Since(start)
				if took != tt.wantTook {
					t.Errorf("Stream() took %v, want %v", took, tt.wantTook)
				}
				if n := fake.requests(); n != tt.wantRequests {
					t.Errorf("provider saw %d requests, want %d", n, tt.wantRequests)
				}
				if !equalRetries(retries, tt.wantRetries) {
					t.Errorf("OnRetry calls = %+v, want %+v", retries, tt.wantRetries)
				}
				if !tt.wantErr {
					if err != nil || resp.Text != "hello" {
						t.Errorf("Stream() = %q, %v; want hello", resp.Text, err)
					}
					return
				}
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("Stream() error = %v, want an *llm.Error", err)
				}
				kind, _ := e.Timeout()
				if kind != tt.wantKind || e.Category() != tt.wantCategory || e.Attempts != tt.wantRequests {
					t.Errorf("error %v: timeout %v, category %q, attempts %d; want %v, %q, %d", err, kind, e.Category(), e.Attempts, tt.wantKind, tt.wantCategory, tt.wantRequests)
				}
			})
		})
	}
}

func equalRetries(got, want []llm.Retry) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestCategories classifies errors by status, code and transport error.
func TestCategories(t *testing.T) {
	tests := []struct {
		name string
		err  *llm.Error
		want llm.Category
	}{
		{"429", &llm.Error{Status: 429}, llm.CategoryRateLimited},
		{"401", &llm.Error{Status: 401}, llm.CategoryRejectedKey},
		{"403", &llm.Error{Status: 403}, llm.CategoryRejectedKey},
		{"500", &llm.Error{Status: 500}, llm.CategoryOverloaded},
		{"502", &llm.Error{Status: 502}, llm.CategoryOverloaded},
		{"503", &llm.Error{Status: 503}, llm.CategoryOverloaded},
		{"529", &llm.Error{Status: 529}, llm.CategoryOverloaded},
		{"400", &llm.Error{Status: 400}, llm.CategoryBadRequest},
		{"404", &llm.Error{Status: 404}, llm.CategoryBadRequest},
		{"408", &llm.Error{Status: 408}, llm.CategoryTimeout},
		{"first byte", &llm.Error{Err: &llm.TimeoutError{Kind: llm.TimeoutFirstByte, After: time.Second}}, llm.CategoryTimeout},
		{"total", &llm.Error{Err: &llm.TimeoutError{Kind: llm.TimeoutTotal, After: time.Second}}, llm.CategoryTimeout},
		{"cancelled", &llm.Error{Err: context.Canceled}, llm.CategoryCancelled},
		{"cut", &llm.Error{Err: io.ErrUnexpectedEOF}, llm.CategoryOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Category(); got != tt.want {
				t.Errorf("Category() = %q, want %q", got, tt.want)
			}
		})
	}
}
