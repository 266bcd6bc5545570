package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioEnv makes the test binary an MCP server over stdin/stdout.
const stdioEnv = "MNEMO_TOOLS_TEST_STDIO"

// secretEnv is returned by the stdio server's "env" tool, to show that a
// server echoing a secret it was given does not leak it.
const secretEnv = "MNEMO_TOOLS_TEST_SECRET"

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		srv := newTestServer(os.Stdout, true)
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const bigDefault = 1 << 20

// newTestServer is the MCP server used by the tests, in process over HTTP
// and as a child process over stdio. garbage is where the "garbage" tool
// writes bytes that are not JSON-RPC (stdio only: over HTTP the handler
// intercepts the call).
func newTestServer(garbage io.Writer, stdio bool) *mcp.Server {
	var opts *mcp.ServerOptions
	if stdio {
		// Over stdio the server's log goes to stderr, which the registry
		// logs at debug level.
		opts = &mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mnemo-tools-test", Version: "1"}, opts)
	no := false
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "Echo the text back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return text("echo: " + in.Text), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "slow",
		Description: "Wait until cancelled.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return text("cancelled"), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "boom",
		Description: "Always fails.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text("boom: the widget is on fire")
		r.IsError = true
		return r, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "big",
		Description: "Return a large text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Bytes int `json:"bytes"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		if in.Bytes <= 0 {
			in.Bytes = bigDefault
		}
		return text(strings.Repeat("x", in.Bytes)), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "garbage",
		Description: "Reply with bytes that are not JSON-RPC.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if stdio {
			_, _ = io.WriteString(garbage, "}}} this is not JSON-RPC {{{\n")
		}
		return text("garbage was sent"), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "media",
		Description: "Return an image, a resource link and an embedded resource.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "here:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
			&mcp.ResourceLink{URI: "file:///notes/a.md", Name: "a.md", MIMEType: "text/markdown"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes/b.md", Text: "B body"}},
		}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "dotted.name",
		Description: "A tool whose name needs sanitising.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("dotted ok"), nil
	})
	if stdio {
		s.AddTool(&mcp.Tool{
			Name:        "crash",
			Description: "Exit the server process.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
		s.AddTool(&mcp.Tool{
			Name:        "env",
			Description: "Return the secret the server was started with.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("secret=" + os.Getenv(secretEnv) + " home=" + os.Getenv("HOME")), nil
		})
	}
	return s
}

// httpTestServer is the test MCP server over streamable HTTP, recording
// what arrives.
type httpTestServer struct {
	*httptest.Server
	mu       sync.Mutex
	handler  http.Handler
	auth     []string // the Authorization header of every request
	requests int
	calls    int // tools/call requests
}

func startHTTPServer(t testing.TB) *httpTestServer {
	t.Helper()
	h := &httpTestServer{}
	h.restart()
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		h.mu.Lock()
		mcpHandler := h.handler
		h.requests++
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		if msg.Method == "tools/call" {
			h.calls++
		}
		h.mu.Unlock()
		if msg.Method == "tools/call" && msg.Params.Name == "garbage" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "}}} this is not JSON-RPC {{{")
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

// restart replaces the MCP server behind the URL with a new one that knows
// no sessions, as when a gateway restarts on the same address.
func (h *httpTestServer) restart() {
	srv := newTestServer(nil, false)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	h.mu.Lock()
	h.handler = handler
	h.mu.Unlock()
}

func (h *httpTestServer) stats() (requests, calls int, auth []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests, h.calls, append([]string(nil), h.auth...)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLog logs everything, debug included, as JSON into the returned buffer.
func testLog() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func randomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tok-" + hex.EncodeToString(b)
}

// gateway is a gateway.json under test control.
type gateway struct {
	t    testing.TB
	path string
}

func newGateway(t testing.TB) *gateway {
	return &gateway{t: t, path: filepath.Join(t.TempDir(), "gateway.json")}
}

// set writes the servers as gateway.json (atomically, like a gateway does).
func (g *gateway) set(servers ...map[string]any) {
	g.t.Helper()
	if servers == nil {
		servers = []map[string]any{}
	}
	b, err := json.MarshalIndent(map[string]any{"servers": servers}, "", "  ")
	if err != nil {
		g.t.Fatal(err)
	}
	tmp := g.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		g.t.Fatal(err)
	}
	if err := os.Rename(tmp, g.path); err != nil {
		g.t.Fatal(err)
	}
}

func httpEntry(label, url string, headers map[string]string) map[string]any {
	e := map[string]any{"label": label, "url": url}
	if headers != nil {
		e["headers"] = headers
	}
	return e
}

// stdioEntry runs this test binary as a stdio MCP server.
func stdioEntry(t testing.TB, label string, env map[string]string) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled binary sleeps 1s at exit unless told not to.
	e := map[string]string{stdioEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"label": label, "command": exe, "env": e}
}

// envMap is a Getenv over a map, falling back to the real environment for
// what a child process needs (PATH, HOME).
func envMap(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

// waitGone waits until a pooled server has been closed.
func waitGone(t testing.TB, s *server) {
	t.Helper()
	select {
	case <-s.gone:
	case <-time.After(30 * time.Second):
		t.Fatalf("server %q was not closed", s.def.label)
	}
}

// poolServer returns the pooled server with the given label.
func poolServer(r *Registry, label string) *server {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.pool {
		if s.def.label == label {
			return s
		}
	}
	return nil
}

// stdioCmd returns the process of a server's current session.
func stdioCmd(s *server) *exec.Cmd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd
}

// sessionDone returns the done channel of a server's current session.
func sessionDone(s *server) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func specNames(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func specByName(specs []Spec, name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

func newTestRegistry(t testing.TB, opts Options) *Registry {
	t.Helper()
	r := New(opts)
	t.Cleanup(func() { _ = r.Close() })
	return r
}
