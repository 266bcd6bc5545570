package httpdoor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
)

const chatOK = `{"model":"mnemo","messages":[{"role":"user","content":"hi"}]}`

// Bad input is refused before it reaches the core, each kind with its own
// status, in the one error shape with a request id.
func TestBadInput(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Door.MaxBody = 4 << 10 })
	big := `{"model":"mnemo","messages":[{"role":"user","content":"` + strings.Repeat("x", 5<<10) + `"}]}`
	for _, tc := range []struct {
		name, method, path, body, token, ctype string
		status                                 int
		code                                   string
		clarify                                map[string]string // field → list it must be in
	}{
		{name: "oversize", path: "/v1/chat/completions", body: big, status: 413, code: "body_too_large"},
		{name: "wrong content type", path: "/v1/chat/completions", body: chatOK, ctype: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "no content type", path: "/v1/query", body: `{"query":"x"}`, ctype: "-", status: 415},
		{name: "malformed json", path: "/v1/chat/completions", body: `{"model":"mnemo",`, status: 400, code: "bad_request"},
		{name: "two values", path: "/v1/query", body: `{"query":"x"} {}`, status: 400},
		{name: "unknown field", path: "/v1/chat/completions", body: `{"model":"mnemo","messages":[{"role":"user","content":"hi"}],"tools_please":1}`, status: 422, code: "invalid_fields", clarify: map[string]string{"tools_please": "unknown_fields"}},
		{name: "unknown nested field", path: "/v1/ingest", body: `{"source":"s","documents":[{"content":"c","colour":"red"}]}`, status: 422, clarify: map[string]string{"documents[0].colour": "unknown_fields"}},
		{name: "missing field", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"hi"}]}`, status: 422, clarify: map[string]string{"model": "missing_fields"}},
		{name: "bad type", path: "/v1/query", body: `{"query":42}`, status: 422, clarify: map[string]string{"query": "bad_types"}},
		{name: "out of range", path: "/v1/query", body: `{"query":"x","top_k":500}`, status: 422, clarify: map[string]string{"top_k": "out_of_range"}},
		{name: "bad enum", path: "/v1/chat/completions", body: `{"model":"mnemo","messages":[{"role":"wizard","content":"hi"}]}`, status: 422, clarify: map[string]string{"messages[0].role": "out_of_range"}},
		{name: "n above 1", path: "/v1/chat/completions", body: `{"model":"mnemo","n":2,"messages":[{"role":"user","content":"hi"}]}`, status: 422, clarify: map[string]string{"n": "out_of_range"}},
		{name: "no user message", path: "/v1/chat/completions", body: `{"model":"mnemo","messages":[{"role":"system","content":"hi"}]}`, status: 422},
		{name: "no token", path: "/v1/chat/completions", body: chatOK, token: "-", status: 401, code: "unauthenticated"},
		{name: "wrong token", path: "/v1/chat/completions", body: chatOK, token: "wrong-token-0123456789", status: 401, code: "unauthenticated"},
		{name: "wrong token on stats", method: "GET", path: "/v1/stats", token: "wrong-token-0123456789", status: 401},
		{name: "service on detailed health", method: "GET", path: "/health/detailed", token: "service-token-0123456789", status: 403, code: "forbidden"},
		{name: "service on chat", path: "/v1/chat/completions", body: chatOK, token: "service-token-0123456789", status: 403},
		{name: "unknown route", method: "GET", path: "/v2/nothing", status: 404, code: "not_found"},
		{name: "wrong method", method: "GET", path: "/v1/chat/completions", status: 405, code: "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := cmpStr(tc.method, "POST")
			token := cmpStr(tc.token, testToken)
			if token == "-" {
				token = ""
			}
			ctype := cmpStr(tc.ctype, "application/json")
			if ctype == "-" {
				ctype = ""
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			resp := th.doWith(t, method, tc.path, body, token, ctype)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			m := readBody(t, resp, "error")
			e := m["error"].(map[string]any)
			if tc.code != "" && e["code"] != tc.code {
				t.Fatalf("code %v, want %s", e["code"], tc.code)
			}
			for field, list := range tc.clarify {
				cl, _ := m["clarify"].(map[string]any)
				if cl == nil || !strings.Contains(fmt.Sprint(cl[list]), field) {
					t.Fatalf("clarify.%s lacks %s: %v", list, field, m["clarify"])
				}
			}
			if tc.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
	if n := len(th.history(t)); n != 0 {
		t.Fatalf("refused requests reached the journal: %d records", n)
	}
}

// A throttled source gets 429 with Retry-After and retry_after_ms.
func TestThrottled(t *testing.T) {
	th := startHearth(t, func(c *testConfig) {
		c.Door.Auth = roleAuth{SharedToken: auth.SharedToken{Token: testToken}, throttled: true}
	})
	resp := th.do(t, "GET", "/v1/stats", nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if m := readBody(t, resp, "error"); m["retry_after_ms"] != float64(1500) {
		t.Fatalf("retry_after_ms = %v", m["retry_after_ms"])
	}
}

// A body that stops arriving is cut by the read timeout: the door answers
// 408 (or closes) and nothing reaches the core. The test never sends the
// rest, so it waits on the answer, not on a clock.
func TestSlowBody(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Door.ReadTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", th.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		testToken, len(chatOK), chatOK[:10])
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound on a broken door, not synchronisation
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("status %d", resp.StatusCode)
		}
		readBody(t, resp, "error")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the door never cut the slow body")
	}
	if n := len(th.history(t)); n != 0 {
		t.Fatalf("a slow body reached the journal: %d records", n)
	}
}

// A long reply outlives ReadTimeout: net/http clears the read deadline
// once the body is in, so the stream is not cut (a guard: the door relies
// on it and sets no write deadline).
func TestStreamOutlivesReadTimeout(t *testing.T) {
	release := make(chan struct{})
	th := startHearth(t, func(c *testConfig) { c.Door.ReadTimeout = 200 * time.Millisecond })
	th.model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		onText("first ")
		select {
		case <-release:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		onText("second")
		return llm.Response{Text: "first second"}, nil
	}
	resp := th.do(t, "POST", "/v1/chat/completions", `{"model":"mnemo","stream":true,"messages":[{"role":"user","content":"slow"}]}`)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n') // the first chunk is here
	if err != nil || !strings.Contains(line, "first") {
		t.Fatalf("first line %q, %v", line, err)
	}
	// The server's read deadline is what this test is about: the reply
	// goes on only once it has long passed (nothing else is waited for).
	<-time.After(5 * 200 * time.Millisecond)
	close(release)
	evs := readSSE(t, br)
	var text strings.Builder
	for _, ev := range evs {
		if strings.Contains(ev.Data, "second") {
			text.WriteString("second")
		}
	}
	if text.String() != "second" || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("the stream was cut: %+v", evs)
	}
}

// A request id the client sends is kept (header, body, log); one it does
// not send is made.
func TestRequestID(t *testing.T) {
	th := startHearth(t, nil)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", th.url+"/health", nil)
	req.Header.Set("X-Request-Id", "client-chosen.42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if m := readBody(t, resp, "health"); m["request_id"] != "client-chosen.42" {
		t.Fatalf("request_id = %v", m["request_id"])
	}
	if !strings.Contains(th.log.String(), "request_id=client-chosen.42") {
		t.Fatal("the log line lacks the request id")
	}
	req.Header.Set("X-Request-Id", "bad id with spaces")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if m := readBody(t, resp2, "health"); !strings.HasPrefix(m["request_id"].(string), "req_") {
		t.Fatalf("request_id = %v", m["request_id"])
	}
}

// A wrong token earns its source a delay in the throttle every door
// shares: until it passes, even the right token is answered 429 with
// what is left of it, and once it has passed the right token gets in and
// clears the source.
func TestThrottleSharedByDoors(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	thr := auth.NewThrottle(auth.ThrottleOptions{BaseDelay: 2 * time.Second, Now: clock})
	th := startHearth(t, func(c *testConfig) { c.Door.Throttle = thr })

	resp := th.doWith(t, "GET", "/v1/stats", nil, "wrong-token-wrong-token", "application/json")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d", resp.StatusCode)
	}
	resp.Body.Close()
	if n, _ := thr.Stats(); n != 1 {
		t.Fatalf("the throttle counted %d failures, want 1", n)
	}
	resp = th.do(t, "GET", "/v1/stats", nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("right token inside the delay: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if m := readBody(t, resp, "error"); m["retry_after_ms"] != float64(2000) {
		t.Fatalf("retry_after_ms = %v", m["retry_after_ms"])
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	resp = th.do(t, "GET", "/v1/stats", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("right token after the delay: status %d", resp.StatusCode)
	}
	resp.Body.Close()
	if _, sources := thr.Stats(); sources != 0 {
		t.Fatalf("a success left %d sources on record", sources)
	}
}
