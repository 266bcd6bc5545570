package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/memory"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownTool is returned by Call for a name that no built-in and no
// enabled MCP server offers.
var ErrUnknownTool = errors.New("unknown tool")

// ErrClosed is returned by List and Call after Close.
var ErrClosed = errors.New("tool registry is closed")

const (
	defaultCallTimeout = 60 * time.Second
	defaultMaxResult   = 64 << 10
	// pingTimeout bounds the health check after a call timed out.
	pingTimeout = 2 * time.Second
	// maxDescription and maxSchema bound what a server's tool adds to the
	// model's context.
	maxDescription = 4 << 10
	maxSchema      = 64 << 10
	// maxErrorText bounds a server-provided error message given to the model.
	maxErrorText = 512
)

// Options configure a Registry.
type Options struct {
	// GatewayPath is gateway.json. "" or a missing file means no MCP
	// servers, which is not an error.
	GatewayPath string
	// ManifestDir holds the owner's manifests, *.tool.json (see
	// Manifest); "" or a missing directory means none.
	ManifestDir string
	// Builtins are offered first, under their own names. A built-in with an
	// invalid or duplicate name, or no Run, is logged and left out.
	Builtins []Builtin
	// CallTimeout bounds a call whose Spec has no Timeout; default 60s.
	CallTimeout time.Duration
	// MaxResult bounds the bytes of a result given to the model, the
	// truncation note included; default 64 KiB. Longer text is cut and
	// ends with "[… truncated: N bytes omitted]".
	MaxResult int
	// HTTPClient is the base client for streamable HTTP servers; its
	// Transport is wrapped to add each server's headers. Default: a client
	// over http.DefaultTransport.
	HTTPClient *http.Client
	// Log receives warnings (servers that fail) and one line per call.
	// Default: discard.
	Log *slog.Logger
	// Getenv expands ${VAR} in headers and env, and gives stdio servers
	// PATH, HOME and the like; default os.Getenv.
	Getenv func(string) string
}

// Registry offers built-in tools and the tools of the MCP servers listed in
// gateway.json. The file is read on every List and Call, never cached, so
// rotating URLs and added or removed servers take effect without a
// restart. Connections are pooled per server definition: an entry that
// changes gets a new session, and the session of an entry that is removed
// is closed (a stdio server's process is ended and reaped).
//
// A Registry is safe for concurrent use.
type Registry struct {
	gatewayPath string
	manifestDir string
	builtins    []Builtin // valid, with "reason" in their schemas
	callTimeout time.Duration
	maxResult   int
	httpClient  *http.Client
	log         *slog.Logger
	getenv      func(string) string
	client      *mcp.Client
	// connect opens a session to a server; tests replace it.
	connect func(ctx context.Context, s *server) (*mcp.ClientSession, error)
	// maxWire bounds one HTTP response from a server; tests lower it.
	maxWire int64

	wg sync.WaitGroup // background closes and session watchers

	mu     sync.Mutex
	pool   map[string]*server // by serverDef.key
	closed bool
	// manifestErrs are the manifests the last List left out, as reported.
	manifestErrs []error
}

