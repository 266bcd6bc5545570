// Package httpdoor serves hearth over HTTP: an OpenAI-compatible API
// (/v1/chat/completions, /v1/models, /v1/embeddings), seed 000's
// POST /engine/chat (SSE), memory query and ingest (/v1/query,
// /v1/ingest), /v1/stats and health. Like hearth/ndjson it is a thin
// adapter: a chat request is a turn of the core's conversation, and its
// reply is read back from the core's events, filtered to that turn.
package httpdoor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// Core is what the door needs of hearth's core.
type Core interface {
	Subscribe(opts hearth.WatchOptions) (*hearth.Subscription, error)
	SendWith(ctx context.Context, ref, content string, o hearth.SendOptions) error
	Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error)
	Health() hearth.Health
	Propose(ctx context.Context, p vault.Proposal) (hearth.ProposalOutcome, error)
	VaultRead(ctx context.Context, path, at string) (hearth.VaultFile, error)
	VaultList(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error)
	Proposals(ctx context.Context) ([]vault.Proposal, error)
	ConversationCore
}

// Authenticator turns a bearer credential into an identity and decides
// what the identity may do (auth.SharedToken today).
type Authenticator interface {
	Authenticate(ctx context.Context, credential string, src netip.Addr) (auth.Identity, error)
	Authorize(id auth.Identity, res auth.Resource, act auth.Action) error
}

// Throttle is the failed-credential throttle (*auth.Throttle).
type Throttle interface {
	// Wait is what is left of the delay src's latest failure earned.
	Wait(src netip.Addr) time.Duration
	// Failed records a failure from src.
	Failed(src netip.Addr) time.Duration
	// Succeeded clears src's failures.
	Succeeded(src netip.Addr)
}

// Limiter is the per-identity request rate limit (*auth.Limiter): 0 lets
// the request through, else it is how long the identity must wait.
type Limiter interface {
	Allow(id auth.Identity) time.Duration
}

// Embedder embeds texts for /v1/embeddings; its errors stay in the log.
type Embedder interface {
	Embed(ctx context.Context, texts []string) (model string, vecs [][]float32, err error)
}

// Models are the configured models (the daemon's preferences): the
// conversation's, which phrases /v1/query's answer when asked to
// summarize, and those a chat request may name for its own turn.
type Models interface {
	// Resolve is the model of the conversation's next turn.
	Resolve() (hearth.Model, error)
	// Choices are the names a request may give as its model, the
	// conversation's model first (GET /v1/models lists them after the
	// companion's own name).
	Choices() []string
	// Named is the model of one of Choices; false for any other name.
	Named(name string) (hearth.Model, bool)
}

// Options configure a Door.
type Options struct {
	Auth Authenticator // required
	// Throttle, when set, slows down the sources whose credentials fail;
	// the daemon passes the one every door shares, so a source guessing
	// on one door is slowed on all of them.
	Throttle Throttle
	// Limiter, when set, bounds each identity's requests (seed 002: 429
	// with retry_after_ms); the daemon passes the one every door
	// shares, so an identity's requests count on all of them.
	Limiter  Limiter
	Models   Models   // nil: only the companion's own model name
	Embedder Embedder // nil: /v1/embeddings answers 503
	// Metrics, when set, records every request and is served at
	// /metrics (the owner's); nil: /metrics is 404.
	Metrics *telemetry.Metrics
	Log     *slog.Logger

	// MaxBody bounds a request body; default 1 MiB (ingest: MaxIngest,
	// default 8 MiB).
	MaxBody, MaxIngest int64
	// ReadHeaderTimeout and ReadTimeout cut slow clients; defaults 5 s
	// and 30 s. A streaming reply is not bound by ReadTimeout.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// Version is hearth's, reported by /health.
	Version string
}

// Door is the HTTP door.
type Door struct {
	core    Core
	o       Options
	log     *slog.Logger
	mux     *http.ServeMux
	started time.Time
	// mcpHandler is the MCP server's streamable HTTP handler (mcp.go).
	mcpHandler http.Handler
}

// New returns the door over core.
func New(core Core, o Options) (*Door, error) {
	if core == nil || o.Auth == nil {
		return nil, errors.New("httpdoor: a core and an authenticator are required")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.MaxIngest <= 0 {
		o.MaxIngest = 8 << 20
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	d := &Door{core: core, o: o, log: o.Log, mux: http.NewServeMux(), started: time.Now()}
	d.mcpHandler = d.newMCPHandler()
	d.routes()
	return d, nil
}

// route is one endpoint: what it touches (for authorization; "" is open
// to anyone) and its handler.
type route struct {
	res  auth.Resource
	act  auth.Action
	open bool
	h    func(*call) error
}

func (d *Door) routes() {
	for pattern, r := range map[string]route{
		"POST /v1/chat/completions": {res: auth.ResConversation, act: auth.ActWrite, h: d.chatCompletions},
		"GET /v1/models":            {res: auth.ResConversation, act: auth.ActRead, h: d.models},
		"POST /v1/embeddings":       {res: auth.ResMemory, act: auth.ActRead, h: d.embeddings},
		"POST /engine/chat":         {res: auth.ResConversation, act: auth.ActWrite, h: d.engineChat},
		"POST /v1/query":            {res: auth.ResMemory, act: auth.ActRead, h: d.query},
		"POST /v1/ingest":           {res: auth.ResVault, act: auth.ActWrite, h: d.ingest},
		"GET /v1/stats":             {res: auth.ResMetrics, act: auth.ActRead, h: d.stats},
		"GET /health":               {open: true, h: d.health},
		"GET /health/{$}":           {open: true, h: d.health},
		"GET /health/detailed":      {res: auth.ResMetrics, act: auth.ActRead, h: d.healthDetailed},
		"GET /metrics":              {res: auth.ResMetrics, act: auth.ActRead, h: d.metrics},
		// MCP's streamable HTTP (POST; GET and DELETE are 405, the
		// server keeping no sessions); each tool authorizes its own.
		"/mcp": {res: auth.ResMemory, act: auth.ActRead, h: d.mcp},
	} {
		name := pattern[strings.IndexByte(pattern, ' ')+1:]
		d.mux.Handle(pattern, d.wrap(name, r))
	}
	for pattern, r := range d.conversationRoutes() {
		d.mux.Handle(pattern, d.wrap(pattern[strings.IndexByte(pattern, ' ')+1:], r))
	}
	d.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c := d.newCall(w, r, "unknown")
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			r2 := r.Clone(r.Context())
			r2.Method = m
			if _, p := d.mux.Handler(r2); p != "/" && p != "" {
				w.Header().Set("Allow", m)
				d.finish(c, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", code: "method_not_allowed", msg: "use " + m + " for " + r.URL.Path})
				return
			}
		}
		d.finish(c, errNotFound)
	})
}

