package reliability

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
)

// tcpGate stands between hearth and the Qdrant stand-in (gRPC over HTTP/2,
// passed through byte for byte) on a fixed loopback address: hang holds
// every byte either way until resume (a server that stalls, connections
// open), down closes the listener and every connection (a server that
// stopped: connections refused), up listens again on the same port.
type tcpGate struct {
	t      *testing.T
	target string
	addr   string
	stop   chan struct{} // closed when the test ends
	wg     sync.WaitGroup

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	gate  chan struct{} // closed while open
	held  atomic.Int64  // reads waiting at the gate
}

func startTCPGate(t *testing.T, target string) *tcpGate {
	t.Helper()
	open := make(chan struct{})
	close(open)
	g := &tcpGate{t: t, target: target, stop: make(chan struct{}), conns: map[net.Conn]bool{}, gate: open}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	g.serve(ln)
	t.Cleanup(func() {
		close(g.stop)
		g.down()
		g.wg.Wait()
	})
	return g
}

func (g *tcpGate) serve(ln net.Listener) {
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by down
			}
			g.wg.Go(func() { g.proxy(c) })
		}
	})
}

// proxy joins c to a new connection to the target until either ends or
// down closes them.
func (g *tcpGate) proxy(c net.Conn) {
	s, err := net.Dial("tcp", g.target)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	if g.ln == nil { // went down meanwhile
		g.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	g.conns[c], g.conns[s] = true, true
	g.mu.Unlock()
	var both sync.WaitGroup
	both.Go(func() { g.pump(s, c) })
	both.Go(func() { g.pump(c, s) })
	both.Wait()
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, s)
	g.mu.Unlock()
}

// pump copies src to dst, each read waiting at the gate before it is
// written; it closes both when either fails.
func (g *tcpGate) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			gate := g.gate
			g.mu.Unlock()
			g.held.Add(1)
			select {
			case <-gate:
			case <-g.stop:
			}
			g.held.Add(-1)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				g.t.Logf("gate: %v", err)
			}
			return
		}
	}
}

func (g *tcpGate) hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

func (g *tcpGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
}

// down closes the listener and every connection; a held read is written
// to a closed connection and dropped.
func (g *tcpGate) down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for c := range g.conns {
		c.Close()
	}
	select {
	case <-g.gate:
	default:
		close(g.gate) // release what waits: it fails on the closed connection
	}
}

func (g *tcpGate) up() {
	g.t.Helper()
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		g.t.Fatalf("listen again on %s: %v", g.addr, err)
	}
	g.serve(ln)
}

// hangIndexed is how many documents hearth has indexed since it started.
func hangIndexed(t *testing.T, c *ipc.Conn) int {
	t.Helper()
	h := hangHealth(t, c)
	if h.Index == nil {
		return 0
	}
	return h.Index.Indexed
}

// Qdrant (the gRPC stand-in, behind a gate) that stalls or stops: turns
// are answered all the same, health answers, a search answers from
// keywords over the journal (recall gets half the search's time), and
// once Qdrant is back the indexer stores what it missed. SIGTERM while
// Qdrant stalls ends hearth at once.
func TestQdrantHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	for _, tc := range []struct {
		name         string
		fault, cured func(g *tcpGate)
		within       time.Duration // the search answers before
	}{
		{"stalls", (*tcpGate).hang, (*tcpGate).resume, 10 * time.Second},
		{"stops", (*tcpGate).down, (*tcpGate).up, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := qdranttest.Start(qdranttest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(q.Close)
			g := startTCPGate(t, q.Addr())
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, append(hearthtest.OpenAIEnv(model), "MNEMO_EMBEDDER=none", "MNEMO_QDRANT_ADDR="+g.addr))
			c := dialHung(t, d)
			hangWait(t, "recall open on Qdrant", func() bool {
				h := hangHealth(t, c)
				return h.Index != nil && h.Index.Backend == "qdrant" && h.Index.Ready
			})
			const said = "we adopted a puppy called Biscuit"
			m, _ := hangAsk(t, c, said, "m1", 30*time.Second)
			hangReply(t, m, "echo: "+said)
			hangWait(t, "the first turn in Qdrant", func() bool { return hangIndexed(t, c) >= 2 })
			before := hangIndexed(t, c)

			tc.fault(g)
			const asked = "what do you remember about the garden"
			m, took := hangAsk(t, c, asked, "m2", 30*time.Second)
			hangReply(t, m, "echo: "+asked)
			if took > 8*time.Second {
				t.Errorf("a turn took %v with Qdrant faulty, want the memory block's 300 ms bound to keep it short", took)
			}
			r, took := hangSearch(t, c, "puppy Biscuit", "s1", 15*time.Second)
			if !hangFound(r, said) {
				t.Errorf("search during the fault: %+v, want the keyword match %q", r.Results, said)
			}
			if took > tc.within {
				t.Errorf("search took %v during the fault, want under %v", took, tc.within)
			}
			h := hangHealth(t, c)
			t.Logf("search answered in %v; index %+v", took.Round(time.Millisecond), *h.Index)
			if h.Index.KeywordSearches < 1 {
				t.Errorf("health counts no keyword search: %+v", *h.Index)
			}

			tc.cured(g)
			hangWait(t, "the turn missed during the fault in Qdrant", func() bool { return hangIndexed(t, c) >= before+2 })
			recall := hangHealth(t, c).Index.RecallSearches
			r, _ = hangSearch(t, c, "garden", "s2", 15*time.Second)
			if !hangFound(r, asked) {
				t.Errorf("search after the fault: %+v, want %q", r.Results, asked)
			}
			if got := hangHealth(t, c).Index.RecallSearches; got != recall+1 {
				t.Errorf("recall searches %d after the fault, want %d: Qdrant answered", got, recall+1)
			}

			g.hang()
			hangSend(t, c, &ipc.Message{Content: "one more thing", Ref: "m3"})
			hangWait(t, "the indexer held at the stalled Qdrant", func() bool { return g.held.Load() > 0 })
			took = hangStop(t, d, hangGrace)
			t.Logf("stopped in %v with Qdrant stalled", took.Round(time.Millisecond))
		})
	}
}
