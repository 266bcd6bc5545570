package ndjson

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/internal/backoff"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/hearth/wire"
	"github.com/mnemo/mnemo/ipc"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// Token is the owner's shared token; used only when Auth is nil
	// (then it is required).
	Token string
	// Auth authenticates clients, authorizes their messages and manages
	// devices and pairing (*auth.Store); nil admits Token as the owner.
	Auth Authority
	// Throttle slows sources whose handshakes fail; share one with the
	// other doors. nil makes the door's own from Gate.
	Throttle *auth.Throttle
	// Limiter, when set, bounds each identity's messages (share the one
	// every door uses): a message past the limit is answered with an
	// error rate_limited and its retry_after_ms, the connection open.
	Limiter Limiter
	// TLS, when set, serves TLS; Fingerprint is its certificate's,
	// shown by pairing.
	TLS         *tls.Config
	Fingerprint string

	MaxClients       int           // authenticated connections at once; default 64
	HandshakeTimeout time.Duration // time to send connect; default 5s
	ClientQueue      int           // events queued per client before it is cut off; default 1024
	ClientBudget     int64         // bytes queued per client before it is cut off; default 4 MiB
	DropGrace        time.Duration // how long a dropped client may take to read why; default 5s
	// CloseTimeout bounds how long Serve waits, once its context ends,
	// for connections to finish (they end when the core shuts down and
	// their queues are delivered); default 30s.
	CloseTimeout time.Duration
	// Gate bounds unauthenticated connections and throttles failed
	// handshakes; zero values take gateOptions' defaults.
	Gate gateOptions
	// Shutdown, when set, is how the owner's shutdown message stops
	// hearth gracefully (as SIGTERM does); nil refuses it.
	Shutdown func()
	// Metrics, when set, records each message's handling by type and
	// the refused handshakes.
	Metrics *telemetry.Metrics
	Log     *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxClients <= 0 {
		o.MaxClients = 64
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 5 * time.Second
	}
	if o.ClientQueue <= 0 {
		o.ClientQueue = 1024
	}
	if o.ClientBudget <= 0 {
		o.ClientBudget = 4 << 20
	}
	if o.DropGrace <= 0 {
		o.DropGrace = 5 * time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 30 * time.Second
	}
	if o.Gate.PerSource == 0 {
		// A machine's own clients share one source (loopback): room for
		// several to start at once.
		o.Gate.PerSource = 8
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Limiter is the per-identity rate limit (*auth.Limiter): 0 lets the
// request through, else it is how long to wait.
type Limiter interface {
	Allow(id auth.Identity) time.Duration
}

// Server serves protocol v1 as NDJSON over TCP: one JSON object per line,
// a connect handshake with the token first, then the core's events to the
// client and its requests to the core (package wire).
type Server struct {
	core wire.Core
	opts Options
	log  *slog.Logger
	gate *gate

	clients atomic.Int64 // authenticated connections
	nextID  atomic.Uint64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// devices holds, per device id, how to cut its live connections.
	devices map[string]map[*conn]func()
}

// New returns a Server for core.
func New(core wire.Core, o Options) (*Server, error) {
	o.setDefaults()
	if o.Auth == nil {
		if o.Token == "" {
			return nil, errors.New("ndjson: no auth token")
		}
		st, err := auth.Open(auth.Options{OwnerToken: o.Token})
		if err != nil {
			return nil, err
		}
		o.Auth = st
	}
	return &Server{core: core, opts: o, log: o.Log, gate: newGateWith(o.Gate, o.Throttle),
		conns: make(map[net.Conn]struct{}), devices: make(map[string]map[*conn]func())}, nil
}

// Serve accepts connections on ln until ctx ends, then stops accepting and
// waits for the connections to finish: each ends when its client leaves
// or the core ends its subscription (on shutdown, after delivering what
// was queued and telling the client why). Connections still open after
// CloseTimeout are closed. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.opts.Auth.OnRevoke(s.revoked)()
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	var err error
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			var ne net.Error
			if errors.As(aerr, &ne) && ne.Timeout() {
				continue
			}
			if ctx.Err() == nil && !errors.Is(aerr, net.ErrClosed) {
				err = fmt.Errorf("ndjson: accept: %w", aerr)
			}
			break
		}
		s.track(nc, true)
		wg.Go(func() {
			defer s.track(nc, false)
			s.serveConn(ctx, nc)
		})
	}
	ln.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(s.opts.CloseTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("closing connections that did not finish in time")
		s.mu.Lock()
		for nc := range s.conns {
			nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return err
}

func (s *Server) track(nc net.Conn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		s.conns[nc] = struct{}{}
	} else {
		delete(s.conns, nc)
	}
}