// New returns a registry. It does not touch gateway.json or any server
// until List or Call.
func New(opts Options) *Registry {
	r := &Registry{
		gatewayPath: opts.GatewayPath,
		manifestDir: opts.ManifestDir,
		callTimeout: opts.CallTimeout,
		maxResult:   opts.MaxResult,
		httpClient:  opts.HTTPClient,
		log:         opts.Log,
		getenv:      opts.Getenv,
		maxWire:     defaultMaxWire,
		pool:        map[string]*server{},
	}
	if r.callTimeout <= 0 {
		r.callTimeout = defaultCallTimeout
	}
	if r.maxResult <= 0 {
		r.maxResult = defaultMaxResult
	}
	if r.httpClient == nil {
		r.httpClient = &http.Client{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	r.client = mcp.NewClient(&mcp.Implementation{Name: "mnemo-hearth", Version: "1"}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the registry only lists and
		// calls tools. (The SDK would otherwise advertise roots.)
		Capabilities: &mcp.ClientCapabilities{},
	})
	r.connect = r.connectMCP
	seen := map[string]bool{}
	for _, b := range opts.Builtins {
		switch {
		case !validName(b.Spec.Name):
			r.log.Warn("tools: built-in has an invalid name; left out", "name", b.Spec.Name)
			continue
		case seen[b.Spec.Name]:
			r.log.Warn("tools: duplicate built-in; left out", "name", b.Spec.Name)
			continue
		case b.Run == nil:
			r.log.Warn("tools: built-in has no Run; left out", "name", b.Spec.Name)
			continue
		}
		seen[b.Spec.Name] = true
		b.Spec.Parameters = withReason(b.Spec.Parameters)
		if b.Spec.Source == "" {
			b.Spec.Source = "builtin"
		}
		r.builtins = append(r.builtins, b)
	}
	return r
}

func (r *Registry) connectMCP(ctx context.Context, s *server) (*mcp.ClientSession, error) {
	return connectMCP(r.client, r.httpClient, r.getenv, r.maxWire)(ctx, s)
}

// pooled is an enabled server as gateway.json describes it now, with its
// pooled connection.
type pooled struct {
	def serverDef
	srv *server
}

// servers reads gateway.json and brings the pool in line with it: new
// entries get a (not yet connected) pool slot, entries that are gone are
// closed in the background.
func (r *Registry) servers() ([]pooled, error) {
	defs := readGateway(r.gatewayPath, r.getenv, r.log)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	want := make(map[string]bool, len(defs))
	out := make([]pooled, 0, len(defs))
	for _, d := range defs {
		want[d.key] = true
		s := r.pool[d.key]
		if s == nil {
			s = &server{def: d, connect: r.connect, log: r.log, wg: &r.wg, gone: make(chan struct{})}
			r.pool[d.key] = s
		}
		out = append(out, pooled{def: d, srv: s})
	}
	for k, s := range r.pool {
		if want[k] {
			continue
		}
		delete(r.pool, k)
		r.log.Info("tools: MCP server left gateway.json or changed; closing its session", "server", s.def.label)
		r.wg.Go(s.close)
	}
	return out, nil
}

// List returns the built-ins, then the tools of every enabled MCP server in
// gateway.json order. A server that cannot be reached or listed within 10
// seconds is left out with a logged warning. Every Spec's Parameters has a
// required string "reason". The error is non-nil only when ctx ended or
// the registry is closed; the built-ins are returned even then.
func (r *Registry) List(ctx context.Context) ([]Spec, error) {
	specs := make([]Spec, 0, len(r.builtins))
	taken := map[string]bool{}
	for _, b := range r.builtins {
		specs = append(specs, b.Spec)
		taken[b.Spec.Name] = true
	}
	servers, err := r.servers()
	if err != nil {
		return specs, fmt.Errorf("list tools: %w", err)
	}
	lists := make([][]Spec, len(servers))
	var wg sync.WaitGroup
	for i, p := range servers {
		wg.Go(func() { lists[i] = r.listServer(ctx, p) })
	}
	wg.Wait()
	manifests := r.manifests()
	for _, l := range lists {
		for _, sp := range l {
			if taken[sp.Name] {
				r.log.Warn("tools: MCP tool name is taken by a built-in; left out", "tool", sp.Name)
				continue
			}
			taken[sp.Name] = true
			if m, ok := manifests[sp.Name]; ok && !m.apply(&sp) {
				continue // disabled by the owner
			}
			specs = append(specs, sp)
		}
	}
	if err := ctx.Err(); err != nil {
		return specs, fmt.Errorf("list tools: %w", err)
	}
	return specs, nil
}

func (r *Registry) listServer(ctx context.Context, p pooled) []Spec {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	tools, names, err := p.srv.listTools(lctx)
	if err != nil {
		r.warnServer(p.def, "tools: MCP server skipped: cannot connect or list its tools", err)
		return nil
	}
	specs := make([]Spec, 0, len(tools))
	for i, t := range tools {
		if names[i] == "" {
			r.log.Warn("tools: MCP tool cannot be given a valid name; left out", "server", p.def.label)
			continue
		}
		sp, ok := mcpSpec(p.def, t, names[i])
		if !ok {
			r.log.Warn("tools: MCP tool schema is too large; left out", "server", p.def.label, "tool", names[i])
			continue
		}
		specs = append(specs, sp)
	}
	return specs
}

// mcpSpec describes an MCP tool as the model sees it: its own description
// (cut to 4 KiB) and schema, plus "reason". A tool whose schema is over
// 64 KiB is not offered: it would crowd the model's context.
func mcpSpec(def serverDef, t *mcp.Tool, name string) (Spec, bool) {
	effect, perm, idem := classify(t.Annotations)
	if def.permission != "" {
		perm = def.permission
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	var schema json.RawMessage
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil || len(b) > maxSchema {
			return Spec{}, false
		}
		schema = b
	}
	return Spec{
		Name:        name,
		Description: cut(desc, maxDescription),
		Parameters:  withReason(schema),
		Effect:      effect,
		Permission:  perm,
		Idempotent:  idem,
		Source:      "mcp:" + def.label,
	}, true
}

// Call runs the tool offered as name with args (a JSON object, "reason"
// already taken out). Every failure of the tool itself — a timeout, a
// crashed or unreachable server, an invalid or oversized reply — is a
// Result with IsError set and a short message for the model; the error is
// non-nil only for a name nothing offers (ErrUnknownTool) or a closed
// registry. Text is at most MaxResult bytes.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	start := time.Now()
	res, source, err := r.call(ctx, name, args)
	if err != nil {
		r.log.Info("tools: call", "tool", name, "error", err)
		return Result{}, err
	}
	res.Text = bound(res.Text, r.maxResult)
	r.log.Info("tools: call", "tool", name, "source", source,
		"duration", time.Since(start).Round(time.Microsecond), "is_error", res.IsError, "result_bytes", len(res.Text))
	return res, nil
}

