package httpdoor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// These tests run a real core over a real journal (and, where a test asks,
// a real vault) behind this door on a loopback port, and talk to it with
// HTTP clients: what they check is what a client sees.

const testToken = "http-test-token-0123456789"

// scriptModel answers each turn with a scripted reply, or echoes.
type scriptModel struct {
	mu       sync.Mutex
	requests []llm.Request
	replies  chan replyFunc
}

type replyFunc func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)

func newScriptModel() *scriptModel { return &scriptModel{replies: make(chan replyFunc, 64)} }

func (m *scriptModel) Name() string  { return "script" }
func (m *scriptModel) Model() string { return "script-1" }

func (m *scriptModel) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	select {
	case f := <-m.replies:
		return f(ctx, req, onText)
	default:
		last := req.Messages[len(req.Messages)-1].Content
		onText("echo: ")
		onText(last)
		return llm.Response{Text: "echo: " + last, Model: "script-1", Usage: &llm.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
}

func chunks(parts ...string) replyFunc {
	return func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		for _, p := range parts {
			onText(p)
		}
		return llm.Response{Text: strings.Join(parts, ""), Model: "script-1", Usage: &llm.Usage{InputTokens: 7, OutputTokens: int64(len(parts))}}, nil
	}
}

func failing(err error, parts ...string) replyFunc {
	return func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		for _, p := range parts {
			onText(p)
		}
		return llm.Response{}, err
	}
}

// models is the conversation's model m and the others a request may
// name, each by provider/model and by its model name.
type models struct {
	m      hearth.Model
	err    error
	others []hearth.Model
}

func (f models) Resolve() (hearth.Model, error) { return f.m, f.err }

func (f models) all() []hearth.Model {
	if f.m == nil {
		return f.others
	}
	return append([]hearth.Model{f.m}, f.others...)
}

func (f models) Choices() []string {
	var out []string
	for _, m := range f.all() {
		out = append(out, m.Model(), m.Name()+"/"+m.Model())
	}
	return out
}

func (f models) Named(name string) (hearth.Model, bool) {
	for _, m := range f.all() {
		if name == m.Name()+"/"+m.Model() || name == m.Model() {
			return m, true
		}
	}
	return nil, false
}

// fakeMemory answers searches with fixed hits.
type fakeMemory struct{ hits []memory.Hit }

func (fakeMemory) Relevant(context.Context, memory.ContextRequest) string { return "" }
func (m fakeMemory) Search(_ context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	var out []memory.Hit
	for _, h := range m.hits {
		for _, k := range req.Kinds {
			if h.Kind == k {
				out = append(out, h)
			}
		}
	}
	return out, nil
}
func (fakeMemory) Notify(string) {}
func (fakeMemory) Health() *memory.IndexHealth {
	return &memory.IndexHealth{Backend: "embedded", Embedder: "test", Ready: true}
}
func (fakeMemory) Forget(context.Context, []string, bool) error { return nil }

// fakeEmbedder embeds each text as its length and its first byte.
type fakeEmbedder struct{ err error }

func (e fakeEmbedder) Embed(_ context.Context, texts []string) (string, [][]float32, error) {
	if e.err != nil {
		return "", nil, e.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), float32(t[0])}
	}
	return "test-embed-2", out, nil
}

// roleAuth admits testToken as the owner and "service-token" as a
// service, which the shared-token policy then denies.
type roleAuth struct {
	auth.SharedToken
	throttled bool
}

func (a roleAuth) Authenticate(ctx context.Context, cred string, src netip.Addr) (auth.Identity, error) {
	if a.throttled {
		return auth.Identity{}, &auth.ThrottledError{RetryAfter: 1500 * time.Millisecond}
	}
	if auth.TokenEqual(cred, "service-token-0123456789") {
		return auth.Identity{Subject: "svc", Actor: auth.ActorService, Source: src}, nil
	}
	return a.SharedToken.Authenticate(ctx, cred, src)
}

type testConfig struct {
	hearth.Config
	Model    *scriptModel
	NoModel  error
	Others   []hearth.Model // the models a request may name besides Model
	Hits     []memory.Hit
	Vault    bool
	Door     Options
	Embedder Embedder
	Quiet    bool // no log (benchmarks)
	Metrics  bool // telemetry on a fresh registry, watching the core
}

