package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// adapterCase builds one adapter against its protocol's stand-in.
type adapterCase struct {
	name    string
	backend func(t *testing.T, key string) llmtest.Backend
	model   func(cfg llm.Config) llm.Streamer
}

const timeoutsKey = "timeouts-SECRET-key-0123456789"

func adapters() []adapterCase {
	return []adapterCase{
		{"openai chat", func(t *testing.T, key string) llmtest.Backend { return llmtest.NewOpenAI(t, key) },
			func(cfg llm.Config) llm.Streamer { cfg.Provider = llm.ProviderOpenAI; return llm.NewOpenAI(cfg, nil) }},
		{"xai responses", func(t *testing.T, key string) llmtest.Backend { return llmtest.NewResponses(t, key) },
			func(cfg llm.Config) llm.Streamer { cfg.Provider = llm.ProviderXAI; return llm.NewResponses(cfg, nil) }},
		{"anthropic", func(t *testing.T, key string) llmtest.Backend { return llmtest.NewAnthropic(t, key) },
			func(cfg llm.Config) llm.Streamer {
				cfg.Provider = llm.ProviderAnthropic
				return llm.NewAnthropic(cfg, nil)
			}},
	}
}

// TestAdaptersHonourTimeouts runs every adapter against its stand-in in
// each hanging mode: each timeout ends the call with its own kind, the
// first-byte and idle ones retryable, the total one never. The timeouts
// are short and the stand-ins hang for good, so which one fires is
// decided by which are armed, not by the clock.
func TestAdaptersHonourTimeouts(t *testing.T) {
	const short, long = 100 * time.Millisecond, time.Hour
	stall := llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "a"}, {Text: "b"}}, StallAfter: 1}
	tests := []struct {
		name      string
		reply     llmtest.Reply
		cfg       llm.Config
		wantKind  llm.TimeoutKind
		wantRetry bool
		wantText  string
	}{
		{"silent: no headers", llmtest.Reply{Silent: true}, llm.Config{Timeout: long, FirstByteTimeout: short, IdleTimeout: long}, llm.TimeoutFirstByte, true, ""},
		{"headers, then nothing", llmtest.Reply{Hang: true}, llm.Config{Timeout: long, FirstByteTimeout: short, IdleTimeout: long}, llm.TimeoutFirstByte, true, ""},
		{"stall mid-stream", stall, llm.Config{Timeout: long, FirstByteTimeout: long / 2, IdleTimeout: short}, llm.TimeoutIdle, true, "a"},
		{"total, first byte unarmed", llmtest.Reply{Hang: true}, llm.Config{Timeout: short, FirstByteTimeout: long, IdleTimeout: long}, llm.TimeoutTotal, false, ""},
		{"total while streaming", stall, llm.Config{Timeout: short, FirstByteTimeout: long, IdleTimeout: long}, llm.TimeoutTotal, false, "a"},
	}
	for _, a := range adapters() {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				b := a.backend(t, timeoutsKey)
				b.Enqueue(tt.reply)
				cfg := tt.cfg
				cfg.BaseURL, cfg.APIKey = b.BaseURL(), timeoutsKey
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				resp, err := a.model(cfg).Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
				t.Logf("error text: %v", err)
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("Stream() error = %v, want an *llm.Error", err)
				}
				kind, after := e.Timeout()
				if kind != tt.wantKind || e.Retryable != tt.wantRetry || e.Category() != llm.CategoryTimeout || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error: timeout %v after %v, retryable %v, category %q; want timeout %v, retryable %v, category timeout, wrapping DeadlineExceeded",
						kind, after, e.Retryable, e.Category(), tt.wantKind, tt.wantRetry)
				}
				if after != short {
					t.Errorf("Timeout() after = %v, want %v", after, short)
				}
				if resp.Text != tt.wantText {
					t.Errorf("partial Text = %q, want %q", resp.Text, tt.wantText)
				}
			})
		}
	}
}

// TestAdaptersCategories checks each adapter classifies the stand-in's
// error replies alike.
func TestAdaptersCategories(t *testing.T) {
	tests := []struct {
		name      string
		reply     llmtest.Reply
		key       string
		want      llm.Category
		wantAfter time.Duration
	}{
		{"rate limited", llmtest.Reply{Status: 429, RetryAfter: 60 * time.Second}, timeoutsKey, llm.CategoryRateLimited, 60 * time.Second},
		{"server error", llmtest.Reply{Status: 500}, timeoutsKey, llm.CategoryOverloaded, 0},
		{"unavailable", llmtest.Reply{Status: 503}, timeoutsKey, llm.CategoryOverloaded, 0},
		{"wrong key", llmtest.Reply{}, "wrong-SECRET-key", llm.CategoryRejectedKey, 0},
		{"bad request", llmtest.Reply{Status: 400}, timeoutsKey, llm.CategoryBadRequest, 0},
	}
	for _, a := range adapters() {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				b := a.backend(t, timeoutsKey)
				b.Enqueue(tt.reply)
				m := a.model(llm.Config{BaseURL: b.BaseURL(), APIKey: tt.key})
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				_, err := m.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("Stream() error = %v, want an *llm.Error", err)
				}
				if e.Category() != tt.want || e.RetryAfter != tt.wantAfter {
					t.Errorf("Category() = %q, RetryAfter %v (%v); want %q, %v", e.Category(), e.RetryAfter, err, tt.want, tt.wantAfter)
				}
			})
		}
	}
}

func TestUnreachableCategory(t *testing.T) {
	refusing := llmtest.RefusedURL(t)
	for _, a := range adapters() {
		t.Run(a.name, func(t *testing.T) {
			m := a.model(llm.Config{BaseURL: refusing, APIKey: timeoutsKey})
			_, err := m.Stream(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("Stream() error = %v, want an *llm.Error", err)
			}
			if e.Category() != llm.CategoryUnreachable || e.Unreachable() != "connection refused" || !e.Retryable {
				t.Errorf("Category() = %q, Unreachable() = %q, Retryable %v (%v); want unreachable, connection refused, retryable", e.Category(), e.Unreachable(), e.Retryable, err)
			}
		})
	}
}
