package ndjson

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// These tests drive the core through this door, over loopback TCP with the
// real ipc client: what they check is what a client sees on the wire.

const testToken = "test-token-0123456789"

// connectLine is a valid handshake, for raw connections.
const connectLine = `{"type":"connect","token":"` + testToken + `"}`

// testConfig is the core's Config, the door's options, and conveniences
// that startHearth turns into the core's interfaces, so that a test says
// what it needs in one place.
type testConfig struct {
	hearth.Config

	// The door's options (see Options).
	MaxClients       int
	ClientQueue      int
	ClientBudget     int64
	DropGrace        time.Duration
	HandshakeTimeout time.Duration
	Gate             gateOptions
	Shutdown         func()
	Auth             Authority
	Throttle         *auth.Throttle
	TLS              *tls.Config
	Fingerprint      string
	Metrics          *telemetry.Metrics
	Limiter          Limiter

	// Model answers every turn (Config.Models). NoModel, when Model is
	// nil, is the error the models report instead (shown to clients).
	Model   hearth.Model
	NoModel error
	// Context is the session's system messages (Config.Anchor).
	Context func() ([]llm.Message, error)
	// Memories, Search and OnAppend make Config.Memory when any is set:
	// the memory block of a turn, a search, and the commit notification.
	Memories func(ctx context.Context, req memory.ContextRequest) string
	Search   func(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error)
	OnAppend func(id string)
	// ResolveBudget gives each turn's budget (Config.Budgets).
	ResolveBudget func() hearth.ContextBudget
}

// models always resolves to m, or fails with err.
type models struct {
	m   hearth.Model
	err error
}

func (f models) Resolve() (hearth.Model, error) { return f.m, f.err }

type budgetFunc func() hearth.ContextBudget

func (f budgetFunc) Budget() hearth.ContextBudget { return f() }

type anchorFunc func() ([]llm.Message, error)

func (f anchorFunc) SessionContext() ([]llm.Message, error) { return f() }

// funcMemory is a hearth.Memory over testConfig's functions; a missing
// one does nothing (and a missing search fails).
type funcMemory struct {
	relevant func(context.Context, memory.ContextRequest) string
	search   func(context.Context, memory.SearchRequest) ([]memory.Hit, error)
	notify   func(string)
}

func (m funcMemory) Relevant(ctx context.Context, req memory.ContextRequest) string {
	if m.relevant == nil {
		return ""
	}
	return m.relevant(ctx, req)
}

func (m funcMemory) Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	if m.search == nil {
		return nil, errors.New("test hearth: no search configured")
	}
	return m.search(ctx, req)
}

func (m funcMemory) Forget(context.Context, []string, bool) error { return nil }

func (m funcMemory) Notify(id string) {
	if m.notify != nil {
		m.notify(id)
	}
}

func (funcMemory) Health() *memory.IndexHealth { return nil }

// build is the core's Config and the door's Options that c describes.
func (c *testConfig) build() (hearth.Config, Options) {
	cfg := c.Config
	if cfg.Models == nil && (c.Model != nil || c.NoModel != nil) {
		cfg.Models = models{m: c.Model, err: c.NoModel}
	}
	if cfg.Anchor == nil && c.Context != nil {
		cfg.Anchor = anchorFunc(c.Context)
	}
	if cfg.Memory == nil && (c.Memories != nil || c.Search != nil || c.OnAppend != nil) {
		cfg.Memory = funcMemory{relevant: c.Memories, search: c.Search, notify: c.OnAppend}
	}
	if cfg.Budgets == nil && c.ResolveBudget != nil {
		cfg.Budgets = budgetFunc(c.ResolveBudget)
	}
	return cfg, Options{
		Token:            testToken,
		Metrics:          c.Metrics,
		MaxClients:       c.MaxClients,
		ClientQueue:      c.ClientQueue,
		ClientBudget:     c.ClientBudget,
		DropGrace:        c.DropGrace,
		HandshakeTimeout: c.HandshakeTimeout,
		Gate:             c.Gate,
		Shutdown:         c.Shutdown,
		Auth:             c.Auth,
		Throttle:         c.Throttle,
		TLS:              c.TLS,
		Fingerprint:      c.Fingerprint,
		Limiter:          c.Limiter,
		Log:              cfg.Log,
	}
}

// scriptModel is a Model whose replies the test scripts. A reply func gets
// the request and streams through onText.
type scriptModel struct {
	mu       sync.Mutex
	requests []llm.Request
	replies  chan replyFunc
	inflight atomic.Int32
	maxSeen  atomic.Int32
}

type replyFunc func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)

