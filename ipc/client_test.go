package ipc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waitFor bounds every wait of these tests. It is a failsafe against a
// hang, never a way to synchronise.
const waitFor = 10 * time.Second

// fakeHearth speaks protocol v1 by hand on 127.0.0.1:0. Each connection
// runs serve in its own goroutine; n counts connections from 1.
type fakeHearth struct {
	addr  string
	ln    net.Listener
	done  chan struct{} // closed at cleanup: handlers waiting on it return
	count atomic.Int32

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool // at cleanup; later connections are closed at once
}

// srvConn is the server's side of one connection.
type srvConn struct {
	nc net.Conn
	r  *Reader
	w  *Writer
}

func startHearth(t *testing.T, serve func(n int, c *srvConn)) *fakeHearth {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHearth{addr: ln.Addr().String(), ln: ln, done: make(chan struct{})}
	h.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, nc)
			if h.closed {
				nc.Close()
			}
			h.mu.Unlock()
			n := int(h.count.Add(1))
			h.wg.Go(func() {
				defer nc.Close()
				serve(n, &srvConn{nc: nc, r: NewReader(nc), w: NewWriter(nc)})
			})
		}
	})
	t.Cleanup(func() {
		close(h.done)
		ln.Close()
		h.mu.Lock()
		h.closed = true
		for _, nc := range h.conns {
			nc.Close()
		}
		h.mu.Unlock()
		h.wg.Wait()
	})
	return h
}

// hello reads the client's connect.
func (c *srvConn) hello(t *testing.T) *Connect {
	m, err := c.r.Read()
	if err != nil {
		t.Errorf("server: read connect: %v", err)
		return nil
	}
	hello, ok := m.(*Connect)
	if !ok {
		t.Errorf("server: got %T first, want *Connect", m)
	}
	return hello
}

// drain reads until the connection ends and returns what it read.
func (c *srvConn) drain() []Msg {
	var got []Msg
	for {
		m, err := c.r.Read()
		if err != nil {
			return got
		}
		got = append(got, m)
	}
}

func history(turns ...string) *History {
	h := &History{Server: "fake/1", Protocol: ProtocolVersion, ConversationID: "main", State: StateIdle}
	for i, s := range turns {
		h.Turns = append(h.Turns, Turn{ID: string(rune('a' + i)), Role: RoleUser, Content: s, TS: time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC), Mode: ModeText})
	}
	return h
}