// serveConn runs one connection from handshake to close.
func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	remote := nc.RemoteAddr().String()
	ip := sourceIP(nc.RemoteAddr())

	// Unauthenticated connections have a budget of their own, per source
	// and in all, so that they never crowd out the owner.
	release, ok := s.gate.admit(ip)
	if !ok {
		s.log.Warn("connection refused: too many unauthenticated connections", "remote", remote)
		refuse(nc, &ipc.Error{Code: ipc.CodeTooManyClients, Message: "too many connections are waiting to authenticate; try again shortly"})
		return
	}
	// One reader for the connection's life: a client may send its first
	// requests in the same packet as the handshake.
	r := ipc.NewReader(nc)
	hello, id, ok := s.authenticate(ctx, nc, r, ip, remote)
	release()
	if !ok {
		return
	}

	if n := s.clients.Add(1); n > int64(s.opts.MaxClients) {
		s.clients.Add(-1)
		s.log.Warn("connection refused: too many clients", "remote", remote)
		refuse(nc, &ipc.Error{Code: ipc.CodeTooManyClients, Message: "hearth has too many clients connected"})
		return
	}
	defer s.clients.Add(-1)
	s.session(ctx, nc, r, hello, id, remote)
}

// authenticate reads the connect message within HandshakeTimeout, after
// the delay the source's recent failures earned, and authenticates its
// token. A failure is answered only after a growing delay, holding the
// connection's slot meanwhile, so guessing gains nothing by speed. A pair
// message instead trades a pairing code for a device token, answered
// and closed (a wrong code is a failure like a wrong token).
func (s *Server) authenticate(ctx context.Context, nc net.Conn, r *ipc.Reader, ip netip.Addr, remote string) (*ipc.Connect, auth.Identity, bool) {
	if d := s.gate.penalty(ip); d > 0 && !backoff.Sleep(ctx, d) {
		return nil, auth.Identity{}, false
	}
	nc.SetReadDeadline(time.Now().Add(s.opts.HandshakeTimeout))
	// Shutdown does not wait for a handshake that has not come.
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Now()) })
	hello, id, paired, herr := s.handshake(ctx, r, ip)
	stop()
	nc.SetReadDeadline(time.Time{})
	if ctx.Err() != nil {
		refuse(nc, &ipc.Error{Code: ipc.CodeShuttingDown, Message: "hearth is shutting down"})
		return nil, auth.Identity{}, false
	}
	if herr != nil && herr.Code != ipc.CodeForbidden && herr.Code != ipc.CodeProtocol {
		d := s.gate.failed(ip)
		s.opts.Metrics.AuthFailure("ndjson")
		s.log.Warn("handshake refused", "remote", remote, "reason", herr.Code, "delay", d)
		backoff.Sleep(ctx, d)
		refuse(nc, herr)
		return nil, auth.Identity{}, false
	}
	s.gate.succeeded(ip) // the credential was right, even if what it asked is refused
	switch {
	case herr != nil:
		s.log.Warn("handshake refused", "remote", remote, "reason", herr.Code, "subject", id.Subject)
		refuse(nc, herr)
		return nil, auth.Identity{}, false
	case paired != nil:
		s.log.Info("device paired", "remote", remote, "device", paired.Device.ID, "name", paired.Device.Name, "actor", paired.Device.Actor)
		refuse(nc, paired)
		return nil, auth.Identity{}, false
	}
	return hello, id, true
}

