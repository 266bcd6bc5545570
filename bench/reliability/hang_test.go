package reliability

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// The hang tests start the real hearth against a stand-in dependency
// that stalls or dies mid-call (DESIGN.md, Reliability: Hangs), and check
// from an NDJSON client that the turn ends with a clear error (or a
// degraded answer) within the configured timeout, that health answers
// meanwhile, that the next turn works once the dependency is back, and
// that hearth still exits on SIGTERM while it hangs. A stand-in hangs by
// waiting on a channel the test closes (or on the test's end), never on
// a timer.

// hangGrace is hearth's ShutdownGrace: how long a turn in flight may
// go on after SIGTERM before it is cancelled.
const hangGrace = 10 * time.Second

// startHung runs hearth on a fresh root with env.
func startHung(t *testing.T, env []string, args ...string) *hearthtest.Daemon {
	t.Helper()
	return hearthtest.Start(t, hearthBin, hearthtest.Options{Root: filepath.Join(t.TempDir(), "root"), Env: env, Args: args})
}

// dialHung connects the owner's NDJSON client.
func dialHung(t *testing.T, d *hearthtest.Daemon) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, d.Addr, ipc.DialOptions{Token: hearthtest.Token, Client: "hang-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hangAwait reads c until match says yes, for at most limit, and returns the
// message matched.
func hangAwait(t *testing.T, c *ipc.Conn, limit time.Duration, what string, match func(ipc.Msg) bool) ipc.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("awaiting %s (at most %v): %v", what, limit, err)
		}
		if match(m) {
			return m
		}
	}
}

// hangSend sends m on c.
func hangSend(t *testing.T, c *ipc.Conn, m ipc.Msg) {
	t.Helper()
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
}

// hangTurnEnd matches the end of the turn asked with ref: its reply (done)
// or its error. A reply cut short (done, incomplete) is followed by the
// error that cut it: it is kept in *partial and the error awaited.
func hangTurnEnd(ref string, partial **ipc.Done) func(ipc.Msg) bool {
	return func(m ipc.Msg) bool {
		switch m := m.(type) {
		case *ipc.Done:
			if !m.Turn.Incomplete {
				return true
			}
			if partial != nil {
				*partial = m
			}
		case *ipc.Error:
			// tool_error only tells of a failed tool: the turn goes on.
			return m.Ref == ref && m.Code != ipc.CodeToolError
		}
		return false
	}
}

// hangAsk sends a message and returns how its turn ended (done or error) and
// how long that took, failing after limit.
func hangAsk(t *testing.T, c *ipc.Conn, text, ref string, limit time.Duration) (ipc.Msg, time.Duration) {
	t.Helper()
	start := time.Now()
	hangSend(t, c, &ipc.Message{Content: text, Ref: ref})
	m := hangAwait(t, c, limit, "the end of turn "+ref, hangTurnEnd(ref, nil))
	return m, time.Since(start)
}

// hangReply checks that a turn ended with a reply containing want.
func hangReply(t *testing.T, m ipc.Msg, want string) {
	t.Helper()
	d, ok := m.(*ipc.Done)
	if !ok {
		t.Fatalf("turn ended with %T %+v, want a reply", m, m)
	}
	if !strings.Contains(d.Turn.Content, want) {
		t.Errorf("reply %q, want it to contain %q", d.Turn.Content, want)
	}
}

// hangHealthy asks for a health report while something hangs: it must come
// within 10 s (it takes milliseconds; the bound is for a loaded machine).
func hangHealthy(t *testing.T, c *ipc.Conn, ref string) *ipc.HealthReport {
	t.Helper()
	hangSend(t, c, &ipc.Health{Ref: ref})
	return hangAwait(t, c, 10*time.Second, "health during the hang", func(m ipc.Msg) bool {
		r, ok := m.(*ipc.HealthReport)
		return ok && r.Ref == ref
	}).(*ipc.HealthReport)
}

// hangWait polls cond (a stand-in's request count, hearth's hangHealth)
// until it holds, failing after 30 s: a wait on a condition.
func hangWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("waiting for %s: %v", what, t.Context().Err())
		}
	}
}

// hangStop sends SIGTERM and wants a clean exit within limit.
func hangStop(t *testing.T, d *hearthtest.Daemon, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.Exited(t, limit); err != nil {
		t.Errorf("hearth's exit on SIGTERM: %v", err)
	}
	return time.Since(start)
}

// Short model timeouts, so that a hung provider costs a second or two.
var hangFastModel = []string{"MNEMO_MODEL_FIRST_BYTE_TIMEOUT=400ms", "MNEMO_MODEL_IDLE_TIMEOUT=400ms", "MNEMO_MODEL_TIMEOUT=20s"}