type testHearth struct {
	url     string
	addr    string
	core    *hearth.Hearth
	model   *scriptModel
	journal *journal.Journal
	metrics *telemetry.Metrics
	log     *syncBuffer
	cancel  context.CancelFunc
	done    chan struct{}
}

// syncBuffer is a log both the door and the test touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startHearth(t testing.TB, mutate func(*testConfig)) *testHearth {
	t.Helper()
	dir := t.TempDir()
	tc := &testConfig{Model: newScriptModel()}
	if mutate != nil {
		mutate(tc)
	}
	threads := dir
	if tc.Vault {
		root, err := memory.Open(context.Background(), dir, data.Defaults(), nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := vault.Open(context.Background(), dir, data.Vault(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tc.Config.Vault = v
		threads = root.ThreadsDir()
	}
	j, err := journal.Open(threads, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logBuf, t.Output()), nil))
	if tc.Quiet {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := tc.Config
	cfg.Journal, cfg.ShutdownGrace, cfg.Log = j, 2*time.Second, log
	var ms Models
	if tc.Model != nil || tc.NoModel != nil {
		var m hearth.Model
		if tc.Model != nil {
			m = tc.Model
		}
		mm := models{m: m, err: tc.NoModel, others: tc.Others}
		cfg.Models, ms = mm, mm
	}
	if tc.Hits != nil {
		cfg.Memory = fakeMemory{hits: tc.Hits}
	}
	core, err := hearth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := tc.Door
	if o.Auth == nil {
		o.Auth = roleAuth{SharedToken: auth.SharedToken{Token: testToken}}
	}
	o.Log, o.Models, o.Embedder = log, ms, tc.Embedder
	if tc.Metrics {
		o.Metrics = telemetry.New(prometheus.NewRegistry())
	}
	door, err := New(core, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHearth{url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), core: core, model: tc.Model, journal: j, log: logBuf, cancel: cancel, done: make(chan struct{})}
	th.metrics = o.Metrics
	var wg sync.WaitGroup
	if o.Metrics != nil {
		wait, err := o.Metrics.Watch(ctx, core)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := wait(); err != nil {
				t.Errorf("telemetry: %v", err)
			}
		})
	}
	wg.Go(func() { core.Run(ctx) })
	wg.Go(func() {
		if err := door.Serve(ctx, ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	go func() { wg.Wait(); close(th.done) }()
	t.Cleanup(func() {
		cancel()
		<-th.done
		j.Close()
	})
	return th
}

// do sends a request with the owner's token and a JSON body.
func (th *testHearth) do(t testing.TB, method, path string, body any) *http.Response {
	t.Helper()
	return th.doWith(t, method, path, body, testToken, "application/json")
}

func (th *testHearth) doWith(t testing.TB, method, path string, body any, token, ctype string) *http.Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, th.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" && body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readBody reads the response and checks it against schema.
func readBody(t testing.TB, resp *http.Response, schema string) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(schema, b); err != nil {
		t.Fatalf("%s: response does not match schema %s: %v\n%s", resp.Request.URL.Path, schema, err, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if id := resp.Header.Get("X-Request-Id"); id == "" || m["request_id"] != id {
		t.Fatalf("request_id: header %q, body %v", id, m["request_id"])
	}
	return m
}

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	Name string
	Data string
}

// readSSE reads every event of a stream until it ends.
func readSSE(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Name != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

// history is the journal's records, oldest first.
func (th *testHearth) history(t testing.TB) []journal.Record {
	t.Helper()
	recs, err := th.journal.Tail(100)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// allowAll admits the owner and the service and lets both do anything:
// for what is the owner's alone whatever the policy (debug=true).
type allowAll struct{}

func (allowAll) Authenticate(ctx context.Context, cred string, src netip.Addr) (auth.Identity, error) {
	return roleAuth{SharedToken: auth.SharedToken{Token: testToken}}.Authenticate(ctx, cred, src)
}

func (allowAll) Authorize(auth.Identity, auth.Resource, auth.Action) error { return nil }