// Handler is the door's http.Handler (for tests and embedding).
func (d *Door) Handler() http.Handler { return d.mux }

// Serve serves HTTP on ln until ctx ends, then shuts down: new requests
// are refused and streams in flight end with the core (which ends every
// subscription on shutdown).
func (d *Door) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           d.mux,
		ReadHeaderTimeout: d.o.ReadHeaderTimeout,
		ReadTimeout:       d.o.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	})
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("http door: %w", err)
}

// call is one request as the door handles it.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	id    string // request id: header, body and log lines
	route string
	who   auth.Identity
	start time.Time
	trace *transcript // non-nil when the owner asked for debug=true
	// streaming: the response is an SSE stream already started, so an
	// error can no longer be a status.
	streaming bool
	status    int
}

func (d *Door) newCall(w http.ResponseWriter, r *http.Request, route string) *call {
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = newRequestID()
	}
	w.Header().Set("X-Request-Id", id)
	return &call{w: w, r: r, id: id, route: route, start: time.Now()}
}

// wrap authenticates and authorizes a request, runs the handler, and
// answers its error in the one error shape, logging one line per request.
func (d *Door) wrap(name string, rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := d.newCall(w, r, name)
		if !rt.open {
			if err := d.admit(c, rt); err != nil {
				d.finish(c, err)
				return
			}
		}
		if c.who.IsOwner() && r.URL.Query().Get("debug") == "true" {
			c.trace = &transcript{Route: name}
		}
		d.finish(c, rt.h(c))
	})
}

// throttled is the 429 of a source that must wait.
func throttled(wait time.Duration) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limited",
		msg: "too many failed attempts from this address; try again later", retryAfter: wait}
}

// rateLimited is the 429 of an identity whose requests are spent.
func rateLimited(wait time.Duration) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limited",
		msg: "too many requests from this credential; try again after retry_after_ms", retryAfter: max(wait, time.Millisecond)}
}

// admit authenticates the bearer token, authorizes the route and takes
// the request from the identity's rate limit.
func (d *Door) admit(c *call, rt route) error {
	src := sourceAddr(c.r)
	if d.o.Throttle != nil {
		if w := d.o.Throttle.Wait(src); w > 0 {
			return throttled(w)
		}
	}
	tok, ok := bearer(c.r.Header.Get("Authorization"))
	var id auth.Identity
	var err error = errUnauthenticated
	if ok {
		id, err = d.o.Auth.Authenticate(c.r.Context(), tok, src)
	}
	var thr *auth.ThrottledError
	switch {
	case errors.As(err, &thr):
		return throttled(thr.RetryAfter)
	case err != nil:
		d.log.Info("http: authentication failed", "request_id", c.id, "route", c.route, "src", src)
		if d.o.Throttle != nil {
			d.o.Throttle.Failed(src)
		}
		d.o.Metrics.AuthFailure("http")
		return errUnauthenticated
	}
	if d.o.Throttle != nil {
		d.o.Throttle.Succeeded(src)
	}
	c.who = id
	if err := d.o.Auth.Authorize(id, rt.res, rt.act); err != nil {
		d.log.Info("http: forbidden", "request_id", c.id, "route", c.route, "subject", id.Subject, "actor", id.Actor)
		return errForbidden
	}
	if d.o.Limiter != nil {
		if w := d.o.Limiter.Allow(id); w > 0 {
			d.log.Info("http: rate limited", "request_id", c.id, "route", c.route, "subject", id.Subject, "actor", id.Actor, "retry_after", w)
			return rateLimited(w)
		}
	}
	c.r = c.r.WithContext(auth.WithIdentity(c.r.Context(), id))
	return nil
}

// finish answers err (nil: the handler answered) and logs the request.
func (d *Door) finish(c *call, err error) {
	if err != nil && !c.streaming {
		ae := asAPIError(err)
		if ae.status >= 500 {
			d.log.Error("http: request failed", "request_id", c.id, "route", c.route, "err", err)
		}
		c.status = ae.status
		writeError(c, ae)
	} else if err != nil {
		d.log.Warn("http: stream ended with an error", "request_id", c.id, "route", c.route, "err", err)
	}
	d.o.Metrics.Request("http", c.route, strconv.Itoa(c.status), time.Since(c.start))
	d.log.Info("http", "request_id", c.id, "method", c.r.Method, "route", c.route, "status", c.status,
		"subject", c.who.Subject, "ms", time.Since(c.start).Milliseconds())
}

func bearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(h[len(p):]), true
}

func sourceAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// validRequestID accepts a client's own request id when it is short and
// plain, so that a caller can correlate; anything else gets a new one.
func validRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
