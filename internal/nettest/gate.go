// Package nettest holds network helpers for tests: a TCP gate in front of
// a stand-in server that a test can stall, take down and bring back.
package nettest

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Gate forwards the connections made to its loopback address to a target
// server. A test stalls it (Hang: bytes wait at the gate in both
// directions until Resume), kills it (Down: every connection closed, and
// new ones are closed as soon as they are made, until Up) and brings it back.
//
// The gate keeps its listener for its whole life: a server that goes
// down and comes back on the same port would have to listen there again,
// and in between any other socket on the machine may take the port.
type Gate struct {
	tb   testing.TB
	ln   net.Listener
	stop chan struct{} // closed when the test ends
	wg   sync.WaitGroup

	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	open  chan struct{} // closed while bytes may pass

	held atomic.Int64 // reads waiting at the gate
}

// NewGate starts a gate to target on a free loopback port; it is open and
// up (call Down at once for a server that is not there yet). It closes
// when the test ends.
func NewGate(tb testing.TB, target string) *Gate {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gate: %v", err)
	}
	open := make(chan struct{})
	close(open)
	g := &Gate{tb: tb, ln: ln, stop: make(chan struct{}), target: target, conns: map[net.Conn]bool{}, open: open}
	g.wg.Go(g.accept)
	tb.Cleanup(func() {
		close(g.stop)
		ln.Close()
		g.closeAll()
		g.wg.Wait()
	})
	return g
}

// Addr is the gate's address, host:port.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// URL is the gate's address as an http URL.
func (g *Gate) URL() string { return "http://" + g.Addr() }

// Held counts the reads waiting at a stalled gate: a request has reached
// it.
func (g *Gate) Held() int64 { return g.held.Load() }

// Hang stalls the gate: what is read from either side from now on waits
// until Resume (or Down, which drops it).
func (g *Gate) Hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

// Resume lets what waits, and what comes, through.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release()
}

// release opens the gate; mu is held.
func (g *Gate) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// Down kills the server as its clients see it: every connection closes,
// what waits at the gate is dropped, and a new connection is closed at
// once, until Up.
func (g *Gate) Down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = true
	g.closeAllLocked()
	g.release() // what waited fails on its closed connection
}

// Up serves again.
func (g *Gate) Up() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = false
}

func (g *Gate) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeAllLocked()
}

func (g *Gate) closeAllLocked() {
	for c := range g.conns {
		c.Close()
	}
}

func (g *Gate) accept() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return // the test ended
		}
		g.mu.Lock()
		down := g.down
		g.mu.Unlock()
		if down {
			refuse(c)
			continue
		}
		g.wg.Go(func() { g.join(c) })
	}
}

// refuse ends c at once: its client reads the end before any byte. (A
// reset proper, SO_LINGER 0, made the next connection to the gate fail
// in connect with a reset of its own, in about one run of three.)
func refuse(c net.Conn) { c.Close() }

// join pipes c to a new connection to the target until either side ends
// or Down closes both.
func (g *Gate) join(c net.Conn) {
	s, err := net.Dial("tcp", g.target)
	if err != nil {
		refuse(c)
		return
	}
	g.mu.Lock()
	if g.down {
		g.mu.Unlock()
		refuse(c)
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
func (g *Gate) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			open := g.open
			g.mu.Unlock()
			g.held.Add(1)
			select {
			case <-open:
			case <-g.stop:
			}
			g.held.Add(-1)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				g.tb.Logf("gate: %v", err)
			}
			return
		}
	}
}
