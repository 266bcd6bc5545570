package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// untilError reads c until an error event (other than a tool error) and
// returns it, with the status details seen on the way.
func untilError(t *testing.T, c *ipc.Conn) (*ipc.Error, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var details []string
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("recv: %v (details so far %q)", err, details)
		}
		switch m := m.(type) {
		case *ipc.Status:
			if m.Detail != "" {
				details = append(details, m.Detail)
			}
		case *ipc.Error:
			if m.Code != ipc.CodeToolError {
				return m, details
			}
		}
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestProviderStallsAndLimits: a model that accepts the request and never
// answers costs the first-byte timeout per attempt, not the total timeout
// three times; every client is told of the retries; the message queued
// behind it is answered; a 429 with Retry-After says so and when to try
// again.
func TestProviderStallsAndLimits(t *testing.T) {
	const total = 10 * time.Minute
	model := llmtest.NewOpenAI(t, "sk-test")
	env := append(openaiEnv(model),
		"MNEMO_MODEL_TIMEOUT="+total.String(),
		"MNEMO_MODEL_FIRST_BYTE_TIMEOUT=300ms",
		"MNEMO_MODEL_IDLE_TIMEOUT=300ms",
	)
	d := startDaemon(t, t.TempDir(), env)
	sender, watcher := mustDial(t, d.Addr), mustDial(t, d.Addr)

	t.Run("hanging model", func(t *testing.T) {
		model.Enqueue(llmtest.Reply{Silent: true}, llmtest.Reply{Hang: true}, llmtest.Reply{Silent: true})
		start := time.Now()
		if err := sender.Send(&ipc.Message{Content: "first", Ref: "f"}); err != nil {
			t.Fatal(err)
		}
		if err := sender.Send(&ipc.Message{Content: "second", Ref: "s"}); err != nil {
			t.Fatal(err)
		}
		herr, _ := untilError(t, sender)
		took := time.Since(start)
		want := "the model provider did not answer within 300ms; tried 3 times"
		if herr.Code != ipc.CodeProviderError || herr.Ref != "f" || !strings.HasPrefix(herr.Message, want) {
			t.Errorf("error = %+v, want provider_error for f starting %q", herr, want)
		}
		if took >= total {
			t.Errorf("the hung call took %v, not less than the %v total timeout", took, total)
		}
		_, details := untilError(t, watcher)
		for _, d := range []string{"provider not responding, retry 2/3 in ", "provider not responding, retry 3/3 in "} {
			if !hasPrefix(details, d) {
				t.Errorf("the other client saw details %q, want one starting %q", details, d)
			}
		}
		if n := len(model.Requests()); n != 3 {
			t.Errorf("stand-in saw %d requests for the hung message, want 3", n)
		}
		// The message queued behind it is answered.
		text, done, herr := reply(t, sender)
		if herr != nil || done == nil || text != "echo: second" {
			t.Errorf("second message: streamed %q, done %+v, error %+v; want the echo", text, done, herr)
		}
		reply(t, watcher)
	})

	t.Run("rate limited", func(t *testing.T) {
		limited := llmtest.Reply{Status: 429, RetryAfter: time.Second}
		model.Enqueue(limited, limited, limited)
		if err := sender.Send(&ipc.Message{Content: "third", Ref: "t"}); err != nil {
			t.Fatal(err)
		}
		herr, _ := untilError(t, sender)
		want := "the model provider is rate limiting; tried 3 times — try again in 1 s"
		if herr.Code != ipc.CodeProviderError || herr.Message != want {
			t.Errorf("error = %+v, want provider_error %q", herr, want)
		}
		_, details := untilError(t, watcher)
		if !hasPrefix(details, "provider rate limiting, retry 2/3 in 1 s") {
			t.Errorf("the other client saw details %q, want the rate limit retry", details)
		}
	})
}
