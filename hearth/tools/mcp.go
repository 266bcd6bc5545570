package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// listTimeout bounds connecting to and listing one server.
	listTimeout = 10 * time.Second
	// defaultMaxWire bounds one HTTP response from a server (the SDK bounds
	// a stdio message to the same 16 MiB).
	defaultMaxWire = mcp.DefaultMaxLineLength
	// maxToolsPerServer bounds what one server may offer.
	maxToolsPerServer = 1000
	// stdioWaitDelay bounds waiting for a stdio server's stderr after it
	// exits (a grandchild may keep it open).
	stdioWaitDelay = 2 * time.Second
	// stdioTerminate is how long closing a stdio session waits for the
	// server to exit after its stdin closed, and again after SIGTERM,
	// before SIGKILL: a server wedged in a call costs hearth's shutdown
	// about twice this, well within its grace (the SDK's default, 5 s,
	// made it 15 s for a server that ignores SIGTERM).
	stdioTerminate = 2 * time.Second
	// maxStderrLine bounds one logged line of a stdio server's stderr.
	maxStderrLine = 1024
)

// inheritedEnv are the only variables of hearth's environment a stdio
// server inherits: hearth's environment holds API keys, and a tool server
// gets exactly what its gateway entry gives it, plus what it needs to run.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM", "SYSTEMROOT", "XDG_RUNTIME_DIR"}

var errServerClosed = errors.New("tool server connection closed by the registry")

// server is the pooled connection to one MCP server definition. def is
// constant; mu guards the fields after it.
type server struct {
	def     serverDef
	connect func(ctx context.Context, s *server) (*mcp.ClientSession, error)
	log     *slog.Logger
	wg      *sync.WaitGroup // the registry's: session watchers
	// tooBig is set when a response exceeded the wire limit; the session is
	// then broken and the failed call is reported as too large.
	tooBig atomic.Bool
	// gone is closed when close has finished: the session is closed and a
	// stdio process reaped.
	gone chan struct{}

	mu     sync.Mutex
	cs     *mcp.ClientSession
	done   chan struct{} // closed when cs has ended, for any reason
	cmd    *exec.Cmd     // the stdio process of cs, if any
	tools  []*mcp.Tool   // the last listing of cs
	names  []string      // offered names of tools, same order
	closed bool
}

// session returns the live session, connecting first when there is none or
// the last one ended.
func (s *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errServerClosed
	}
	if s.cs != nil {
		select {
		case <-s.done:
			s.dropLocked()
		default:
			return s.cs, nil
		}
	}
	s.tooBig.Store(false)
	cs, err := s.connect(ctx, s)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	s.wg.Go(func() {
		// Ends when the session does: on Close, on a dead process, on a
		// failed transport.
		_ = cs.Wait()
		close(done)
	})
	s.cs, s.done = cs, done
	return cs, nil
}

// dropLocked forgets an ended session. Its resources are already released:
// the SDK closes the transport (and reaps a stdio process) when it ends.
func (s *server) dropLocked() {
	_ = s.cs.Close()
	s.cs, s.done, s.cmd, s.tools, s.names = nil, nil, nil, nil, nil
}

// evict closes cs if it is still the current session, so that the next use
// reconnects.
func (s *server) evict(cs *mcp.ClientSession) {
	s.mu.Lock()
	if s.cs != cs {
		s.mu.Unlock()
		return
	}
	s.cs, s.done, s.cmd, s.tools, s.names = nil, nil, nil, nil, nil
	s.mu.Unlock()
	if err := cs.Close(); err != nil {
		s.log.Debug("tools: closing an evicted MCP session", "server", s.def.label, "error", scrub(err.Error(), s.def.secrets))
	}
}

// close ends the session for good (the entry left gateway.json or the
// registry is closing) and reaps a stdio process.
func (s *server) close() {
	defer close(s.gone)
	s.mu.Lock()
	s.closed = true
	cs := s.cs
	s.cs, s.done, s.cmd, s.tools, s.names = nil, nil, nil, nil, nil
	s.mu.Unlock()
	if cs == nil {
		return
	}
	if err := cs.Close(); err != nil {
		s.log.Debug("tools: closing an MCP session", "server", s.def.label, "error", scrub(err.Error(), s.def.secrets))
	}
}

// listTools lists the server's tools and remembers them with their offered
// names. A session that fails is dropped and connected again once.
func (s *server) listTools(ctx context.Context) (tools []*mcp.Tool, names []string, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		var cs *mcp.ClientSession
		cs, err = s.session(ctx)
		if err != nil {
			return nil, nil, err
		}
		tools, err = collectTools(ctx, cs)
		if err == nil {
			break
		}
		var rpcErr *jsonrpc.Error
		if ctx.Err() != nil || errors.As(err, &rpcErr) {
			return nil, nil, err
		}
		s.evict(cs) // a stale or broken session: reconnect once
	}
	if err != nil {
		return nil, nil, err
	}
	raw := make([]string, len(tools))
	for i, t := range tools {
		raw[i] = t.Name
	}
	names = toolNames(s.def.prefix, raw)
	s.mu.Lock()
	s.tools, s.names = tools, names
	s.mu.Unlock()
	return tools, names, nil
}

func collectTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		if len(tools) == maxToolsPerServer {
			break
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// lookup finds the tool offered as name, listing the server when it has not
// been listed on this session or the name is not (yet) known.
func (s *server) lookup(ctx context.Context, name string) (*mcp.Tool, error) {
	s.mu.Lock()
	i := slices.Index(s.names, name)
	var t *mcp.Tool
	if i >= 0 {
		t = s.tools[i]
	}
	s.mu.Unlock()
	if t != nil {
		return t, nil
	}
	tools, names, err := s.listTools(ctx)
	if err != nil {
		return nil, err
	}
	if i := slices.Index(names, name); i >= 0 {
		return tools[i], nil
	}
	return nil, nil
}

// connectMCP is the production connect: streamable HTTP or stdio.
func connectMCP(client *mcp.Client, base *http.Client, getenv func(string) string, maxWire int64) func(ctx context.Context, s *server) (*mcp.ClientSession, error) {
	return func(ctx context.Context, s *server) (*mcp.ClientSession, error) {
		var t mcp.Transport
		if s.def.url != "" {
			t = &mcp.StreamableClientTransport{
				Endpoint:   s.def.url,
				HTTPClient: serverHTTPClient(base, s, maxWire),
				// Requests and their replies are all the registry needs;
				// a standing GET stream per server would only hold
				// connections to servers that come and go.
				DisableStandaloneSSE: true,
			}
		} else {
			cmd := exec.Command(s.def.command, s.def.args...)
			cmd.Env = childEnv(getenv, s.def.env)
			cmd.Stderr = &stderrLog{log: s.log, label: s.def.label, secrets: s.def.secrets}
			cmd.WaitDelay = stdioWaitDelay
			s.cmd = cmd
			t = &mcp.CommandTransport{Command: cmd, TerminateDuration: stdioTerminate}
		}
		cs, err := client.Connect(ctx, t, nil)
		if err != nil {
			s.cmd = nil
			return nil, fmt.Errorf("connect to MCP server %q: %w", s.def.label, err)
		}
		return cs, nil
	}
}

// childEnv is a stdio server's environment: the inherited basics, then the
// gateway entry's env.
func childEnv(getenv func(string) string, env map[string]string) []string {
	var out []string
	for _, k := range inheritedEnv {
		if _, ok := env[k]; ok {
			continue
		}
		if v := getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// serverHTTPClient is base with a transport that adds the server's headers
// (only to requests for the server's own origin, so never across a
// redirect) and bounds every response body.
func serverHTTPClient(base *http.Client, s *server, maxWire int64) *http.Client {
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	origin := ""
	if u, err := url.Parse(s.def.url); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	h := make(http.Header, len(s.def.headers))
	for k, v := range s.def.headers {
		h.Set(k, v)
	}
	return &http.Client{
		Transport:     &serverTransport{base: rt, origin: origin, headers: h, maxWire: maxWire, tooBig: &s.tooBig},
		CheckRedirect: base.CheckRedirect,
		Jar:           base.Jar,
		Timeout:       base.Timeout,
	}
}

type serverTransport struct {
	base    http.RoundTripper
	origin  string
	headers http.Header
	maxWire int64
	tooBig  *atomic.Bool
}

func (t *serverTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && req.URL.Scheme+"://"+req.URL.Host == t.origin {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = vs
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.maxWire, tooBig: t.tooBig}
	return resp, nil
}

var errTooLarge = errors.New("response from the tool server is too large")

// boundedBody fails a read that would go past the limit.
type boundedBody struct {
	rc     io.ReadCloser
	left   int64
	tooBig *atomic.Bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.tooBig.Store(true)
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// stderrLog logs a stdio server's stderr, line by line, at debug level.
type stderrLog struct {
	log     *slog.Logger
	label   string
	secrets []string
	buf     []byte
}

func (w *stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxStderrLine - len(w.buf)
			if room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		room := maxStderrLine - len(w.buf)
		w.buf = append(w.buf, p[:min(room, i)]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (w *stderrLog) flush() {
	line := strings.TrimRight(string(w.buf), "\r")
	w.buf = w.buf[:0]
	if line == "" {
		return
	}
	w.log.Debug("tools: MCP server stderr", "server", w.label, "line", scrub(line, w.secrets))
}

// classify derives a tool's effect, permission and idempotence from its
// annotations, as the MCP spec defines their defaults: a tool that does
// not say it is read-only may write, and one that does not say it is not
// destructive may destroy.
func classify(a *mcp.ToolAnnotations) (Effect, Permission, bool) {
	if a == nil {
		return Irreversible, Confirm, false
	}
	if a.ReadOnlyHint {
		// Reading twice changes nothing: safe to retry.
		return ReadOnly, Safe, true
	}
	if a.DestructiveHint == nil || *a.DestructiveHint {
		return Irreversible, Confirm, a.IdempotentHint
	}
	return WritesExternal, Confirm, a.IdempotentHint
}

// contentText renders a tool result for the model: text as is, anything
// else as a one-line summary.
func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %s]", orUnknown(c.MIMEType), byteSize(len(c.Data))))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %s]", orUnknown(c.MIMEType), byteSize(len(c.Data))))
		case *mcp.ResourceLink:
			s := "[resource link " + c.URI
			if c.Name != "" && c.Name != c.URI {
				s += " (" + c.Name + ")"
			}
			if c.MIMEType != "" {
				s += ", " + c.MIMEType
			}
			parts = append(parts, s+"]")
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %s]", r.URI, orUnknown(r.MIMEType), byteSize(len(r.Blob))))
			}
		default:
			parts = append(parts, fmt.Sprintf("[unsupported content %T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// byteSize is n in B, KiB or MiB, for summaries.
func byteSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+512)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