// A model provider that hangs before the first byte, goes silent
// mid-stream or cuts the connection mid-stream: the turn ends with a
// provider_error saying what happened within the configured timeouts
// (three first-byte timeouts and two retry waits for a provider that
// never answers; one idle timeout once text has streamed, which is never
// retried), health answers meanwhile, the next turn is answered, and
// SIGTERM while the provider hangs again ends hearth cleanly.
func TestProviderHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	for _, tc := range []struct {
		name    string
		replies []llmtest.Reply
		want    string        // in the error's message
		within  time.Duration // the error comes before
	}{
		{"hangs before the first byte", []llmtest.Reply{{Silent: true}, {Silent: true}, {Silent: true}},
			"did not answer within 400ms; tried 3 times", 3*400*time.Millisecond + 1250*time.Millisecond + 5*time.Second},
		{"hangs mid-stream", []llmtest.Reply{{Chunks: []llmtest.Chunk{{Text: "half of "}, {Text: "a reply"}}, StallAfter: 1}},
			"stopped answering for 400ms mid-reply", 400*time.Millisecond + 5*time.Second},
		{"closes the connection mid-stream", []llmtest.Reply{{Chunks: []llmtest.Chunk{{Text: "half of "}, {Text: "a reply"}}, CutAfter: 1}},
			"the connection to the model provider broke mid-reply — try again", 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, append(hearthtest.OpenAIEnv(model), hangFastModel...))
			c := dialHung(t, d)

			model.Enqueue(tc.replies...)
			start := time.Now()
			hangSend(t, c, &ipc.Message{Content: "are you there?", Ref: "m1"})
			hangWait(t, "the request at the provider", func() bool { return len(model.Requests()) >= 1 })
			// Health answers while the turn is at the provider. The turn
			// may end first (a cut connection fails it at once, and a
			// loaded machine may be slower than a 400 ms timeout), so
			// both are awaited together, and the state is checked only
			// when health came first on a provider that holds the turn.
			hangSend(t, c, &ipc.Health{Ref: "h1"})
			var (
				partial     *ipc.Done
				health      *ipc.HealthReport
				healthFirst bool
				end         ipc.Msg
				took        time.Duration
			)
			turnEnd := hangTurnEnd("m1", &partial)
			hangAwait(t, c, 30*time.Second, "health and the failed turn", func(m ipc.Msg) bool {
				if r, ok := m.(*ipc.HealthReport); ok && r.Ref == "h1" {
					health, healthFirst = r, end == nil
				} else if end == nil && turnEnd(m) {
					end, took = m, time.Since(start)
				}
				return health != nil && end != nil
			})
			if held := tc.replies[0].CutAfter == 0; held && healthFirst && health.State != "thinking" {
				t.Errorf("health during the hang: state %q, want thinking", health.State)
			}
			e, ok := end.(*ipc.Error)
			if !ok || e.Code != ipc.CodeProviderError || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("turn ended with %T %+v, want provider_error saying %q", end, end, tc.want)
			}
			if took > tc.within {
				t.Errorf("the turn took %v to fail, want under %v", took, tc.within)
			}
			t.Logf("failed in %v: %s", took.Round(time.Millisecond), e.Message)
			if streamed := tc.replies[0].StallAfter+tc.replies[0].CutAfter > 0; streamed && (partial == nil || partial.Turn.Content != "half of ") {
				t.Errorf("what streamed before the fault: %+v, want %q stored incomplete", partial, "half of ")
			}
			if got, want := len(model.Requests()), len(tc.replies); got != want {
				t.Errorf("%d requests at the provider, want %d", got, want)
			}

			m, _ := hangAsk(t, c, "are you back?", "m2", 30*time.Second)
			hangReply(t, m, "echo: are you back?")

			// Hung again, and hearth is stopped meanwhile.
			n := len(model.Requests())
			model.Enqueue(tc.replies...)
			hangSend(t, c, &ipc.Message{Content: "one more?", Ref: "m3"})
			hangWait(t, "the request at the provider", func() bool { return len(model.Requests()) > n })
			took = hangStop(t, d, hangGrace+5*time.Second)
			t.Logf("stopped in %v", took.Round(time.Millisecond))
		})
	}
}

// A provider that hangs for longer than hearth will wait on shutdown (its
// timeouts at their defaults, a minute each): SIGTERM cancels the call
// once ShutdownGrace has passed, hearth stores what it has and exits
// cleanly; the next start answers.
func TestProviderHangShutdownGrace(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	opts := hearthtest.Options{Root: root, Env: hearthtest.OpenAIEnv(model)}
	d := hearthtest.Start(t, hearthBin, opts)
	c := dialHung(t, d)
	model.Enqueue(llmtest.Reply{Silent: true})
	hangSend(t, c, &ipc.Message{Content: "are you there?", Ref: "m1"})
	hangWait(t, "the request at the provider", func() bool { return len(model.Requests()) >= 1 })
	took := hangStop(t, d, hangGrace+5*time.Second)
	if took < hangGrace-time.Second {
		t.Errorf("hearth stopped in %v, before the grace of %v it gives the turn in flight", took, hangGrace)
	}
	t.Logf("stopped in %v with the provider hung", took.Round(time.Millisecond))

	d = hearthtest.Start(t, hearthBin, opts)
	c = dialHung(t, d)
	m, _ := hangAsk(t, c, "back again", "m2", 30*time.Second)
	hangReply(t, m, "echo: back again")
	page := func() *ipc.HistoryPage {
		hangSend(t, c, &ipc.HistoryQuery{Ref: "q"})
		return hangAwait(t, c, 10*time.Second, "history", func(m ipc.Msg) bool { p, ok := m.(*ipc.HistoryPage); return ok && p.Ref == "q" }).(*ipc.HistoryPage)
	}()
	var asked bool
	for _, turn := range page.Turns {
		asked = asked || turn.Content == "are you there?"
	}
	if !asked {
		t.Errorf("the message asked while the provider hung is not in history: %s", fmt.Sprint(page.Turns))
	}
	d.Stop(t)
}
