package embed_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/embed"
	"github.com/mnemo/mnemo/memory/embed/embedtest"
	"github.com/mnemo/mnemo/memory/recall"
)

var (
	_ recall.Embedder = (*embed.OpenAI)(nil)
	_ recall.Embedder = (*embed.Ollama)(nil)
)

const key = "sk-test-0123456789-secret"

// prober is what both adapters offer beyond recall.Embedder.
type prober interface {
	recall.Embedder
	Probe(ctx context.Context) (int, error)
}

// adapter pairs an embedder constructor with its stand-in.
type adapter struct {
	name      string
	server    func(embedtest.Config) *embedtest.Server
	embedder  func(embed.HTTPOptions) prober
	qwenModel string // the Qwen3 embedding model as this API names it
}

func adapters() []adapter {
	return []adapter{
		{
			name:      "openai",
			server:    embedtest.NewOpenAI,
			embedder:  func(o embed.HTTPOptions) prober { return embed.NewOpenAI(o) },
			qwenModel: "Qwen/Qwen3-Embedding-0.6B",
		},
		{
			name:      "ollama",
			server:    embedtest.NewOllama,
			embedder:  func(o embed.HTTPOptions) prober { return embed.NewOllama(o) },
			qwenModel: "qwen3-embedding:0.6b",
		},
	}
}

func vectors(model string, dim int, texts ...string) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			out[i] = make([]float32, dim)
			continue
		}
		out[i] = embedtest.Vector(model, t, dim)
	}
	return out
}

// wantErr describes an expected *embed.Error.
type wantErr struct {
	status     int
	retryable  bool
	retryAfter time.Duration
	is         error // errors.Is target, if any
}

// sentRequest is what a test checks of a recorded request.
type sentRequest struct {
	At         time.Duration // since the call began
	Input      []string
	Dimensions int
}

