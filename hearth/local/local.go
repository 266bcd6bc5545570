// Package local is hearth's in-process door: a client of the core in the
// same process (`mnemo --local`), speaking protocol v1 values (package
// ipc) with no socket and no bytes. It is the NDJSON door without the
// network: the same wire session (package wire) turns requests into core
// commands and events into messages.
package local

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/wire"
	"github.com/mnemo/mnemo/ipc"
)

// Options configure a Client.
type Options struct {
	Name string // the client's name, for hearth's log
	Log  *slog.Logger
}

// Client is one in-process client. Send never blocks and keeps order; Run
// delivers what hearth says.
type Client struct {
	core wire.Core
	opts Options
	wake chan struct{}

	mu    sync.Mutex
	queue []ipc.Msg
	// conv is the conversation followed, from the last History: a
	// resync after falling behind stays on it. Only Run's goroutine
	// uses it.
	conv string
}

// New returns a client of core; nothing is subscribed until Run.
func New(core wire.Core, o Options) *Client {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Client{core: core, opts: o, wake: make(chan struct{}, 1)}
}

// Send queues a request for hearth.
func (c *Client) Send(m ipc.Msg) {
	c.mu.Lock()
	c.queue = append(c.queue, m)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run subscribes and passes everything hearth says to send until ctx ends
// or hearth shuts down: first an *ipc.StateChange "connected" carrying the
// history snapshot (as a remote client reports a connection), then every
// event as the ipc.Msg it is. A client cut off for falling behind
// resubscribes and resyncs from a new snapshot, as a remote one would
// reconnect. Requests queued with Send are carried out in order.
func (c *Client) Run(ctx context.Context, send func(any)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := c.session(ctx, send)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, hearth.ErrLagging):
			c.opts.Log.Warn("local client fell behind; resyncing", "attempt", attempt)
			send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: attempt, Err: err})
			continue
		}
		return err
	}
}

// session runs one subscription: a reader of requests and the delivery
// of events, until the subscription ends.
func (c *Client) session(ctx context.Context, send func(any)) error {
	sess, err := wire.Open(ctx, c.core, wire.Options{Watch: hearth.WatchOptions{Name: c.opts.Name, Cost: wire.Cost, Conversation: c.conv}, Log: c.opts.Log})
	var p *hearth.Problem
	if errors.As(err, &p) && c.conv != "" {
		c.conv = "" // the conversation is gone: back to main
		sess, err = wire.Open(ctx, c.core, wire.Options{Watch: hearth.WatchOptions{Name: c.opts.Name, Cost: wire.Cost}, Log: c.opts.Log})
	}
	if err != nil {
		return err
	}
	defer sess.Close()
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { c.requests(sctx, sess) })

	first := true
	err = sess.Run(sctx, func(msgs []ipc.Msg) error {
		for _, m := range msgs {
			h, ok := m.(*ipc.History)
			if ok {
				c.conv = h.ConversationID
			}
			if ok && first {
				first = false
				send(&ipc.StateChange{State: ipc.StateConnected, History: h})
				continue
			}
			send(m)
		}
		return nil
	})
	if e := wire.Farewell(err); e != nil && !errors.Is(err, hearth.ErrLagging) {
		send(e)
	}
	return err
}

// requests hands queued requests to sess in order until ctx ends.
func (c *Client) requests(ctx context.Context, sess *wire.Session) {
	for {
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, m := range q {
			sess.Handle(m)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
	}
}

// Conn is one in-process session with the call shape of *ipc.Conn
// (Send, Recv, History, Close), for the line commands (`mnemo send
// --local`).
type Conn struct {
	sess    *wire.Session
	history *ipc.History
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	cond  *sync.Cond
	queue []ipc.Msg
	err   error // why the session ended
}

// Dial subscribes a session and returns once its history snapshot is in.
func Dial(ctx context.Context, core wire.Core, o Options) (*Conn, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	sess, err := wire.Open(context.WithoutCancel(ctx), core, wire.Options{Watch: hearth.WatchOptions{Name: o.Name, Cost: wire.Cost}, Log: o.Log})
	if err != nil {
		if e := wire.Farewell(err); e != nil {
			return nil, e
		}
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	c := &Conn{sess: sess, cancel: cancel, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go func() {
		defer close(c.done)
		err := sess.Run(rctx, func(msgs []ipc.Msg) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.queue = append(c.queue, msgs...)
			c.cond.Broadcast()
			return nil
		})
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := wire.Farewell(err); e != nil {
			c.queue = append(c.queue, e)
		}
		c.err = errors.New("local session ended")
		c.cond.Broadcast()
	}()
	m, err := c.Recv(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	h, ok := m.(*ipc.History)
	if !ok {
		c.Close()
		if e, isErr := m.(*ipc.Error); isErr {
			return nil, e
		}
		return nil, errors.New("local session: the first message is not the history")
	}
	c.history = h
	return c, nil
}

// History is the snapshot the session started from.
func (c *Conn) History() *ipc.History { return c.history }

// Send hands a request to hearth.
func (c *Conn) Send(m ipc.Msg) error {
	c.sess.Handle(m)
	return nil
}

// Recv returns hearth's next message, waiting until there is one, ctx
// ends or the session ends.
func (c *Conn) Recv(ctx context.Context) (ipc.Msg, error) {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) == 0 {
		if c.err != nil {
			return nil, c.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c.cond.Wait()
	}
	m := c.queue[0]
	c.queue = c.queue[1:]
	return m, nil
}

// Close ends the session.
func (c *Conn) Close() error {
	c.cancel()
	c.sess.Close()
	<-c.done
	return nil
}