func (r *Registry) call(ctx context.Context, name string, args json.RawMessage) (Result, string, error) {
	args, argErr := objectArgs(args)
	for _, b := range r.builtins {
		if b.Spec.Name == name {
			if argErr != nil {
				return errResult("%s: %v", name, argErr), b.Spec.Source, nil
			}
			return r.runBuiltin(ctx, b, args), b.Spec.Source, nil
		}
	}
	prefix, _, ok := strings.Cut(name, nameSep)
	if !ok {
		return Result{}, "", fmt.Errorf("call %q: %w", name, ErrUnknownTool)
	}
	servers, err := r.servers()
	if err != nil {
		return Result{}, "", fmt.Errorf("call %q: %w", name, err)
	}
	var p *pooled
	for i := range servers {
		if servers[i].def.prefix == prefix {
			p = &servers[i]
			break
		}
	}
	if p == nil {
		return Result{}, "", fmt.Errorf("call %q: %w", name, ErrUnknownTool)
	}
	source := "mcp:" + p.def.label
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	tool, err := p.srv.lookup(lctx, name)
	cancel()
	if err != nil {
		r.warnServer(p.def, "tools: MCP server unavailable for a call", err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errResult("%s: the tool server %q did not answer in time", name, p.def.label), source, nil
		}
		if ctx.Err() != nil {
			return errResult("%s: the call was cancelled", name), source, nil
		}
		return errResult("%s: the tool server %q is unavailable", name, p.def.label), source, nil
	}
	if tool == nil || r.manifests()[name].Disabled {
		return Result{}, "", fmt.Errorf("call %q: %w", name, ErrUnknownTool)
	}
	if argErr != nil {
		return errResult("%s: %v", name, argErr), source, nil
	}
	return r.callMCP(ctx, p, tool, name, args), source, nil
}