// TestAdapters runs each case against both adapters and their stand-ins,
// in a synctest bubble over the in-memory transport, so backoff and
// timeouts run on the fake clock and their timings are exact.
func TestAdapters(t *testing.T) {
	texts3 := []string{"my dog likes the park", "taxes are due", "coffee at nine"}
	ok := func(texts ...string) sentRequest { return sentRequest{Input: texts} }
	at := func(d time.Duration, r sentRequest) sentRequest { r.At = d; return r }
	tests := []struct {
		name      string
		cfg       embedtest.Config // APIKey defaults to key
		opts      embed.HTTPOptions
		qwen      bool // use the adapter's Qwen3 model name
		faults    []embedtest.Fault
		transport func(http.RoundTripper) http.RoundTripper
		texts     []string
		want      [][]float32 // nil: computed from model and wantDim
		wantDim   int
		wantName  string // with %s for the provider
		wantErr   *wantErr
		wantSent  []sentRequest
	}{
		{
			name:     "learns the dimension from the first reply",
			opts:     embed.HTTPOptions{Model: "tiny"},
			texts:    texts3,
			wantDim:  8,
			wantName: "%s:tiny:8",
			wantSent: []sentRequest{ok(texts3...)},
		},
		{
			name:     "qwen3-style 1024-dim model, dimension configured and sent",
			opts:     embed.HTTPOptions{Dim: 1024},
			qwen:     true,
			texts:    texts3,
			wantDim:  1024,
			wantSent: []sentRequest{{Input: texts3, Dimensions: 1024}},
		},
		{
			name:     "matryoshka truncation through dimensions",
			opts:     embed.HTTPOptions{Model: "text-embedding-3-small", Dim: 256},
			texts:    texts3,
			wantDim:  256,
			wantName: "%s:text-embedding-3-small:256",
			wantSent: []sentRequest{{Input: texts3, Dimensions: 256}},
		},
		{
			name:    "batches keep order",
			opts:    embed.HTTPOptions{Model: "tiny", BatchSize: 4},
			texts:   strings.Fields("a0 a1 a2 a3 a4 a5 a6 a7 a8 a9"),
			wantDim: 8,
			wantSent: []sentRequest{
				ok("a0", "a1", "a2", "a3"), ok("a4", "a5", "a6", "a7"), ok("a8", "a9"),
			},
		},
		{
			name:     "empty and blank texts are not sent",
			opts:     embed.HTTPOptions{Model: "tiny"},
			texts:    []string{"", "hello there", " \n\t", "again"},
			wantDim:  8,
			wantSent: []sentRequest{ok("hello there", "again")},
		},
		{
			name:     "only empty texts: one probe learns the dimension",
			opts:     embed.HTTPOptions{Model: "tiny"},
			texts:    []string{"", ""},
			wantDim:  8,
			wantSent: []sentRequest{ok("dimension probe")},
		},
		{
			name:     "only empty texts with a known dimension: no request",
			opts:     embed.HTTPOptions{Model: "tiny", Dim: 8},
			texts:    []string{""},
			wantDim:  8,
			wantSent: nil,
		},
		{
			name:     "no texts: no request",
			opts:     embed.HTTPOptions{Model: "tiny"},
			texts:    []string{},
			want:     [][]float32{},
			wantName: "%s:tiny:0",
		},
		{
			name:     "429 is retried after 250ms",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 429}},
			texts:    texts3,
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3...), at(250*time.Millisecond, ok(texts3...))},
		},
		{
			name:    "503 then 502: backoff 250ms then 1s",
			opts:    embed.HTTPOptions{Model: "tiny"},
			faults:  []embedtest.Fault{{Status: 503}, {Status: 502}},
			texts:   texts3,
			wantDim: 8,
			wantSent: []sentRequest{
				ok(texts3...), at(250*time.Millisecond, ok(texts3...)), at(1250*time.Millisecond, ok(texts3...)),
			},
		},
		{
			name:    "three 500s: gives up after 3 attempts",
			opts:    embed.HTTPOptions{Model: "tiny"},
			faults:  []embedtest.Fault{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}},
			texts:   texts3,
			wantErr: &wantErr{status: 500, retryable: true},
			wantSent: []sentRequest{
				ok(texts3...), at(250*time.Millisecond, ok(texts3...)), at(1250*time.Millisecond, ok(texts3...)),
			},
		},
		{
			name:    "more attempts wait 2s each",
			opts:    embed.HTTPOptions{Model: "tiny", MaxAttempts: 5},
			faults:  []embedtest.Fault{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}},
			texts:   texts3[:1],
			wantDim: 8,
			wantSent: []sentRequest{
				ok(texts3[0]), at(250*time.Millisecond, ok(texts3[0])), at(1250*time.Millisecond, ok(texts3[0])),
				at(3250*time.Millisecond, ok(texts3[0])), at(5250*time.Millisecond, ok(texts3[0])),
			},
		},
		{
			name:     "Retry-After in seconds is honoured",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 429, RetryAfter: "3"}},
			texts:    texts3[:1],
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3[0]), at(3*time.Second, ok(texts3[0]))},
		},
		{
			name:     "retry-after-ms is honoured",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 429, RetryAfterMS: "1500"}},
			texts:    texts3[:1],
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3[0]), at(1500*time.Millisecond, ok(texts3[0]))},
		},
		{
			name: "Retry-After as an HTTP date is honoured",
			opts: embed.HTTPOptions{Model: "tiny"},
			// The bubble's clock starts at 2000-01-01 00:00:00 UTC.
			faults:   []embedtest.Fault{{Status: 503, RetryAfter: "Sat, 01 Jan 2000 00:00:02 GMT"}},
			texts:    texts3[:1],
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3[0]), at(2*time.Second, ok(texts3[0]))},
		},
		{
			name:     "Retry-After shorter than the backoff: the backoff wins",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 503, RetryAfter: "0.1"}},
			texts:    texts3[:1],
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3[0]), at(250*time.Millisecond, ok(texts3[0]))},
		},
		{
			name:     "Retry-After beyond the cap: returned to the caller at once",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 429, RetryAfter: "120"}},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 429, retryable: true, retryAfter: 120 * time.Second},
			wantSent: []sentRequest{ok(texts3[0])},
		},
		{
			name:     "400 is not retried",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 400, Message: "input too long"}},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 400},
			wantSent: []sentRequest{ok(texts3[0])},
		},
		{
			name:     "wrong API key: 401, not retried, key not in the error",
			cfg:      embedtest.Config{APIKey: "sk-the-right-one"},
			opts:     embed.HTTPOptions{Model: "tiny"},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 401},
			wantSent: []sentRequest{ok(texts3[0])},
		},
		{
			name:     "a server echoing the key: redacted",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Status: 403, Message: "key " + key + " is disabled"}},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 403},
			wantSent: []sentRequest{ok(texts3[0])},
		},
		{
			name:     "unknown model: 404, not retried",
			opts:     embed.HTTPOptions{Model: "no-such-model"},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 404},
			wantSent: []sentRequest{ok(texts3[0])},
		},
		{
			name:     "a hang times out and is retried",
			opts:     embed.HTTPOptions{Model: "tiny", Timeout: 5 * time.Second},
			faults:   []embedtest.Fault{{Hang: true}},
			texts:    texts3[:1],
			wantDim:  8,
			wantSent: []sentRequest{ok(texts3[0]), at(5250*time.Millisecond, ok(texts3[0]))},
		},
		{
			name:   "a transport failure is retried",
			opts:   embed.HTTPOptions{Model: "tiny"},
			texts:  texts3[:1],
			faults: nil,
			transport: func(next http.RoundTripper) http.RoundTripper {
				var calls atomic.Int32
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if calls.Add(1) == 1 {
						r.Body.Close()
						return nil, errors.New("connection reset by peer")
					}
					return next.RoundTrip(r)
				})
			},
			wantDim:  8,
			wantSent: []sentRequest{at(250*time.Millisecond, ok(texts3[0]))},
		},
		{
			name:     "reply of the wrong dimension",
			opts:     embed.HTTPOptions{Model: "tiny", Dim: 8},
			faults:   []embedtest.Fault{{Dim: 7}},
			texts:    texts3,
			wantErr:  &wantErr{status: 200, is: embed.ErrDimension},
			wantSent: []sentRequest{{Input: texts3, Dimensions: 8}},
		},
		{
			name:     "vectors change length between batches",
			opts:     embed.HTTPOptions{Model: "tiny", BatchSize: 2},
			faults:   []embedtest.Fault{{}, {Dim: 9}},
			texts:    texts3,
			wantErr:  &wantErr{status: 200, is: embed.ErrDimension},
			wantSent: []sentRequest{ok(texts3[:2]...), ok(texts3[2])},
		},
		{
			name:     "one vector short",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{DropLast: true}},
			texts:    texts3,
			wantErr:  &wantErr{status: 200},
			wantSent: []sentRequest{ok(texts3...)},
		},
		{
			name:     "malformed reply",
			opts:     embed.HTTPOptions{Model: "tiny"},
			faults:   []embedtest.Fault{{Body: `{"data": [`}},
			texts:    texts3[:1],
			wantErr:  &wantErr{status: 200},
			wantSent: []sentRequest{ok(texts3[0])},
		},
	}
	for _, ad := range adapters() {
		for _, tt := range tests {
			t.Run(ad.name+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := tt.cfg
					if cfg.APIKey == "" {
						cfg.APIKey = key
					}
					srv := ad.server(cfg)
					defer srv.Close()
					srv.Fail(tt.faults...)
					var rt http.RoundTripper = embedtest.Transport(srv)
					if tt.transport != nil {
						rt = tt.transport(rt)
					}
					var logs bytes.Buffer
					opts := tt.opts
					opts.BaseURL = "http://embed.test/v1"
					if ad.name == "ollama" {
						opts.BaseURL = "http://embed.test"
					}
					opts.APIKey = key
					opts.HTTPClient = &http.Client{Transport: rt}
					opts.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
					if tt.qwen {
						opts.Model = ad.qwenModel
					}
					e := ad.embedder(opts)

					start := time.Now()
					got, err := e.Embed(t.Context(), tt.texts)

					if tt.wantErr != nil {
						checkErr(t, err, *tt.wantErr)
					} else {
						if err != nil {
							t.Fatalf("Embed: %v", err)
						}
						want := tt.want
						if want == nil {
							want = vectors(opts.Model, tt.wantDim, tt.texts...)
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("vectors (-want +got):\n%s", diff)
						}
						if tt.wantDim != 0 && e.Dim() != tt.wantDim {
							t.Errorf("Dim() = %d, want %d", e.Dim(), tt.wantDim)
						}
					}
					if tt.wantName != "" {
						if want := strings.ReplaceAll(tt.wantName, "%s", ad.name); e.Name() != want {
							t.Errorf("Name() = %q, want %q", e.Name(), want)
						}
					}

					var sent []sentRequest
					for _, r := range srv.Requests() {
						sent = append(sent, sentRequest{At: r.At.Sub(start), Input: r.Input, Dimensions: r.Dimensions})
						if r.Auth != "Bearer "+key {
							t.Errorf("request Authorization = %q, want the bearer key", r.Auth)
						}
					}
					if diff := cmp.Diff(tt.wantSent, sent, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("requests (-want +got):\n%s", diff)
					}
					if strings.Contains(logs.String(), key) {
						t.Errorf("the API key appears in the log:\n%s", logs.String())
					}
				})
			})
		}
	}
}

