package ipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	backoffpkg "github.com/mnemo/mnemo/internal/backoff"
)

// DialOptions configure a connection to hearth.
type DialOptions struct {
	Token  string
	Client string // a name such as "mnemo/0.1", for hearth's log
	// Dialer dials the TCP connection; nil means a default net.Dialer.
	Dialer *net.Dialer
	// TLS speaks TLS to hearth even without tls:// before the address.
	TLS bool
	// Known holds the pinned certificates; nil means DefaultKnownHearths.
	Known *KnownHearths
	// OnPin, when set, is told when a hearth's certificate is pinned on
	// first use, to show its fingerprint to the user.
	OnPin func(host, fingerprint string)
	// ConversationID is the conversation to follow ("": main). A Client
	// updates it from every History it receives, so that a reconnect
	// resumes the conversation the user was on.
	ConversationID string
}

// Conn is one authenticated connection to hearth. Send may be called from
// any goroutine; Recv from one goroutine at a time.
type Conn struct {
	nc      net.Conn
	r       *Reader
	history *History

	wmu sync.Mutex
	w   *Writer
}

// Dial connects to hearth at addr, sends connect and waits for history.
// ctx bounds the dial and the handshake. A refusal by hearth is returned as
// *Error (code unauthorized, protocol_version, too_many_clients).
//
// An address tls://host:port (or opts.TLS) speaks TLS, trusting hearth's
// certificate by its pin in opts.Known: pinned on first use, refused with
// a *PinMismatchError when it changed.
func Dial(ctx context.Context, addr string, opts DialOptions) (*Conn, error) {
	nc, err := dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, r: NewReader(nc), w: NewWriter(nc)}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	h, err := c.handshake(opts)
	if !stop() || err != nil {
		nc.Close()
		if err == nil || ctx.Err() != nil {
			return nil, fmt.Errorf("handshake with hearth at %s: %w", addr, context.Cause(ctx))
		}
		return nil, err
	}
	c.history = h
	return c, nil
}

// dial opens the connection to hearth, over TLS when asked.
func dial(ctx context.Context, addr string, opts DialOptions) (net.Conn, error) {
	hostport, useTLS := SplitAddr(addr)
	d := opts.Dialer
	if d == nil {
		d = &net.Dialer{KeepAlive: 30 * time.Second}
	}
	nc, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("hearth is not running on %s: start it with `hearth` or `make run`: %w", addr, err)
		}
		return nil, fmt.Errorf("dial hearth at %s: %w", addr, err)
	}
	if !useTLS && !opts.TLS {
		return nc, nil
	}
	tc, err := dialTLS(ctx, nc, hostport, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// PairDevice trades a pairing code (shown by the owner's client) for a
// device token at hearth: the new device's only exchange before it
// connects with its own token. ctx bounds it all.
func PairDevice(ctx context.Context, addr string, opts DialOptions, code, name string) (*Paired, error) {
	nc, err := dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	if err := NewWriter(nc).Write(&Pair{Code: code, Name: name, Client: opts.Client, Protocol: ProtocolVersion}); err != nil {
		return nil, fmt.Errorf("send pair: %w", err)
	}
	m, err := NewReader(nc).Read()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pair with hearth at %s: %w", addr, context.Cause(ctx))
		}
		return nil, fmt.Errorf("read pair reply: %w", err)
	}
	switch m := m.(type) {
	case *Paired:
		return m, nil
	case *Error:
		return nil, m
	default:
		return nil, fmt.Errorf("pair: unexpected %q", m.Type())
	}
}

func (c *Conn) handshake(opts DialOptions) (*History, error) {
	if err := c.Send(&Connect{Token: opts.Token, Client: opts.Client, Protocol: ProtocolVersion, ConversationID: opts.ConversationID}); err != nil {
		return nil, fmt.Errorf("send connect: %w", err)
	}
	m, err := c.r.Read()
	if err != nil {
		return nil, fmt.Errorf("read handshake reply: %w", err)
	}
	switch m := m.(type) {
	case *History:
		if m.Protocol != 0 && m.Protocol != ProtocolVersion {
			return nil, &Error{Code: CodeProtocol, Message: fmt.Sprintf("hearth speaks protocol %d, this client %d", m.Protocol, ProtocolVersion)}
		}
		return m, nil
	case *Error:
		return nil, m
	default:
		return nil, fmt.Errorf("handshake: unexpected %q before history", m.Type())
	}
}

// History is hearth's reply to connect.
func (c *Conn) History() *History { return c.history }

// Send writes one message.
func (c *Conn) Send(m Msg) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.w.Write(m)
}

// Recv returns the next message from hearth. A received *Error is returned
// as a message, not as an error. Unknown types are skipped so that a newer
// hearth can add events.
func (c *Conn) Recv(ctx context.Context) (Msg, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		c.nc.SetReadDeadline(time.Now())
	})
	defer func() {
		if !stop() {
			// Clear the deadline, or every later Recv would fail at once.
			// The reader keeps a line cut short, so the stream stays in step.
			<-fired
			c.nc.SetReadDeadline(time.Time{})
		}
	}()
	for {
		m, err := c.r.Read()
		var ute *UnknownTypeError
		if errors.As(err, &ute) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		return m, nil
	}
}