// objectArgs checks that args is a JSON object; empty or null is {}.
func objectArgs(args json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("the arguments are not a JSON object")
	}
	return t, nil
}

func (r *Registry) callMCP(ctx context.Context, p *pooled, tool *mcp.Tool, name string, args json.RawMessage) Result {
	s := p.srv
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
		cs, err := s.session(cctx)
		if err != nil {
			cancel()
			r.warnServer(p.def, "tools: MCP server unavailable for a call", err)
			return r.failure(ctx, cctx, name, p.def, "the tool server %q is unavailable", p.def.label)
		}
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool.Name, Arguments: args})
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
		after := timedOutAfter(cctx, r.callTimeout)
		cancel()
		if err == nil {
			if res == nil {
				return errResult("%s: the tool server %q sent an empty reply", name, p.def.label)
			}
			return Result{Text: scrub(contentText(res), p.def.secrets), IsError: res.IsError}
		}
		// The server forgot the session (it restarted): the call was not
		// run, so it is safe to connect again and run it once.
		if errors.Is(err, mcp.ErrSessionMissing) && attempt == 0 {
			r.log.Info("tools: MCP server forgot the session; reconnecting", "server", p.def.label)
			s.evict(cs)
			continue
		}
		r.warnServer(p.def, "tools: MCP call failed", err)
		var rpcErr *jsonrpc.Error
		switch {
		case timedOut:
			// The registry's timeout or the caller's deadline (the
			// agent's tool timeout), whichever came first. The SDK tells
			// the server the request was cancelled, and the session
			// stays, unless the server no longer answers.
			r.checkAlive(context.WithoutCancel(ctx), s, cs)
			return errResult("%s: timed out after %s", name, after)
		case ctx.Err() != nil:
			return errResult("%s: the call was cancelled", name)
		case s.tooBig.Load():
			s.evict(cs)
			return errResult("%s: the reply was larger than %s and was discarded", name, byteSize(int(r.maxWire)))
		case errors.As(err, &rpcErr):
			msg := cut(strings.TrimSpace(scrub(rpcErr.Message, p.def.secrets)), maxErrorText)
			return errResult("%s failed: %s", name, msg)
		default:
			s.evict(cs)
			return errResult("%s failed: the tool server %q stopped or sent an invalid reply", name, p.def.label)
		}
	}
}

// checkAlive pings a session after a call timed out. A server that does
// not answer a ping either is dropped, so that the next call reconnects
// (for stdio: a new process) instead of waiting on it again.
func (r *Registry) checkAlive(ctx context.Context, s *server, cs *mcp.ClientSession) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := cs.Ping(pctx, nil); err != nil && ctx.Err() == nil {
		r.warnServer(s.def, "tools: MCP server does not answer after a timeout; dropping its session", err)
		s.evict(cs)
	}
}

// failure is the result for a call that did not complete: cancelled, timed
// out, or (format) otherwise.
func (r *Registry) failure(ctx, cctx context.Context, name string, def serverDef, format string, a ...any) Result {
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return errResult("%s: timed out after %s", name, timedOutAfter(cctx, r.callTimeout))
	case ctx.Err() != nil:
		return errResult("%s: the call was cancelled", name)
	case format == "":
		return errResult("%s failed: the tool server %q did not answer", name, def.label)
	}
	return errResult("%s: "+format, append([]any{name}, a...)...)
}