// sourceIP is the address a connection comes from, for the gate.
func sourceIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// handshake reads the connect (or pair) message and authenticates it. A
// refusal says why without revealing anything else.
func (s *Server) handshake(ctx context.Context, r *ipc.Reader, ip netip.Addr) (*ipc.Connect, auth.Identity, *ipc.Paired, *ipc.Error) {
	const first = `the first message must be {"type":"connect","token":"…"}`
	m, err := r.Read()
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, ipc.ErrLineTooLong):
			return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeLineTooLong, Message: "line exceeds the 1 MiB limit"}
		case errors.As(err, &ne) && ne.Timeout():
			return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeHandshake, Message: "no connect message in time"}
		}
		return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: first}
	}
	switch m := m.(type) {
	case *ipc.Connect:
		id, err := s.opts.Auth.Authenticate(ctx, m.Token, ip)
		if err != nil {
			return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong, revoked or missing token"}
		}
		if m.Protocol > ipc.ProtocolVersion {
			return nil, id, nil, &ipc.Error{Code: ipc.CodeProtocol, Message: fmt.Sprintf("this hearth speaks protocol %d", ipc.ProtocolVersion)}
		}
		if err := s.opts.Auth.Authorize(id, connectNeed.res, connectNeed.act); err != nil {
			return nil, id, nil, &ipc.Error{Code: ipc.CodeForbidden, Message: "this credential may not connect to this door"}
		}
		return m, id, nil, nil
	case *ipc.Pair:
		dev, tok, err := s.opts.Auth.Redeem(ctx, m.Code, m.Name)
		if errors.Is(err, auth.ErrUnauthenticated) {
			return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong, expired or used pairing code"}
		}
		if err != nil {
			s.log.Error("pairing failed", "err", err)
			return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeInternal, Message: "hearth could not pair the device"}
		}
		return nil, auth.Identity{}, &ipc.Paired{Device: wireDevice(dev), Token: tok, Fingerprint: s.opts.Fingerprint}, nil
	}
	return nil, auth.Identity{}, nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: first}
}

// refuse writes one message (an error, or paired) and leaves the caller
// to close the connection.
func refuse(nc net.Conn, e ipc.Msg) {
	line, err := ipc.Encode(e)
	if err != nil {
		return
	}
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write(line)
}

// conn is one authenticated client: a reader handing requests to its
// wire session, and a writer delivering the session's events.
type conn struct {
	nc  net.Conn
	id  uint64
	log *slog.Logger

	who         auth.Identity
	auth        Authority
	fingerprint string
	sess        *wire.Session

	mu  sync.Mutex
	why *ipc.Error // what to tell the client as the connection ends

	metrics *telemetry.Metrics
	limiter Limiter // nil: no rate limit
}

func (c *conn) setWhy(e *ipc.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why == nil {
		c.why = e
	}
}

// session serves an authenticated client until it leaves, misbehaves
// beyond recovery, falls behind or hearth shuts down.
func (s *Server) session(ctx context.Context, nc net.Conn, r *ipc.Reader, hello *ipc.Connect, id auth.Identity, remote string) {
	c := &conn{nc: nc, id: s.nextID.Add(1), log: s.log, who: id, auth: s.opts.Auth, fingerprint: s.opts.Fingerprint, metrics: s.opts.Metrics, limiter: s.opts.Limiter}
	// The identity rides in ctx into the core's calls (the turn's tools).
	sess, err := wire.Open(auth.WithIdentity(context.WithoutCancel(ctx), id), s.core, wire.Options{
		Watch: hearth.WatchOptions{
			Name:         hello.Client,
			Conversation: hello.ConversationID, // "": main
			MaxEvents:    s.opts.ClientQueue,
			MaxBytes:     s.opts.ClientBudget,
			Cost:         wire.Cost,
			// Unblock a writer stuck on a peer that stopped reading,
			// leaving a peer that resumes soon the time to read why.
			OnCut: func(error) { nc.SetWriteDeadline(time.Now().Add(s.opts.DropGrace)) },
		},
		Health:   s.health,
		Shutdown: s.opts.Shutdown,
		Owner:    id.IsOwner(),
		Log:      s.log,
	})
	if err != nil {
		why := wire.Farewell(err)
		if why == nil {
			why = wire.Error(err) // an unknown conversation
		}
		refuse(nc, why)
		return
	}
	c.sess = sess
	cut := func() {
		c.setWhy(&ipc.Error{Code: ipc.CodeUnauthorized, Message: "this device's credential was revoked"})
		sess.Close()
	}
	untrack := s.trackDevice(c, id.Device, cut)
	defer untrack()
	if id.Device != "" && revoked(s.opts.Auth, id.Device) {
		cut() // revoked between the handshake and the tracking
	}
	s.log.Info("client connected", "client", c.id, "name", hello.Client, "remote", remote, "subject", id.Subject, "actor", id.Actor)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.readLoop(r, sess)
	}()
	why := c.writeLoop(sess)
	sess.Close()
	nc.Close() // unblocks the reader
	<-readerDone
	s.log.Info("client disconnected", "client", c.id, "reason", reason(why))
}

func reason(err error) string {
	if err == nil {
		return "left"
	}
	return err.Error()
}