// Close says goodbye and closes the connection.
func (c *Conn) Close() error {
	// Set the deadline before taking wmu: it also ends a Send blocked on a
	// hearth that does not read, which would otherwise block Close forever.
	c.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.wmu.Lock()
	c.w.Write(&Disconnect{}) // best effort
	c.wmu.Unlock()
	return c.nc.Close()
}

// ConnState is the state of a reconnecting Client.
type ConnState int

const (
	StateConnecting ConnState = iota
	StateConnected
	StateReconnecting
)

func (s ConnState) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateReconnecting:
		return "reconnecting"
	}
	return fmt.Sprintf("ConnState(%d)", int(s))
}

// Event is what Client.Run delivers: a message from hearth, or a change of
// the connection's state. Exactly one of Msg and State is set.
type Event struct {
	Msg   Msg
	State *StateChange
}

// StateChange reports a connection state. On StateConnected, History holds
// the fresh snapshot the client should resync its view from (turns carry
// ids, so a view can merge without duplicates). On StateReconnecting, Err
// says why and Retry when the next attempt is made.
type StateChange struct {
	State   ConnState
	Attempt int
	Retry   time.Duration
	Err     error
	History *History
}

// ClientOptions configure a reconnecting Client.
type ClientOptions struct {
	DialOptions
	MinBackoff time.Duration // default 250ms
	MaxBackoff time.Duration // default 10s
	Log        *slog.Logger
}

// Client keeps a connection to hearth open, reconnecting with jittered
// exponential backoff.
type Client struct {
	addr string
	opts ClientOptions

	mu   sync.Mutex
	conn *Conn // nil while disconnected
}

// NewClient returns a client for the hearth at addr. Nothing is dialled
// until Run.
func NewClient(addr string, opts ClientOptions) *Client {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Client{addr: addr, opts: opts}
}

// ErrNotConnected is returned by Client.Send while the client is between
// connections.
var ErrNotConnected = errors.New("not connected to hearth")

// Send writes m on the current connection.
func (c *Client) Send(m Msg) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return ErrNotConnected
	}
	return conn.Send(m)
}

// Run connects and delivers events to handle until ctx ends, reconnecting
// whenever the connection drops. handle is called from Run's goroutine. Run
// returns ctx's cause, or an *Error when hearth refuses the client for good
// (wrong token, protocol version).
func (c *Client) Run(ctx context.Context, handle func(Event)) error {
	attempt := 0
	handle(Event{State: &StateChange{State: StateConnecting}})
	for {
		c.mu.Lock()
		opts := c.opts.DialOptions
		c.mu.Unlock()
		conn, err := Dial(ctx, c.addr, opts)
		var cerr *Error
		if errors.As(err, &cerr) && cerr.Code == CodeConversationNotFound && opts.ConversationID != "" {
			// The conversation is gone (one nothing was said in does
			// not outlive hearth): back to main, at once.
			c.opts.Log.Info("conversation gone; following main", "conversation", opts.ConversationID)
			c.setConversation("")
			conn, err = Dial(ctx, c.addr, c.opts.DialOptions)
		}
		if err == nil {
			attempt = 0
			c.setConn(conn)
			c.setConversation(conn.History().ConversationID)
			handle(Event{State: &StateChange{State: StateConnected, History: conn.History()}})
			err = c.pump(ctx, conn, handle)
			c.setConn(nil)
			conn.Close()
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var herr *Error
		if errors.As(err, &herr) && (herr.Code == CodeUnauthorized || herr.Code == CodeProtocol) {
			return herr
		}
		attempt++
		delay := backoff(attempt, c.opts.MinBackoff, c.opts.MaxBackoff)
		c.opts.Log.Info("hearth connection lost", "addr", c.addr, "attempt", attempt, "retry", delay, "err", err)
		handle(Event{State: &StateChange{State: StateReconnecting, Attempt: attempt, Retry: delay, Err: err}})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

func (c *Client) setConversation(id string) {
	if id == "main" {
		id = ""
	}
	c.mu.Lock()
	c.opts.ConversationID = id
	c.mu.Unlock()
}

// Conversation is the conversation the client follows ("main" unless a
// History said otherwise).
func (c *Client) Conversation() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts.ConversationID == "" {
		return "main"
	}
	return c.opts.ConversationID
}

func (c *Client) setConn(conn *Conn) {
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
}

func (c *Client) pump(ctx context.Context, conn *Conn, handle func(Event)) error {
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return err
		}
		if h, ok := m.(*History); ok {
			c.setConversation(h.ConversationID) // a resume or a new conversation
		}
		handle(Event{Msg: m})
		// hearth closes the connection after a slow_client error; the
		// next Recv reports that and Run reconnects.
	}
}

// backoff returns the delay before reconnect attempt n (1-based): doubling
// from min, capped at max, with up to 20% jitter either way.
func backoff(n int, min, max time.Duration) time.Duration {
	return backoffpkg.Policy{Initial: min, Max: max, JitterBelow: 0.2, JitterAbove: 0.2}.Delay(n)
}