// recv returns the next value from ch, failing the test after waitFor.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		var zero T
		t.Fatalf("nothing received in %v", waitFor)
		return zero
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func TestDial(t *testing.T) {
	want := history("hi", "there")
	hellos := make(chan *Connect, 1)
	rest := make(chan []Msg, 1)
	h := startHearth(t, func(n int, c *srvConn) {
		hellos <- c.hello(t)
		if err := c.w.Write(want); err != nil {
			t.Errorf("server: write history: %v", err)
		}
		rest <- c.drain()
	})

	conn, err := Dial(testCtx(t), h.addr, DialOptions{Token: "tok", Client: "test/1"})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if diff := cmp.Diff(&Connect{Token: "tok", Client: "test/1", Protocol: ProtocolVersion}, recv(t, hellos)); diff != "" {
		t.Errorf("server got connect mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, conn.History()); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}
	if err := conn.Send(&Message{Content: "hello", Ref: "r1"}); err != nil {
		t.Errorf("Send: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close says goodbye before it closes.
	if diff := cmp.Diff([]Msg{&Message{Content: "hello", Ref: "r1"}, &Disconnect{}}, recv(t, rest)); diff != "" {
		t.Errorf("server got mismatch (-want +got):\n%s", diff)
	}
}

func TestDialRefusals(t *testing.T) {
	tests := []struct {
		name  string
		reply func(c *srvConn) error
		check func(t *testing.T, err error)
	}{
		{
			name: "unauthorized",
			reply: func(c *srvConn) error {
				return c.w.Write(&Error{Code: CodeUnauthorized, Message: "wrong or missing token"})
			},
			check: wantHearthError(&Error{Code: CodeUnauthorized, Message: "wrong or missing token"}),
		},
		{
			name:  "too many clients",
			reply: func(c *srvConn) error { return c.w.Write(&Error{Code: CodeTooManyClients, Message: "full"}) },
			check: wantHearthError(&Error{Code: CodeTooManyClients, Message: "full"}),
		},
		{
			name: "protocol 2",
			reply: func(c *srvConn) error {
				h := history()
				h.Protocol = 2
				return c.w.Write(h)
			},
			check: func(t *testing.T, err error) {
				var herr *Error
				if !errors.As(err, &herr) || herr.Code != CodeProtocol {
					t.Errorf("got error %v, want an *Error with code %q", err, CodeProtocol)
				}
			},
		},
		{
			name:  "unexpected type",
			reply: func(c *srvConn) error { return c.w.Write(&Token{Content: "x"}) },
			check: func(t *testing.T, err error) {
				var herr *Error
				if errors.As(err, &herr) {
					t.Errorf("got *Error %v, want a protocol error of this side", herr)
				}
				if err == nil || !strings.Contains(err.Error(), `unexpected "token"`) {
					t.Errorf("got error %v, want it to name the unexpected type", err)
				}
			},
		},
		{
			name: "unknown type",
			reply: func(c *srvConn) error {
				_, err := io.WriteString(c.nc, `{"type":"teleport"}`+"\n")
				return err
			},
			check: func(t *testing.T, err error) {
				var ute *UnknownTypeError
				if !errors.As(err, &ute) {
					t.Errorf("got error %v, want *UnknownTypeError", err)
				}
			},
		},
		{
			name: "garbage",
			reply: func(c *srvConn) error {
				_, err := io.WriteString(c.nc, "SSH-2.0-OpenSSH_9.6\r\n")
				return err
			},
			check: func(t *testing.T, err error) {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("got error %v, want *SyntaxError", err)
				}
			},
		},
		{
			name:  "closed without a reply",
			reply: func(c *srvConn) error { return nil },
			check: func(t *testing.T, err error) {
				if !errors.Is(err, io.EOF) {
					t.Errorf("got error %v, want io.EOF", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHearth(t, func(n int, c *srvConn) {
				c.hello(t)
				if err := tt.reply(c); err != nil {
					t.Errorf("server: reply: %v", err)
				}
			})
			conn, err := Dial(testCtx(t), h.addr, DialOptions{Token: "tok"})
			if err == nil {
				conn.Close()
				t.Fatalf("Dial succeeded, want an error")
			}
			tt.check(t, err)
		})
	}
}

func wantHearthError(want *Error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		var herr *Error
		if !errors.As(err, &herr) {
			t.Errorf("got error %v (%T), want *Error", err, err)
			return
		}
		if diff := cmp.Diff(want, herr); diff != "" {
			t.Errorf("*Error mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestDialHistoryWithoutProtocol(t *testing.T) {
	want := history("hi")
	want.Protocol = 0 // an older hearth that did not send it is taken as v1
	h := startHearth(t, func(n int, c *srvConn) {
		c.hello(t)
		c.w.Write(want)
		c.drain()
	})
	conn, err := Dial(testCtx(t), h.addr, DialOptions{Token: "tok"})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	if diff := cmp.Diff(want, conn.History()); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}
}

// TestDialSilentHearth: a hearth that never answers cannot hold Dial past
// its context.
func TestDialSilentHearth(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		h := startHearth(t, func(n int, c *srvConn) { c.drain() })
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		conn, err := Dial(ctx, h.addr, DialOptions{Token: "tok"})
		if err == nil {
			conn.Close()
			t.Fatal("Dial succeeded, want an error")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got error %v, want %v", err, context.DeadlineExceeded)
		}
		if d := time.Since(start); d > waitFor/2 {
			t.Errorf("Dial returned after %v, want soon after the 50ms deadline", d)
		}
	})
	t.Run("cancel during handshake", func(t *testing.T) {
		connected := make(chan struct{})
		h := startHearth(t, func(n int, c *srvConn) {
			c.hello(t)
			close(connected)
			c.drain()
		})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			conn, err := Dial(ctx, h.addr, DialOptions{Token: "tok"})
			if err == nil {
				conn.Close()
			}
			errc <- err
		}()
		recv(t, connected) // Dial has sent connect and waits for history
		cancel()
		if err := recv(t, errc); !errors.Is(err, context.Canceled) {
			t.Errorf("got error %v, want %v", err, context.Canceled)
		}
	})
}

// freeAddr returns a loopback address where nothing listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestDialNotRunning(t *testing.T) {
	addr := freeAddr(t)
	_, err := Dial(testCtx(t), addr, DialOptions{Token: "tok"})
	if err == nil {
		t.Fatal("Dial succeeded, want an error")
	}
	if want := "hearth is not running on " + addr; !strings.Contains(err.Error(), want) {
		t.Errorf("got error %q, want it to contain %q", err, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("got error %v, want it to wrap %v", err, syscall.ECONNREFUSED)
	}
}

// dialFake dials a fake hearth that answers the handshake and then runs
// after.
func dialFake(t *testing.T, after func(c *srvConn)) *Conn {
	t.Helper()
	h := startHearth(t, func(n int, c *srvConn) {
		c.hello(t)
		if err := c.w.Write(history()); err != nil {
			t.Errorf("server: write history: %v", err)
			return
		}
		after(c)
	})
	conn, err := Dial(testCtx(t), h.addr, DialOptions{Token: "tok"})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestRecv(t *testing.T) {
	tests := []struct {
		name    string
		send    string // raw lines after history
		want    []Msg
		wantErr func(error) bool
	}{
		{
			name: "messages in order",
			send: `{"type":"token","content":"a"}` + "\n" + `{"type":"done","turn":{"id":"x"}}` + "\n",
			want: []Msg{&Token{Content: "a"}, &Done{Turn: Turn{ID: "x"}}},
		},
		{
			name: "unknown types skipped",
			send: `{"type":"teleport"}` + "\n" + `{"type":"memory_update","id":1}` + "\n" + `{"type":"token","content":"a"}` + "\n",
			want: []Msg{&Token{Content: "a"}},
		},
		{
			name: "error is a message",
			send: `{"type":"error","code":"slow_client","message":"resync"}` + "\n",
			want: []Msg{&Error{Code: CodeSlowClient, Message: "resync"}},
		},
		{
			name:    "syntax error is an error",
			send:    `{"type":"token","content":1}` + "\n",
			wantErr: func(err error) bool { var se *SyntaxError; return errors.As(err, &se) },
		},
		{
			name:    "end of stream",
			send:    "",
			wantErr: func(err error) bool { return errors.Is(err, io.EOF) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := dialFake(t, func(c *srvConn) {
				if _, err := io.WriteString(c.nc, tt.send); err != nil {
					t.Errorf("server: write: %v", err)
				}
			})
			ctx := testCtx(t)
			for _, want := range tt.want {
				got, err := conn.Recv(ctx)
				if err != nil {
					t.Fatalf("Recv: %v", err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Recv mismatch (-want +got):\n%s", diff)
				}
			}
			if tt.wantErr == nil {
				tt.wantErr = func(err error) bool { return errors.Is(err, io.EOF) }
			}
			if m, err := conn.Recv(ctx); !tt.wantErr(err) {
				t.Errorf("last Recv: got %v, %v; want the %s error", m, err, tt.name)
			}
		})
	}
}

// TestRecvCancel: a cancelled Recv returns at once, and the connection
// stays usable, even when the cancel cut a line in half.
func TestRecvCancel(t *testing.T) {
	t.Run("already cancelled", func(t *testing.T) {
		conn := dialFake(t, func(c *srvConn) {
			c.w.Write(&Token{Content: "a"})
			c.drain()
		})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if m, err := conn.Recv(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Recv: got %v, %v; want %v", m, err, context.Canceled)
		}
		m, err := conn.Recv(testCtx(t))
		if err != nil {
			t.Fatalf("Recv after a cancelled Recv: %v", err)
		}
		if diff := cmp.Diff(Msg(&Token{Content: "a"}), m); diff != "" {
			t.Errorf("Recv mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("cancelled mid-line", func(t *testing.T) {
		half, more := make(chan struct{}), make(chan struct{})
		conn := dialFake(t, func(c *srvConn) {
			io.WriteString(c.nc, `{"type":"token","con`)
			close(half)
			select {
			case <-more:
			case <-time.After(waitFor):
				return
			}
			io.WriteString(c.nc, `tent":"abc"}`+"\n")
			c.drain()
		})
		errQuit := errors.New("quit")
		ctx, cancel := context.WithCancelCause(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := conn.Recv(ctx)
			errc <- err
		}()
		recv(t, half)
		cancel(errQuit)
		if err := recv(t, errc); !errors.Is(err, errQuit) {
			t.Errorf("Recv: got error %v, want the cause %v", err, errQuit)
		}
		close(more)
		m, err := conn.Recv(testCtx(t))
		if err != nil {
			t.Fatalf("Recv after a cancelled Recv: %v", err)
		}
		if diff := cmp.Diff(Msg(&Token{Content: "abc"}), m); diff != "" {
			t.Errorf("Recv mismatch (-want +got):\n%s", diff)
		}
	})
}

// stuckConn is a net.Conn whose writes block until a deadline or Close,
// like a socket whose peer stopped reading. entered is closed when a
// write starts.
type stuckConn struct {
	net.Conn // one end of a net.Pipe nobody reads
	once     sync.Once
	entered  chan struct{}
}

func (c *stuckConn) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.entered) })
	return c.Conn.Write(p)
}

func TestCloseUnblocksSend(t *testing.T) {
	p1, p2 := net.Pipe()
	defer p2.Close()
	nc := &stuckConn{Conn: p1, entered: make(chan struct{})}
	conn := &Conn{nc: nc, r: NewReader(nc), w: NewWriter(nc)}
	sendErr := make(chan error, 1)
	go func() { sendErr <- conn.Send(&Token{Content: "x"}) }()
	recv(t, nc.entered) // Send holds the write lock and is blocked

	closed := make(chan error, 1)
	go func() { closed <- conn.Close() }()
	recv(t, closed)
	if err := recv(t, sendErr); err == nil {
		t.Errorf("blocked Send: got nil error after Close, want an error")
	}
}

// event is what the Run tests record of each Event.
type event struct {
	Event
	sendErr error // Client.Send's error when the event arrived
}

func runClient(t *testing.T, ctx context.Context, addr string) (*Client, <-chan event, <-chan error) {
	t.Helper()
	c := NewClient(addr, ClientOptions{
		DialOptions: DialOptions{Token: "tok", Client: "test/1"},
		MinBackoff:  time.Millisecond,
		MaxBackoff:  4 * time.Millisecond,
	})
	events := make(chan event, 100)
	runErr := make(chan error, 1)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(done)
		runErr <- c.Run(ctx, func(e Event) {
			ev := event{Event: e}
			if e.State != nil && e.State.State != StateConnected {
				ev.sendErr = c.Send(&Ping{})
			}
			select {
			case events <- ev:
			default:
				t.Errorf("event dropped: %+v", e)
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Errorf("Run did not return after cancel")
		}
	})
	return c, events, runErr
}

func wantState(t *testing.T, ev event, state ConnState, attempt int) *StateChange {
	t.Helper()
	if ev.State == nil {
		t.Fatalf("got message %#v, want state %v", ev.Msg, state)
	}
	if ev.State.State != state || ev.State.Attempt != attempt {
		t.Fatalf("got state %v attempt %d (err %v), want %v attempt %d", ev.State.State, ev.State.Attempt, ev.State.Err, state, attempt)
	}
	if ev.Msg != nil {
		t.Errorf("got both Msg and State in one Event")
	}
	return ev.State
}

func TestClientRun(t *testing.T) {
	h1, h2 := history("one"), history("one", "two")
	sendToken := make(chan struct{})
	fromClient := make(chan Msg, 10)
	h := startHearth(t, func(n int, c *srvConn) {
		c.hello(t)
		switch n {
		case 1:
			c.w.Write(h1) // then hang up
		case 2:
			c.w.Write(h2)
			select {
			case <-sendToken:
			case <-time.After(waitFor):
				return
			}
			c.w.Write(&Token{Content: "Hel"})
			for _, m := range c.drain() {
				fromClient <- m
			}
		default:
			t.Errorf("server: connection %d, want 2", n)
		}
	})
	errQuit := errors.New("quit")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	c, events, runErr := runClient(t, ctx, h.addr)

	if s := wantState(t, recv(t, events), StateConnecting, 0); s.History != nil || s.Err != nil {
		t.Errorf("connecting: got %+v, want no history and no error", s)
	}
	if s := wantState(t, recv(t, events), StateConnected, 0); !cmp.Equal(h1, s.History) {
		t.Errorf("first connect: History mismatch (-want +got):\n%s", cmp.Diff(h1, s.History))
	}
	ev := recv(t, events)
	s := wantState(t, ev, StateReconnecting, 1)
	if !errors.Is(s.Err, io.EOF) {
		t.Errorf("reconnecting: got Err %v, want %v", s.Err, io.EOF)
	}
	if s.Retry < 800*time.Microsecond || s.Retry > 1200*time.Microsecond {
		t.Errorf("reconnecting: got Retry %v, want 1ms±20%%", s.Retry)
	}
	if !errors.Is(ev.sendErr, ErrNotConnected) {
		t.Errorf("Send while reconnecting: got %v, want %v", ev.sendErr, ErrNotConnected)
	}
	if s := wantState(t, recv(t, events), StateConnected, 0); !cmp.Equal(h2, s.History) {
		t.Errorf("reconnect: History mismatch (-want +got):\n%s", cmp.Diff(h2, s.History))
	}

	close(sendToken)
	if ev := recv(t, events); !cmp.Equal(Msg(&Token{Content: "Hel"}), ev.Msg) || ev.State != nil {
		t.Errorf("got event %+v, want the token", ev.Event)
	}
	if err := c.Send(&Message{Content: "hi"}); err != nil {
		t.Errorf("Send while connected: %v", err)
	}

	cancel(errQuit)
	if err := recv(t, runErr); !errors.Is(err, errQuit) {
		t.Errorf("Run: got %v, want the cause %v", err, errQuit)
	}
	if err := c.Send(&Message{Content: "late"}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Send after Run: got %v, want %v", err, ErrNotConnected)
	}
	for _, want := range []Msg{&Message{Content: "hi"}, &Disconnect{}} {
		if diff := cmp.Diff(want, recv(t, fromClient)); diff != "" {
			t.Errorf("server got mismatch (-want +got):\n%s", diff)
		}
	}
	select {
	case ev := <-events:
		t.Errorf("event after Run returned: %+v", ev.Event)
	default:
	}
}

// TestClientRunRefused: a refusal for good ends Run; others are retried.
func TestClientRunRefused(t *testing.T) {
	protocol2 := history()
	protocol2.Protocol = 2
	tests := []struct {
		name     string
		reply    Msg
		wantCode string
	}{
		{"unauthorized", &Error{Code: CodeUnauthorized, Message: "wrong or missing token"}, CodeUnauthorized},
		{"protocol version", &Error{Code: CodeProtocol, Message: "this hearth speaks protocol 2"}, CodeProtocol},
		{"history of protocol 2", protocol2, CodeProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHearth(t, func(n int, c *srvConn) {
				c.hello(t)
				c.w.Write(tt.reply)
			})
			_, events, runErr := runClient(t, t.Context(), h.addr)
			err := recv(t, runErr)
			var herr *Error
			if !errors.As(err, &herr) || herr.Code != tt.wantCode {
				t.Errorf("Run: got %v, want an *Error with code %q", err, tt.wantCode)
			}
			if n := h.count.Load(); n != 1 {
				t.Errorf("got %d connections, want 1: a refusal must not be retried", n)
			}
			wantState(t, recv(t, events), StateConnecting, 0)
			select {
			case ev := <-events:
				t.Errorf("got event %+v after connecting, want none", ev.Event)
			default:
			}
		})
	}
}

func TestClientRunRetriesBusyHearth(t *testing.T) {
	busy := &Error{Code: CodeTooManyClients, Message: "full"}
	h := startHearth(t, func(n int, c *srvConn) {
		c.hello(t)
		if n == 1 {
			c.w.Write(busy)
			return
		}
		c.w.Write(history("x"))
		c.drain()
	})
	_, events, _ := runClient(t, t.Context(), h.addr)
	wantState(t, recv(t, events), StateConnecting, 0)
	s := wantState(t, recv(t, events), StateReconnecting, 1)
	var herr *Error
	if !errors.As(s.Err, &herr) || !cmp.Equal(busy, herr) {
		t.Errorf("reconnecting: got Err %v, want %v", s.Err, busy)
	}
	wantState(t, recv(t, events), StateConnected, 0)
}

// TestClientRunNotRunning: Run retries with growing delays until its
// context ends.
func TestClientRunNotRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, events, runErr := runClient(t, ctx, freeAddr(t))
	wantState(t, recv(t, events), StateConnecting, 0)
	for attempt, base := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond} {
		ev := recv(t, events)
		s := wantState(t, ev, StateReconnecting, attempt+1)
		if s.Err == nil || !strings.Contains(s.Err.Error(), "hearth is not running") {
			t.Errorf("attempt %d: got Err %v, want it to say hearth is not running", attempt+1, s.Err)
		}
		if lo, hi := base*8/10, base*12/10; s.Retry < lo || s.Retry > hi {
			t.Errorf("attempt %d: got Retry %v, want within [%v, %v]", attempt+1, s.Retry, lo, hi)
		}
		if !errors.Is(ev.sendErr, ErrNotConnected) {
			t.Errorf("attempt %d: Send: got %v, want %v", attempt+1, ev.sendErr, ErrNotConnected)
		}
	}
	cancel()
	if err := recv(t, runErr); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want %v", err, context.Canceled)
	}
	if err := c.Send(&Ping{}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Send: got %v, want %v", err, ErrNotConnected)
	}
}