// readLoop hands the client's requests to sess until the client leaves or
// sends a line too long to read past; either way the session closes,
// which ends the writer. A client that half-closes is answered first.
func (c *conn) readLoop(r *ipc.Reader, sess *wire.Session) {
	for {
		m, err := r.Read()
		var se *ipc.SyntaxError
		var ute *ipc.UnknownTypeError
		switch {
		case errors.As(err, &se), errors.As(err, &ute):
			sess.BadLine(err)
			continue
		case errors.Is(err, ipc.ErrLineTooLong):
			c.setWhy(&ipc.Error{Code: ipc.CodeLineTooLong, Message: "line exceeds the 1 MiB limit"})
			sess.Close()
			return
		case errors.Is(err, io.EOF):
			// The client half-closed (nc -N, a script's stdin ended):
			// it still reads, so answer what it asked, then close.
			// The writer ends the session after the answers.
			sess.Finish()
			return
		case err != nil:
			sess.Close() // closed, reset or cut off
			return
		}
		t0 := time.Now()
		if err := authorize(c.auth, c.who, m); err != nil {
			c.log.Warn("request forbidden", "client", c.id, "type", m.Type(), "subject", c.who.Subject, "actor", c.who.Actor)
			sess.Reply(forbidden(m))
			c.metrics.Request("ndjson", m.Type(), "forbidden", time.Since(t0))
			continue
		}
		if e := c.rateLimited(m); e != nil {
			sess.Reply(e)
			c.metrics.Request("ndjson", m.Type(), "rate_limited", time.Since(t0))
			continue
		}
		if c.handleAuth(m) {
			c.metrics.Request("ndjson", m.Type(), "ok", time.Since(t0))
			continue
		}
		ok := sess.Handle(m)
		c.metrics.Request("ndjson", m.Type(), "ok", time.Since(t0))
		if !ok {
			sess.Close()
			return
		}
	}
}

// rateLimited is the refusal of m when its sender's requests a minute
// are spent, nil when it may go ahead. Keeping the connection alive
// (ping), leaving and cancelling the reply in flight are never refused.
func (c *conn) rateLimited(m ipc.Msg) *ipc.Error {
	if c.limiter == nil {
		return nil
	}
	switch m.(type) {
	case *ipc.Ping, *ipc.Disconnect, *ipc.Cancel:
		return nil
	}
	wait := c.limiter.Allow(c.who)
	if wait <= 0 {
		return nil
	}
	c.log.Info("request rate limited", "client", c.id, "type", m.Type(), "subject", c.who.Subject, "actor", c.who.Actor, "retry_after", wait)
	return &ipc.Error{Code: ipc.CodeRateLimited, Message: "too many requests from this identity; try again after retry_after_ms",
		Ref: refOf(m), RetryAfterMS: max(wait.Milliseconds(), 1)}
}

// writeLoop writes the session's events, a batch at a time with one flush
// each, until the session ends; then it tells the client why, if there is
// anything to tell, and returns the reason.
func (c *conn) writeLoop(sess *wire.Session) error {
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	err := sess.Run(context.Background(), func(msgs []ipc.Msg) error {
		for _, m := range msgs {
			frame, err := encode(m)
			if err != nil {
				c.log.Error("encode event", "type", m.Type(), "err", err)
				continue
			}
			if _, err := bw.Write(frame); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if e := wire.Farewell(err); e != nil {
		c.setWhy(e)
	}
	c.mu.Lock()
	why := c.why
	c.mu.Unlock()
	if why != nil {
		if line, eerr := ipc.Encode(why); eerr == nil {
			c.nc.SetWriteDeadline(time.Now().Add(time.Second))
			bw.Write(line)
			bw.Flush()
		}
	}
	return err
}

// encode is m as one line. A history too large for a line drops its
// oldest turns until it fits (then the text in flight, which still
// streams as tokens).
func encode(m ipc.Msg) ([]byte, error) {
	hist, ok := m.(*ipc.History)
	if !ok {
		return ipc.Encode(m)
	}
	for {
		frame, err := ipc.Encode(hist)
		if !errors.Is(err, ipc.ErrLineTooLong) {
			return frame, err
		}
		switch {
		case len(hist.Turns) > 0:
			hist.Turns = hist.Turns[len(hist.Turns)/4+1:]
		case hist.Pending != "":
			hist.Pending = ""
		default:
			return nil, err
		}
	}
}

// health adds the door's counters to a health report.
func (s *Server) health(r *ipc.HealthReport) {
	st := s.gate.stats()
	r.Refused, r.Throttled = int(st.Refused), int(st.Throttled)
}
