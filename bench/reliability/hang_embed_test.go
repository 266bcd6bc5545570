package reliability

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/embed/embedtest"
)

// gatedHTTP serves a stand-in on a fixed loopback address that the test
// can stall (hang: requests wait at the gate), kill (down: the listener
// and every connection closed, so new ones are refused) and bring back
// (resume, up: on the same port).
type gatedHTTP struct {
	t    *testing.T
	h    http.Handler
	addr string
	stop chan struct{} // closed when the test ends: releases the gate

	mu   sync.Mutex
	gate chan struct{} // closed while open
	srv  *http.Server
	done chan struct{} // closed when srv's Serve returns
	held atomic.Int64  // requests waiting at the gate
}

func startGated(t *testing.T, h http.Handler) *gatedHTTP {
	t.Helper()
	open := make(chan struct{})
	close(open)
	g := &gatedHTTP{t: t, h: h, stop: make(chan struct{}), gate: open}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = l.Addr().String()
	g.serve(l)
	t.Cleanup(func() {
		close(g.stop)
		g.down()
	})
	return g
}

func (g *gatedHTTP) URL() string { return "http://" + g.addr }

func (g *gatedHTTP) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(g.serveHTTP)}
	done := make(chan struct{})
	g.mu.Lock()
	g.srv, g.done = srv, done
	g.mu.Unlock()
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			g.t.Errorf("stand-in at %s: %v", g.addr, err)
		}
	}()
}

func (g *gatedHTTP) serveHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	g.held.Add(1)
	select {
	case <-gate:
	case <-r.Context().Done():
	case <-g.stop:
	}
	g.held.Add(-1)
	if r.Context().Err() != nil {
		return
	}
	g.h.ServeHTTP(w, r)
}

// hang makes requests from now on wait until resume.
func (g *gatedHTTP) hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

// resume lets waiting and new requests through.
func (g *gatedHTTP) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
}

// down kills the server: the listener and every open connection close.
func (g *gatedHTTP) down() {
	g.mu.Lock()
	srv, done := g.srv, g.done
	g.srv = nil
	g.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	<-done
}

// up serves again on the same port.
func (g *gatedHTTP) up() {
	g.t.Helper()
	l, err := net.Listen("tcp", g.addr)
	if err != nil {
		g.t.Fatalf("listen again on %s: %v", g.addr, err)
	}
	g.serve(l)
}

// hangHealth asks hearth for its health report.
func hangHealth(t *testing.T, c *ipc.Conn) *ipc.HealthReport {
	t.Helper()
	return hangHealthy(t, c, "health")
}

// hangSearch asks hearth's memory for query and returns the results,
// failing on an error or after limit.
func hangSearch(t *testing.T, c *ipc.Conn, query, ref string, limit time.Duration) (*ipc.SearchResults, time.Duration) {
	t.Helper()
	start := time.Now()
	hangSend(t, c, &ipc.Search{Query: query, Ref: ref})
	m := hangAwait(t, c, limit, "search "+ref, func(m ipc.Msg) bool { return refOfHang(m) == ref })
	r, ok := m.(*ipc.SearchResults)
	if !ok {
		t.Fatalf("search %s: %T %+v, want results", ref, m, m)
	}
	return r, time.Since(start)
}

// refOfHang is the ref of a search's answer.
func refOfHang(m ipc.Msg) string {
	switch m := m.(type) {
	case *ipc.SearchResults:
		return m.Ref
	case *ipc.Error:
		return m.Ref
	}
	return ""
}

func hangFound(r *ipc.SearchResults, text string) bool {
	return slices.ContainsFunc(r.Results, func(h ipc.SearchHit) bool { return strings.Contains(h.Turn.Content, text) })
}

// hangEmbedded reports whether the embedder was asked for text.
func hangEmbedded(s *embedtest.Server, text string) bool {
	return slices.ContainsFunc(s.Requests(), func(r embedtest.Request) bool {
		return r.Status == http.StatusOK && slices.Contains(r.Input, text)
	})
}

// An HTTP embedder (OpenAI-compatible) that hangs or dies: turns are
// answered all the same (the memory block waits 300 ms at most), health
// answers, a search answers from keywords (the query's embedding gets
// half the search's time), and once the embedder is back the indexer
// embeds what it missed. SIGTERM while the embedder hangs ends hearth at
// once: nothing waits on the indexer.
func TestEmbedderHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	const key = "ek-test-0123456789"
	for _, tc := range []struct {
		name         string
		fault, cured func(g *gatedHTTP)
		// the search answers within; the wire's search timeout is 10 s
		within time.Duration
	}{
		{"hangs", (*gatedHTTP).hang, (*gatedHTTP).resume, 10 * time.Second},
		{"dies", (*gatedHTTP).down, (*gatedHTTP).up, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := embedtest.NewOpenAI(embedtest.Config{APIKey: key})
			g := startGated(t, emb)
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, append(hearthtest.OpenAIEnv(model), "MNEMO_EMBEDDER=openai", "MNEMO_EMBED_MODEL=tiny", "MNEMO_EMBED_DIM=8",
				"MNEMO_EMBED_BASE_URL="+g.URL()+"/v1", "MNEMO_EMBED_API_KEY="+key))
			c := dialHung(t, d)
			const said = "we adopted a puppy called Biscuit"
			m, _ := hangAsk(t, c, said, "m1", 30*time.Second)
			hangReply(t, m, "echo: "+said)
			hangWait(t, "the first turn indexed", func() bool { return hangEmbedded(emb, "echo: "+said) })

			tc.fault(g)
			const asked = "what do you remember about the garden"
			m, took := hangAsk(t, c, asked, "m2", 30*time.Second)
			hangReply(t, m, "echo: "+asked)
			if took > 8*time.Second {
				t.Errorf("a turn took %v with the embedder down, want the memory block's 300 ms bound to keep it short", took)
			}
			h := hangHealth(t, c)
			if h.Index == nil || h.Index.Unavailable {
				t.Errorf("health's index during the fault: %+v, want recall open", h.Index)
			}
			r, took := hangSearch(t, c, "puppy Biscuit", "s1", 15*time.Second)
			if !hangFound(r, said) {
				t.Errorf("search during the fault: %+v, want the keyword match %q", r.Results, said)
			}
			if took > tc.within {
				t.Errorf("search took %v during the fault, want under %v", took, tc.within)
			}
			t.Logf("turn and search during the fault: search answered in %v", took.Round(time.Millisecond))
			if hangEmbedded(emb, asked) {
				t.Error("the embedder answered during the fault")
			}

			tc.cured(g)
			hangWait(t, "the turn missed during the fault indexed", func() bool { return hangEmbedded(emb, asked) })
			r, _ = hangSearch(t, c, "garden", "s2", 15*time.Second)
			if !hangFound(r, asked) {
				t.Errorf("search after the fault: %+v, want %q", r.Results, asked)
			}

			g.hang()
			hangSend(t, c, &ipc.Message{Content: "one more thing", Ref: "m3"})
			hangWait(t, "the indexer held at the hung embedder", func() bool { return g.held.Load() > 0 })
			took = hangStop(t, d, hangGrace)
			t.Logf("stopped in %v with the embedder hung", took.Round(time.Millisecond))
		})
	}
}