func checkErr(t *testing.T, err error, want wantErr) {
	t.Helper()
	var e *embed.Error
	if !errors.As(err, &e) {
		t.Fatalf("Embed error = %v (%T), want an *embed.Error", err, err)
	}
	got := wantErr{status: e.Status, retryable: e.Retryable, retryAfter: e.RetryAfter, is: want.is}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(wantErr{}), cmpopts.EquateErrors()); diff != "" {
		t.Errorf("error %q (-want +got):\n%s", err, diff)
	}
	if want.is != nil && !errors.Is(err, want.is) {
		t.Errorf("error %q does not wrap %v", err, want.is)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error %q contains the API key", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCancel checks that cancelling the context ends Embed at once: while
// a request hangs, while waiting to retry, and when the deadline would
// pass during the wait.
func TestCancel(t *testing.T) {
	tests := []struct {
		name     string
		faults   []embedtest.Fault
		cancelAt time.Duration // 0: no cancel
		timeout  time.Duration // a context deadline, 0: none
		wantAt   time.Duration // when Embed returns
		wantIs   error
		wantSent int
	}{
		{"cancel during a hang", []embedtest.Fault{{Hang: true}}, time.Second, 0, time.Second, context.Canceled, 1},
		{"cancel during the backoff wait", []embedtest.Fault{{Status: 503}}, 100 * time.Millisecond, 0, 100 * time.Millisecond, context.Canceled, 1},
		{"deadline during a hang", []embedtest.Fault{{Hang: true}}, 0, 2 * time.Second, 2 * time.Second, context.DeadlineExceeded, 1},
		{"deadline before the retry: no wait", []embedtest.Fault{{Status: 503}}, 0, 200 * time.Millisecond, 0, nil, 1},
	}
	for _, ad := range adapters() {
		for _, tt := range tests {
			t.Run(ad.name+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := ad.server(embedtest.Config{})
					defer srv.Close()
					srv.Fail(tt.faults...)
					e := ad.embedder(embed.HTTPOptions{
						BaseURL:    "http://embed.test/v1",
						Model:      "tiny",
						HTTPClient: &http.Client{Transport: embedtest.Transport(srv)},
					})
					if ad.name == "ollama" {
						e = ad.embedder(embed.HTTPOptions{
							BaseURL:    "http://embed.test",
							Model:      "tiny",
							HTTPClient: &http.Client{Transport: embedtest.Transport(srv)},
						})
					}
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if tt.timeout > 0 {
						ctx, cancel = context.WithTimeout(ctx, tt.timeout)
						defer cancel()
					}
					if tt.cancelAt > 0 {
						time.AfterFunc(tt.cancelAt, cancel)
					}
					start := time.Now()
					vs, err := e.Embed(ctx, []string{"hello"})
					if took := time.Since(start); took != tt.wantAt {
						t.Errorf("Embed returned after %v, want %v", took, tt.wantAt)
					}
					if err == nil {
						t.Fatalf("Embed = %d vectors, nil; want an error", len(vs))
					}
					var ee *embed.Error
					if !errors.As(err, &ee) {
						t.Errorf("error %v is %T, want *embed.Error", err, err)
					}
					if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
						t.Errorf("error %v does not wrap %v", err, tt.wantIs)
					}
					if n := len(srv.Requests()); n != tt.wantSent {
						t.Errorf("%d requests, want %d", n, tt.wantSent)
					}
				})
			})
		}
	}
}

