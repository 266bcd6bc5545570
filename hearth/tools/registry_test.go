package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory"
)

func TestListMergesBuiltinsAndServers(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	local := stdioEntry(t, "local box", nil)
	local["permission"] = "safe"
	g.set(
		httpEntry("web tools", h.URL, nil),
		local,
		map[string]any{"label": "off", "url": "http://127.0.0.1:1/mcp", "disabled": true},
	)
	r := newTestRegistry(t, Options{
		GatewayPath: g.path,
		Builtins:    []Builtin{CurrentTime(time.Now), History(func(int) ([]memory.Hit, error) { return nil, nil })},
	})
	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}

	names := specNames(specs)
	if diff := cmp.Diff([]string{"current_time", "conversation_history"}, names[:2]); diff != "" {
		t.Errorf("built-ins first (-want +got):\n%s", diff)
	}
	mcpNames := slices.Sorted(slices.Values(names[2:]))
	var want []string
	for _, tool := range []string{"big", "boom", "dotted_name", "echo", "garbage", "media", "slow"} {
		want = append(want, "web_tools__"+tool)
	}
	for _, tool := range []string{"big", "boom", "crash", "dotted_name", "echo", "env", "garbage", "media", "slow"} {
		want = append(want, "local_box__"+tool)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, mcpNames); diff != "" {
		t.Errorf("MCP tools (-want +got):\n%s", diff)
	}

	for _, s := range specs {
		if !validName(s.Name) {
			t.Errorf("name %q is not [a-zA-Z0-9_-]{1,64}", s.Name)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Errorf("%s: parameters are not a JSON object: %v", s.Name, err)
			continue
		}
		if schema.Type != "object" || schema.Properties[ReasonParam] == nil || !slices.Contains(schema.Required, ReasonParam) {
			t.Errorf("%s: parameters %s lack a required reason", s.Name, s.Parameters)
		}
	}

	type class struct {
		Description string
		Effect      Effect
		Permission  Permission
		Idempotent  bool
		Source      string
	}
	for _, tc := range []struct {
		name string
		want class
	}{
		{"web_tools__echo", class{"Echo the text back.", ReadOnly, Safe, true, "mcp:web tools"}},
		{"web_tools__slow", class{"Wait until cancelled.", WritesExternal, Confirm, true, "mcp:web tools"}},
		{"web_tools__boom", class{"Always fails.", Irreversible, Confirm, false, "mcp:web tools"}},
		// The gateway entry's "permission" overrides the annotations.
		{"local_box__boom", class{"Always fails.", Irreversible, Safe, false, "mcp:local box"}},
		{"current_time", class{CurrentTime(time.Now).Spec.Description, ReadOnly, Safe, true, "builtin"}},
	} {
		s, ok := specByName(specs, tc.name)
		if !ok {
			t.Errorf("%s not listed", tc.name)
			continue
		}
		got := class{s.Description, s.Effect, s.Permission, s.Idempotent, s.Source}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	echo, _ := specByName(specs, "web_tools__echo")
	var schema map[string]any
	_ = json.Unmarshal(echo.Parameters, &schema)
	if diff := cmp.Diff([]any{"reason", "text"}, schema["required"]); diff != "" {
		t.Errorf("echo keeps its own schema (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, args, want string }{
		{"web_tools__echo", `{"text":"hi"}`, "echo: hi"},
		{"local_box__echo", `{"text":"hi"}`, "echo: hi"},
		{"local_box__dotted_name", `{}`, "dotted ok"},
		{"web_tools__media", ``, "here:\n[image image/png, 2 KiB]\n[resource link file:///notes/a.md (a.md), text/markdown]\n[resource file:///notes/b.md]\nB body"},
	} {
		res, err := r.Call(t.Context(), tc.name, json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("Call(%s): %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(Result{Text: tc.want}, res); diff != "" {
			t.Errorf("Call(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestGatewayIsReadOnEveryCall is seed SWAP-3: adding and removing servers
// in gateway.json changes the tools with no restart.
func TestGatewayIsReadOnEveryCall(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	r := newTestRegistry(t, Options{GatewayPath: g.path, Builtins: []Builtin{CurrentTime(time.Now)}})
	web := httpEntry("web", h.URL, nil)
	local := stdioEntry(t, "local", nil)

	has := func(specs []Spec, name string) bool { _, ok := specByName(specs, name); return ok }
	list := func() []Spec {
		t.Helper()
		specs, err := r.List(t.Context())
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return specs
	}

	g.set(web)
	specs := list()
	if !has(specs, "web__echo") || has(specs, "local__echo") {
		t.Fatalf("web only: got %v", specNames(specs))
	}

	g.set(web, local)
	specs = list()
	if !has(specs, "web__echo") || !has(specs, "local__echo") {
		t.Fatalf("web and local: got %v", specNames(specs))
	}
	if res, err := r.Call(t.Context(), "local__echo", json.RawMessage(`{"text":"a"}`)); err != nil || res.Text != "echo: a" {
		t.Fatalf("Call(local__echo) = %+v, %v", res, err)
	}
	webSrv, localSrv := poolServer(r, "web"), poolServer(r, "local")
	cmd := stdioCmd(localSrv)

	g.set(local)
	specs = list()
	if has(specs, "web__echo") || !has(specs, "local__echo") {
		t.Fatalf("local only: got %v", specNames(specs))
	}
	waitGone(t, webSrv)
	if _, err := r.Call(t.Context(), "web__echo", json.RawMessage(`{"text":"a"}`)); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Call(web__echo) after removal: got %v, want ErrUnknownTool", err)
	}

	g.set()
	specs = list()
	if diff := cmp.Diff([]string{"current_time"}, specNames(specs)); diff != "" {
		t.Errorf("no servers (-want +got):\n%s", diff)
	}
	waitGone(t, localSrv)
	if cmd.ProcessState == nil {
		t.Errorf("the removed stdio server's process was not reaped")
	}

	if err := os.Remove(g.path); err != nil {
		t.Fatal(err)
	}
	specs = list()
	if diff := cmp.Diff([]string{"current_time"}, specNames(specs)); diff != "" {
		t.Errorf("no gateway file (-want +got):\n%s", diff)
	}
}

func TestChangedURLGetsNewSession(t *testing.T) {
	a, b := startHTTPServer(t), startHTTPServer(t)
	g := newGateway(t)
	r := newTestRegistry(t, Options{GatewayPath: g.path})

	g.set(httpEntry("svc", a.URL+"/mcp", nil))
	if res, err := r.Call(t.Context(), "svc__echo", json.RawMessage(`{"text":"1"}`)); err != nil || res.IsError {
		t.Fatalf("Call before the change = %+v, %v", res, err)
	}
	old := poolServer(r, "svc")

	// The gateway restarted on a new URL: the next call goes there, with no
	// List in between.
	g.set(httpEntry("svc", b.URL+"/mcp", nil))
	if res, err := r.Call(t.Context(), "svc__echo", json.RawMessage(`{"text":"2"}`)); err != nil || res.Text != "echo: 2" {
		t.Fatalf("Call after the change = %+v, %v", res, err)
	}
	waitGone(t, old)
	if cur := poolServer(r, "svc"); cur == old || cur == nil {
		t.Errorf("the changed entry kept its old session")
	}
	_, aCalls, _ := a.stats()
	_, bCalls, _ := b.stats()
	if aCalls != 1 || bCalls != 1 {
		t.Errorf("tools/call requests: old URL %d, new URL %d; want 1 and 1", aCalls, bCalls)
	}
}

func TestServerRestartBehindSameURL(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("svc", h.URL, nil))
	r := newTestRegistry(t, Options{GatewayPath: g.path})
	for i := range 3 {
		if i > 0 {
			h.restart()
		}
		text := fmt.Sprint(i)
		res, err := r.Call(t.Context(), "svc__echo", json.RawMessage(`{"text":"`+text+`"}`))
		if err != nil || res != (Result{Text: "echo: " + text}) {
			t.Errorf("Call after %d restarts = %+v, %v", i, res, err)
		}
		if _, err := r.List(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHeadersGoOnlyToTheirServer(t *testing.T) {
	token := randomToken(t)
	withAuth := startHTTPServer(t)
	plain := startHTTPServer(t)
	dead := httptest.NewServer(nil)
	deadURL := dead.URL + "/mcp"
	dead.Close()

	bearer := map[string]string{"Authorization": "Bearer ${MCP_AUTH_TOKEN}"}
	g := newGateway(t)
	g.set(
		httpEntry("auth", withAuth.URL, bearer),
		httpEntry("plain", plain.URL, nil),
		httpEntry("dead", deadURL, bearer),
		stdioEntry(t, "kid", map[string]string{secretEnv: "${MCP_AUTH_TOKEN}"}),
	)
	log, logs := testLog()
	r := newTestRegistry(t, Options{
		GatewayPath: g.path,
		Log:         log,
		CallTimeout: 500 * time.Millisecond,
		Getenv:      envMap(map[string]string{"MCP_AUTH_TOKEN": token}),
	})

	var seen []any
	specs, err := r.List(t.Context())
	seen = append(seen, specs, err)
	if _, ok := specByName(specs, "auth__echo"); !ok {
		t.Fatalf("auth__echo not listed: %v", specNames(specs))
	}
	for _, tc := range []struct{ name, args string }{
		{"auth__echo", `{"text":"hello"}`},
		{"auth__boom", `{}`},
		{"auth__garbage", `{}`},
		{"auth__slow", `{}`},
		{"auth__echo", `{"text":"again"}`},
		{"dead__echo", `{"text":"hello"}`},
		{"plain__echo", `{"text":"hello"}`},
		{"kid__env", `{}`},
		{"auth__nope", `{}`},
	} {
		res, err := r.Call(t.Context(), tc.name, json.RawMessage(tc.args))
		seen = append(seen, res, err)
		if tc.name == "kid__env" && !strings.Contains(res.Text, "secret=[redacted]") {
			t.Errorf("kid__env = %q; want the secret it echoes redacted", res.Text)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	_, _, auth := withAuth.stats()
	if len(auth) == 0 {
		t.Fatal("the server with headers got no requests")
	}
	for i, a := range auth {
		if a != "Bearer "+token {
			t.Errorf("request %d to the server with headers: Authorization %q, want the bearer token", i, a)
		}
	}
	_, _, plainAuth := plain.stats()
	for i, a := range plainAuth {
		if a != "" {
			t.Errorf("request %d to the server without headers carried Authorization %q", i, a)
		}
	}
	for i, v := range seen {
		if s := fmt.Sprintf("%+v", v); strings.Contains(s, token) {
			t.Errorf("returned value %d contains the token: %s", i, s)
		}
		if b, err := json.Marshal(v); err == nil && strings.Contains(string(b), token) {
			t.Errorf("returned value %d contains the token: %s", i, b)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log contains the token:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"server":"dead"`) {
		t.Errorf("no warning logged for the dead server:\n%s", logs.String())
	}
}

func TestCallFailuresAreBoundedResults(t *testing.T) {
	const maxResult = 8 << 10
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("web", h.URL, nil), stdioEntry(t, "local", nil))
	r := newTestRegistry(t, Options{GatewayPath: g.path, MaxResult: maxResult})
	r.maxWire = 2 << 20 // bigger than "big" (1 MiB), smaller than "huge"
	// The same servers with a short call timeout, for the tools that hang.
	short := newTestRegistry(t, Options{GatewayPath: g.path, CallTimeout: 300 * time.Millisecond})
	for _, r := range []*Registry{r, short} {
		if _, err := r.List(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name    string
		tool    string
		args    string
		isError bool
		want    string // the result's text starts with this
	}{
		{"timeout http", "web__slow", `{}`, true, "web__slow: timed out after 300ms"},
		{"timeout stdio", "local__slow", `{}`, true, "local__slow: timed out after 300ms"},
		{"tool error http", "web__boom", `{}`, true, "boom: the widget is on fire"},
		{"tool error stdio", "local__boom", `{}`, true, "boom: the widget is on fire"},
		{"garbage http", "web__garbage", `{}`, true, `web__garbage failed: the tool server "web" stopped or sent an invalid reply`},
		{"garbage stdio", "local__garbage", `{}`, true, `local__garbage failed: the tool server "local" stopped or sent an invalid reply`},
		{"crash stdio", "local__crash", `{}`, true, `local__crash failed: the tool server "local" stopped or sent an invalid reply`},
		{"big http", "web__big", `{}`, false, "xxxxxxxx"},
		{"big stdio", "local__big", `{}`, false, "xxxxxxxx"},
		{"huge http", "web__big", `{"bytes":3145728}`, true, "web__big: the reply was larger than 2.0 MiB and was discarded"},
		{"bad arguments", "web__echo", `[1,2]`, true, "web__echo: the arguments are not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tool == "local__crash" {
				local := poolServer(r, "local")
				if _, err := r.Call(t.Context(), "local__echo", json.RawMessage(`{"text":"warm"}`)); err != nil {
					t.Fatal(err)
				}
				cmd, done := stdioCmd(local), sessionDone(local)
				defer func() {
					<-done // the session ended: the SDK has waited for the process
					if cmd.ProcessState == nil {
						t.Errorf("the crashed server's process was not reaped")
					}
				}()
			}
			r := r
			if strings.HasPrefix(tc.name, "timeout") {
				r = short
			}
			res, err := r.Call(t.Context(), tc.tool, json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if res.IsError != tc.isError || !strings.HasPrefix(res.Text, tc.want) {
				t.Errorf("Call(%s) = {IsError:%v Text:%.120q}; want IsError %v, text starting %q", tc.tool, res.IsError, res.Text, tc.isError, tc.want)
			}
			if len(res.Text) > maxResult {
				t.Errorf("result is %d bytes, more than MaxResult %d", len(res.Text), maxResult)
			}
			if strings.HasPrefix(tc.name, "big ") {
				// Cut to exactly MaxResult, and the note counts what is gone.
				i := strings.LastIndex(res.Text, "\n[… truncated: ")
				var omitted int
				if i < 0 || len(res.Text) != maxResult {
					t.Fatalf("big result: %d bytes, no truncation note; want %d bytes", len(res.Text), maxResult)
				}
				if _, err := fmt.Sscanf(res.Text[i:], "\n[… truncated: %d bytes omitted]", &omitted); err != nil || i+omitted != bigDefault {
					t.Errorf("big result: kept %d bytes, note says %d omitted; want them to add up to %d", i, omitted, bigDefault)
				}
			}
			// The registry keeps working on the same server.
			server := strings.SplitN(tc.tool, "__", 2)[0]
			res, err = r.Call(t.Context(), server+"__echo", json.RawMessage(`{"text":"still here"}`))
			if err != nil || res != (Result{Text: "echo: still here"}) {
				t.Errorf("Call(%s__echo) after the failure = %+v, %v", server, res, err)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("web", h.URL, nil), map[string]any{"label": "off", "url": h.URL, "disabled": true})
	r := newTestRegistry(t, Options{GatewayPath: g.path, Builtins: []Builtin{CurrentTime(time.Now)}})
	for _, name := range []string{"", "nope", "web__nope", "web__", "zzz__echo", "off__echo", "__echo", "current_time__x"} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Call(t.Context(), name, nil)
			if !errors.Is(err, ErrUnknownTool) {
				t.Errorf("Call(%q) = %+v, %v; want ErrUnknownTool", name, res, err)
			}
		})
	}
}

func TestServersThatFailAreSkipped(t *testing.T) {
	h := startHTTPServer(t)
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	g := newGateway(t)
	g.set(
		httpEntry("dead", deadURL, nil),
		map[string]any{"label": "nocmd", "command": "/nonexistent/mnemo-no-such-server"},
		map[string]any{"label": "both", "command": "x", "url": h.URL},
		httpEntry("web", h.URL, nil),
	)
	log, logs := testLog()
	r := newTestRegistry(t, Options{GatewayPath: g.path, Log: log})
	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := specByName(specs, "web__echo"); !ok || len(specs) != 7 {
		t.Errorf("got %v; want only web's 7 tools", specNames(specs))
	}
	for _, label := range []string{"dead", "nocmd", "both"} {
		if !strings.Contains(logs.String(), `"label":"`+label+`"`) && !strings.Contains(logs.String(), `"server":"`+label+`"`) {
			t.Errorf("no warning for %q:\n%s", label, logs.String())
		}
	}
	res, err := r.Call(t.Context(), "dead__echo", json.RawMessage(`{"text":"x"}`))
	if err != nil || !res.IsError || res.Text != `dead__echo: the tool server "dead" is unavailable` {
		t.Errorf("Call(dead__echo) = %+v, %v", res, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("web", h.URL, nil), stdioEntry(t, "local", nil))
	r := newTestRegistry(t, Options{GatewayPath: g.path, Builtins: []Builtin{CurrentTime(time.Now)}})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				if _, err := r.List(t.Context()); err != nil {
					errs <- err
					return
				}
				for _, name := range []string{"web__echo", "local__echo", "current_time"} {
					text := fmt.Sprintf("%d-%d", i, j)
					res, err := r.Call(t.Context(), name, json.RawMessage(`{"text":"`+text+`"}`))
					if err != nil || res.IsError || (name != "current_time" && res.Text != "echo: "+text) {
						errs <- fmt.Errorf("Call(%s) = %+v, %v", name, res, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCloseEndsServers(t *testing.T) {
	g := newGateway(t)
	g.set(stdioEntry(t, "local", nil))
	r := New(Options{GatewayPath: g.path})
	if _, err := r.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	cmd := stdioCmd(poolServer(r, "local"))
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Errorf("Close did not reap the stdio server")
	}
	if _, err := r.List(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
	if _, err := r.Call(t.Context(), "local__echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: got %v, want ErrClosed", err)
	}
}

func TestBuiltinFailures(t *testing.T) {
	mk := func(name string, run func(ctx context.Context, args json.RawMessage) (Result, error)) Builtin {
		return Builtin{Spec: Spec{Name: name, Description: name}, Run: run}
	}
	r := newTestRegistry(t, Options{
		CallTimeout: 50 * time.Millisecond,
		MaxResult:   100,
		Builtins: []Builtin{
			mk("panics", func(context.Context, json.RawMessage) (Result, error) { panic("kaboom") }),
			mk("fails", func(context.Context, json.RawMessage) (Result, error) { return Result{}, errors.New("disk on fire") }),
			mk("waits", func(ctx context.Context, _ json.RawMessage) (Result, error) { <-ctx.Done(); return Result{}, ctx.Err() }),
			mk("long", func(context.Context, json.RawMessage) (Result, error) {
				return Result{Text: strings.Repeat("é", 100)}, nil
			}),
			mk("bad name!", func(context.Context, json.RawMessage) (Result, error) { return Result{}, nil }),
			mk("fails", func(context.Context, json.RawMessage) (Result, error) { return Result{}, nil }),
			{Spec: Spec{Name: "norun"}},
		},
	})
	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"panics", "fails", "waits", "long"}, specNames(specs)); diff != "" {
		t.Errorf("valid built-ins (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name, args string
		want       Result
	}{
		{"panics", `{}`, Result{Text: "panics: internal error", IsError: true}},
		{"fails", `{}`, Result{Text: "fails failed: disk on fire", IsError: true}},
		{"waits", `{}`, Result{Text: "waits: timed out after 50ms", IsError: true}},
		{"fails", `"str"`, Result{Text: "fails: the arguments are not a JSON object", IsError: true}},
	} {
		res, err := r.Call(t.Context(), tc.name, json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("Call(%s): %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, res); diff != "" {
			t.Errorf("Call(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
	res, _ := r.Call(t.Context(), "long", nil)
	if len(res.Text) > 100 || !strings.Contains(res.Text, "[… truncated: ") {
		t.Errorf("long result = %q (%d bytes); want at most 100 bytes with a truncation note", res.Text, len(res.Text))
	}
}