func TestClientSendNotConnected(t *testing.T) {
	c := NewClient("127.0.0.1:1", ClientOptions{})
	if err := c.Send(&Message{Content: "hi"}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Send before Run: got %v, want %v", err, ErrNotConnected)
	}
}

func TestNewClientDefaults(t *testing.T) {
	tests := []struct {
		name             string
		min, max         time.Duration
		wantMin, wantMax time.Duration
	}{
		{"unset", 0, 0, 250 * time.Millisecond, 10 * time.Second},
		{"min only", time.Millisecond, 0, time.Millisecond, 10 * time.Second},
		{"both", time.Millisecond, 5 * time.Millisecond, time.Millisecond, 5 * time.Millisecond},
		{"min over default max", 20 * time.Second, 0, 20 * time.Second, 20 * time.Second},
		{"negative", -time.Second, -time.Second, 250 * time.Millisecond, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient("127.0.0.1:1", ClientOptions{MinBackoff: tt.min, MaxBackoff: tt.max})
			if c.opts.MinBackoff != tt.wantMin || c.opts.MaxBackoff != tt.wantMax {
				t.Errorf("got backoff %v..%v, want %v..%v", c.opts.MinBackoff, c.opts.MaxBackoff, tt.wantMin, tt.wantMax)
			}
			if c.opts.Log == nil {
				t.Errorf("got nil Log, want a discarding logger")
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		n        int
		min, max time.Duration
		want     time.Duration // before jitter
	}{
		{0, 250 * ms, 10 * time.Second, 250 * ms},
		{1, 250 * ms, 10 * time.Second, 250 * ms},
		{2, 250 * ms, 10 * time.Second, 500 * ms},
		{3, 250 * ms, 10 * time.Second, 1000 * ms},
		{6, 250 * ms, 10 * time.Second, 8000 * ms},
		{7, 250 * ms, 10 * time.Second, 10000 * ms},
		{8, 250 * ms, 10 * time.Second, 10000 * ms},
		{1000, 250 * ms, 10 * time.Second, 10000 * ms},
		{1, 1 * ms, 4 * ms, 1 * ms},
		{3, 1 * ms, 4 * ms, 4 * ms},
		{4, 1 * ms, 4 * ms, 4 * ms},
		{1, 3 * ms, 5 * ms, 3 * ms},
		{2, 3 * ms, 5 * ms, 5 * ms},
		{5, 1 * ms, 1 * ms, 1 * ms},
		{1000, time.Nanosecond, 1 << 62, 1 << 62},
	}
	for _, tt := range tests {
		lo, hi := tt.want-tt.want/5, tt.want+tt.want/5
		var seenLow, seenHigh bool
		for range 1000 {
			got := backoff(tt.n, tt.min, tt.max)
			if got < lo || got > hi {
				t.Errorf("backoff(%d, %v, %v) = %v, want within [%v, %v]", tt.n, tt.min, tt.max, got, lo, hi)
				break
			}
			seenLow = seenLow || got < tt.want
			seenHigh = seenHigh || got > tt.want
		}
		if !seenLow || !seenHigh {
			t.Errorf("backoff(%d, %v, %v): in 1000 tries, got below %v: %v, above: %v; want jitter both ways",
				tt.n, tt.min, tt.max, tt.want, seenLow, seenHigh)
		}
	}
}

func TestConnStateString(t *testing.T) {
	tests := []struct {
		s    ConnState
		want string
	}{
		{StateConnecting, "connecting"},
		{StateConnected, "connected"},
		{StateReconnecting, "reconnecting"},
		{ConnState(7), "ConnState(7)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("ConnState(%d).String() = %q, want %q", int(tt.s), got, tt.want)
		}
	}
}