func newScriptModel() *scriptModel {
	return &scriptModel{replies: make(chan replyFunc, 64)}
}

func (m *scriptModel) Name() string  { return "script" }
func (m *scriptModel) Model() string { return "script-1" }

func (m *scriptModel) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	n := m.inflight.Add(1)
	defer m.inflight.Add(-1)
	for {
		old := m.maxSeen.Load()
		if n <= old || m.maxSeen.CompareAndSwap(old, n) {
			break
		}
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	select {
	case f := <-m.replies:
		return f(ctx, req, onText)
	default:
		// Unscripted: echo the last message in two chunks.
		last := req.Messages[len(req.Messages)-1].Content
		onText("echo: ")
		onText(last)
		return llm.Response{Text: "echo: " + last, Model: "script-1", Usage: &llm.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
}

func (m *scriptModel) lastRequest() llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

func chunks(parts ...string) replyFunc {
	return func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		for _, p := range parts {
			onText(p)
		}
		return llm.Response{Text: strings.Join(parts, ""), Model: "script-1"}, nil
	}
}

// testHearth is a core and this door serving it on a loopback port.
type testHearth struct {
	addr    string
	core    *hearth.Hearth
	journal *journal.Journal
	dir     string

	stopOnce sync.Once
	cancel   context.CancelFunc
	runDone  chan error // the core's Run
	served   chan error // the door's Serve
}

// startHearth runs a core over a real journal in dir (a new temp dir when
// empty) and serves it on a loopback port; the test's cleanup stops both.
func startHearth(t testing.TB, dir string, mutate func(*testConfig)) *testHearth {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tc := &testConfig{
		Config: hearth.Config{Journal: j, ShutdownGrace: 2 * time.Second, Log: slog.New(slog.NewTextHandler(t.Output(), nil))},
		// Failed handshakes are answered at once, but for a token delay:
		// only the throttling test waits for the real thing.
		Gate: gateOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
	}
	if mutate != nil {
		mutate(tc)
	}
	cfg, opts := tc.build()
	core, err := hearth.New(cfg)
	if err != nil {
		j.Close()
		t.Fatal(err)
	}
	door, err := New(core, opts)
	if err != nil {
		j.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		j.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHearth{
		addr: ln.Addr().String(), core: core, journal: j, dir: dir,
		cancel: cancel, runDone: make(chan error, 1), served: make(chan error, 1),
	}
	go func() { th.runDone <- core.Run(ctx) }()
	go func() { th.served <- door.Serve(ctx, ln) }()
	t.Cleanup(func() { th.stop(t) })
	return th
}

// stop shuts the core and the door down, waits for both, and closes the
// journal; only the first call does anything.
func (th *testHearth) stop(t testing.TB) {
	t.Helper()
	th.stopOnce.Do(func() {
		th.cancel()
		if err := <-th.runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := <-th.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := th.journal.Close(); err != nil {
			t.Errorf("journal close: %v", err)
		}
	})
}

func dial(t *testing.T, addr string) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: testToken, Client: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recvUntil reads messages until stop returns true, returning all read.
func recvUntil(t *testing.T, c *ipc.Conn, stop func(ipc.Msg) bool) []ipc.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []ipc.Msg
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			var types []string
			for _, m := range got[max(0, len(got)-6):] {
				types = append(types, m.Type())
			}
			t.Fatalf("recv after %d messages (last: %v): %v", len(got), types, err)
		}
		got = append(got, m)
		if stop(m) {
			return got
		}
	}
}

func isDone(m ipc.Msg) bool { _, ok := m.(*ipc.Done); return ok }

// streamed is the text of the tokens among msgs.
func streamed(msgs []ipc.Msg) string {
	var b strings.Builder
	for _, m := range msgs {
		if tok, ok := m.(*ipc.Token); ok {
			b.WriteString(tok.Content)
		}
	}
	return b.String()
}

// rawConn is a hand-driven connection, for checking exactly what is sent.
type rawConn struct {
	net.Conn
	r *ipc.Reader // one for the connection: it buffers what it read ahead
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{Conn: nc, r: ipc.NewReader(nc)}
}

func (c *rawConn) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// rest reads everything until the server closes the connection.
func (c *rawConn) rest(t *testing.T) []ipc.Msg {
	t.Helper()
	var got []ipc.Msg
	for {
		m, err := c.r.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("read after %d messages at %s: %v", len(got), time.Now().Format("15:04:05.000"), err)
			}
			return got
		}
		got = append(got, m)
	}
}

func (c *rawConn) next(t *testing.T) ipc.Msg {
	t.Helper()
	m, err := c.r.Read()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}