// TestReverseOrder checks that OpenAI replies are put in order by index,
// not by position.
func TestReverseOrder(t *testing.T) {
	srv := embedtest.NewOpenAI(embedtest.Config{ReverseOrder: true})
	e := embed.NewOpenAI(embed.HTTPOptions{BaseURL: srv.Start(t), Model: "tiny", BatchSize: 3})
	texts := embedtest.Texts(7)
	got, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if diff := cmp.Diff(vectors("tiny", 8, texts...), got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
}

// TestProbe checks that Probe learns the dimension before any Embed.
func TestProbe(t *testing.T) {
	for _, ad := range adapters() {
		t.Run(ad.name, func(t *testing.T) {
			srv := ad.server(embedtest.Config{})
			e := ad.embedder(embed.HTTPOptions{BaseURL: srv.Start(t), Model: ad.qwenModel})
			if e.Dim() != 0 {
				t.Errorf("Dim() before any reply = %d, want 0", e.Dim())
			}
			dim, err := e.Probe(t.Context())
			if err != nil || dim != 1024 || e.Dim() != 1024 {
				t.Errorf("Probe = %d, %v; Dim() = %d; want 1024, nil, 1024", dim, err, e.Dim())
			}
			if want := ad.name + ":" + ad.qwenModel + ":1024"; e.Name() != want {
				t.Errorf("Name() = %q, want %q", e.Name(), want)
			}
		})
	}
}

// TestMissingModel checks the error when no model is configured: no
// request is made.
func TestMissingModel(t *testing.T) {
	for _, ad := range adapters() {
		t.Run(ad.name, func(t *testing.T) {
			srv := ad.server(embedtest.Config{})
			e := ad.embedder(embed.HTTPOptions{BaseURL: srv.Start(t)})
			_, err := e.Embed(t.Context(), []string{"hello"})
			checkErr(t, err, wantErr{})
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests, want 0", n)
			}
		})
	}
}

// TestConformance runs the shared embedder conformance suite against each
// adapter over real HTTP to its stand-in.
func TestConformance(t *testing.T) {
	for _, ad := range adapters() {
		for _, model := range []string{"tiny", ad.qwenModel} {
			t.Run(ad.name+"/"+model, func(t *testing.T) {
				srv := ad.server(embedtest.Config{APIKey: key})
				e := ad.embedder(embed.HTTPOptions{BaseURL: srv.Start(t), APIKey: key, Model: model})
				embedtest.RunEmbedderConformance(t, e)
			})
		}
	}
}
