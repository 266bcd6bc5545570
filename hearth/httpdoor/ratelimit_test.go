package httpdoor

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/ndjson"
	"github.com/mnemo/mnemo/ipc"
)

const serviceToken = "service-token-0123456789"

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRateLimit: an identity past its requests a minute is answered 429
// with retry_after_ms and Retry-After, on any route (MCP's too), while
// another identity goes on; once the wait is over it is served again.
func TestRateLimit(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	lim := auth.NewLimiter(auth.LimiterOptions{PerMinute: map[auth.Actor]int{auth.ActorService: 2}, Now: clk.now})
	th := startHearth(t, func(c *testConfig) { c.Door.Auth, c.Door.Limiter = allowAll{}, lim })
	status := func(path, token string) *http.Response {
		t.Helper()
		method := "GET"
		var body any
		if path == "/mcp" {
			method, body = "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		}
		resp := th.doWith(t, method, path, body, token, "application/json")
		if resp.StatusCode != http.StatusTooManyRequests {
			resp.Body.Close()
		}
		return resp
	}
	for i, step := range []struct {
		wait       time.Duration
		path, tok  string
		want       int
		retryAfter string
	}{
		{0, "/v1/models", serviceToken, 200, ""},
		{0, "/v1/stats", serviceToken, 200, ""},
		{0, "/v1/models", serviceToken, 429, "30"},
		{0, "/mcp", serviceToken, 429, "30"},
		{0, "/v1/models", testToken, 200, ""}, // the owner is not limited
		{0, "/v1/models", testToken, 200, ""},
		{0, "/health", serviceToken, 200, ""}, // open routes take no identity
		{29 * time.Second, "/v1/models", serviceToken, 429, "1"},
		{time.Second, "/v1/models", serviceToken, 200, ""},
	} {
		clk.add(step.wait)
		resp := status(step.path, step.tok)
		if resp.StatusCode != step.want {
			t.Fatalf("step %d %s: status %d, want %d", i, step.path, resp.StatusCode, step.want)
		}
		if step.want != 429 {
			continue
		}
		if got := resp.Header.Get("Retry-After"); got != step.retryAfter {
			t.Errorf("step %d: Retry-After %q, want %q", i, got, step.retryAfter)
		}
		m := readBody(t, resp, "error")
		want := map[string]float64{"30": 30_000, "1": 1_000}[step.retryAfter]
		if m["retry_after_ms"] != want || m["error"].(map[string]any)["code"] != "rate_limited" {
			t.Errorf("step %d: body %v, want rate_limited with retry_after_ms %v", i, m, want)
		}
	}
}

// TestRateLimitSharedByDoors: one limiter behind the HTTP door and the
// NDJSON door counts an identity's requests on both.
func TestRateLimitSharedByDoors(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	lim := auth.NewLimiter(auth.LimiterOptions{PerMinute: map[auth.Actor]int{auth.ActorOwner: 2}, Now: clk.now})
	th := startHearth(t, func(c *testConfig) { c.Door.Limiter = lim })
	door, err := ndjson.New(th.core, ndjson.Options{Token: testToken, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- door.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	dctx, dcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer dcancel()
	nc, err := ipc.Dial(dctx, ln.Addr().String(), ipc.DialOptions{Token: testToken, Client: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	health := func(ref string) ipc.Msg {
		t.Helper()
		if err := nc.Send(&ipc.Health{Ref: ref}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := nc.Recv(dctx)
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *ipc.HealthReport:
				if m.Ref == ref {
					return m
				}
			case *ipc.Error:
				if m.Ref == ref {
					return m
				}
			}
		}
	}

	if resp := th.do(t, "GET", "/v1/models", nil); resp.StatusCode != 200 {
		t.Fatalf("first HTTP request: %d", resp.StatusCode)
	}
	if _, ok := health("h1").(*ipc.HealthReport); !ok {
		t.Fatal("first NDJSON request refused")
	}
	if resp := th.do(t, "GET", "/v1/models", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("HTTP past the shared limit: %d, want 429", resp.StatusCode)
	}
	if e, ok := health("h2").(*ipc.Error); !ok || e.Code != ipc.CodeRateLimited || e.RetryAfterMS != 30_000 {
		t.Fatalf("NDJSON past the shared limit: %#v, want rate_limited after 30000 ms", e)
	}
}