func (r *Registry) runBuiltin(ctx context.Context, b Builtin, args json.RawMessage) (res Result) {
	timeout := b.Spec.Timeout
	if timeout <= 0 {
		timeout = r.callTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("tools: built-in panicked", "tool", b.Spec.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res = errResult("%s: internal error", b.Spec.Name)
		}
	}()
	res, err := b.Run(cctx, args)
	switch {
	case err == nil:
		return res
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return errResult("%s: timed out after %s", b.Spec.Name, timedOutAfter(cctx, timeout))
	case ctx.Err() != nil:
		return errResult("%s: the call was cancelled", b.Spec.Name)
	}
	r.log.Warn("tools: built-in failed", "tool", b.Spec.Name, "error", err)
	return errResult("%s failed: %s", b.Spec.Name, cut(err.Error(), maxErrorText))
}

// manifests reads the owner's manifests; each one left out is logged
// once, until it changes.
func (r *Registry) manifests() map[string]Manifest {
	ms, errs := readManifests(r.manifestDir, r.isBuiltin)
	r.mu.Lock()
	prev := r.manifestErrs
	r.manifestErrs = errs
	r.mu.Unlock()
	for _, e := range errs {
		if !slices.ContainsFunc(prev, func(p error) bool { return p.Error() == e.Error() }) {
			r.log.Warn("tools: a manifest is invalid and left out", "error", e.Error())
		}
	}
	return ms
}

// ManifestErrors are the manifests the last List or Call left out, and
// why, each naming its file.
func (r *Registry) ManifestErrors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.manifestErrs)
}

func (r *Registry) isBuiltin(name string) bool {
	return slices.ContainsFunc(r.builtins, func(b Builtin) bool { return b.Spec.Name == name })
}

// warnServer logs a server problem without its secrets.
func (r *Registry) warnServer(def serverDef, msg string, err error) {
	attrs := []any{"server", def.label, "error", scrub(err.Error(), def.secrets)}
	if def.url != "" {
		attrs = append(attrs, "url", scrub(safeURL(def.url), def.secrets))
	} else {
		attrs = append(attrs, "command", def.command)
	}
	r.log.Warn(msg, attrs...)
}

// Close closes every pooled MCP session and ends stdio servers, waiting for
// their processes to be reaped. List and Call fail with ErrClosed after.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closed = true
	pool := r.pool
	r.pool = map[string]*server{}
	r.mu.Unlock()
	for _, s := range pool {
		r.wg.Go(s.close)
	}
	r.wg.Wait()
	return nil
}

func errResult(format string, a ...any) Result {
	return Result{Text: fmt.Sprintf(format, a...), IsError: true}
}

// bound cuts text to at most max bytes, note included, on a UTF-8
// boundary, ending with "[… truncated: N bytes omitted]".
func bound(text string, max int) string {
	if len(text) <= max {
		return text
	}
	// The note's length depends on N; N is at most len(text).
	note := fmt.Sprintf("\n[… truncated: %d bytes omitted]", len(text))
	keep := max - len(note)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(text[keep]) {
		keep--
	}
	note = fmt.Sprintf("\n[… truncated: %d bytes omitted]", len(text)-keep)
	out := text[:keep] + note
	if len(out) > max { // max is smaller than the note itself
		return cut(out, max)
	}
	return out
}

// cut shortens s to at most n bytes, marked with "…".
func cut(s string, n int) string { return memory.Shorten(s, n) }

// DeadlineCause is the cause a caller that bounds a tool call gives its
// context (context.WithTimeoutCause), as the agent does with its tool
// timeout: a call that runs out of the caller's time is then told as a
// timeout of that length, not as a cancellation.
type DeadlineCause struct{ After time.Duration }

func (e *DeadlineCause) Error() string {
	return fmt.Sprintf("the tool call timed out after %s", e.After)
}

// timedOutAfter is how long a call that timed out had: the caller's
// bound when its deadline ended it (see DeadlineCause), else own.
func timedOutAfter(cctx context.Context, own time.Duration) time.Duration {
	var dc *DeadlineCause
	if errors.As(context.Cause(cctx), &dc) {
		return dc.After
	}
	return own
}
