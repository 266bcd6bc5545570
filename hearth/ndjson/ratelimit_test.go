package ndjson

import (
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRateLimited: past its identity's requests a minute, a message is
// answered with an error rate_limited carrying its ref and retry_after_ms,
// the connection open; ping is never refused; once the wait is over the
// identity is served again.
func TestRateLimited(t *testing.T) {
	clk := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	lim := auth.NewLimiter(auth.LimiterOptions{PerMinute: map[auth.Actor]int{auth.ActorOwner: 2}, Now: clk.now})
	th := startHearth(t, "", func(c *testConfig) { c.Limiter = lim })
	c := dial(t, th.addr)
	ask := func(ref string) ipc.Msg {
		t.Helper()
		if err := c.Send(&ipc.Health{Ref: ref}); err != nil {
			t.Fatal(err)
		}
		msgs := recvUntil(t, c, func(m ipc.Msg) bool {
			switch m := m.(type) {
			case *ipc.HealthReport:
				return m.Ref == ref
			case *ipc.Error:
				return m.Ref == ref
			}
			return false
		})
		return msgs[len(msgs)-1]
	}
	for _, ref := range []string{"h1", "h2"} {
		if m, ok := ask(ref).(*ipc.HealthReport); !ok {
			t.Fatalf("%s within the limit: got %#v, want a health report", ref, m)
		}
	}
	e, ok := ask("h3").(*ipc.Error)
	if !ok || e.Code != ipc.CodeRateLimited || e.RetryAfterMS != 30_000 {
		t.Fatalf("past the limit: got %#v, want rate_limited with retry_after_ms 30000", e)
	}
	if err := c.Send(&ipc.Ping{}); err != nil {
		t.Fatal(err)
	}
	recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok })
	clk.add(30 * time.Second)
	if m, ok := ask("h4").(*ipc.HealthReport); !ok {
		t.Fatalf("after the wait: got %#v, want a health report", m)
	}
	if n := lim.Limited(); n != 1 {
		t.Errorf("Limited() = %d, want 1", n)
	}
}
