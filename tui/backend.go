package tui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// Backend carries the UI's requests to hearth. Send must not block and
// must keep order: it queues m, and a message it could not deliver comes
// back to the UI as a SendFailedMsg. Events from hearth reach the UI as
// messages of their own: the *ipc.StateChange and ipc.Msg values that
// Remote.Run passes to send.
type Backend interface {
	Send(m ipc.Msg)
}

// SendFailedMsg reports a request that did not reach hearth.
type SendFailedMsg struct {
	Msg ipc.Msg
	Err error
}

// FatalMsg reports that the connection to hearth ended for good: hearth
// refused the client (wrong token, protocol version) or the token could
// not be read.
type FatalMsg struct{ Err error }

// RemoteOptions configure a Remote.
type RemoteOptions struct {
	Addr   string
	Client string // e.g. "mnemo/0.1"
	// Token returns the auth token. While it returns ipc.ErrNoToken (a
	// local hearth that never ran writes its token file as it boots),
	// Remote reports StateReconnecting and asks again.
	Token func() (string, error)
	Log   *slog.Logger
	// MinBackoff and MaxBackoff bound the reconnect delay; zero means the
	// ipc defaults.
	MinBackoff, MaxBackoff time.Duration
	// TokenRetry is how often a missing token is looked for; default 1s.
	TokenRetry time.Duration
}

// Remote is the Backend for a real hearth: an ipc.Client kept connected,
// a queue of outgoing requests and a writer that drains it in order.
type Remote struct {
	opts RemoteOptions
	wake chan struct{}

	mu     sync.Mutex
	queue  []ipc.Msg
	client *ipc.Client // nil until the token is known
	// queued counts Send calls, written the requests the writer is done
	// with (sent or failed); progress is closed and replaced as written
	// grows, for Flush.
	queued, written uint64
	progress        chan struct{}
}

// NewRemote returns a Remote; nothing is dialled until Run.
func NewRemote(o RemoteOptions) *Remote {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.TokenRetry <= 0 {
		o.TokenRetry = time.Second
	}
	return &Remote{opts: o, wake: make(chan struct{}, 1), progress: make(chan struct{})}
}

// Send queues m for hearth.
func (r *Remote) Send(m ipc.Msg) {
	r.mu.Lock()
	r.queue = append(r.queue, m)
	r.queued++
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run connects to hearth and passes every event to send until ctx ends:
// connection state changes as *ipc.StateChange, messages from hearth as
// the ipc.Msg they are. It is the one goroutine that reads from hearth;
// a second one, which Run also owns, writes the queue. When hearth
// refuses the client for good, Run sends a FatalMsg and returns the error.
func (r *Remote) Run(ctx context.Context, send func(tea.Msg)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { r.write(ctx, send) })

	token, err := r.token(ctx, send)
	if err != nil {
		return err
	}
	c := ipc.NewClient(r.opts.Addr, ipc.ClientOptions{
		DialOptions: ipc.DialOptions{Token: token, Client: r.opts.Client},
		MinBackoff:  r.opts.MinBackoff,
		MaxBackoff:  r.opts.MaxBackoff,
		Log:         r.opts.Log,
	})
	r.mu.Lock()
	r.client = c
	r.mu.Unlock()
	err = c.Run(ctx, func(e ipc.Event) {
		if e.State != nil {
			if e.State.State == ipc.StateConnected {
				r.kick() // requests queued while away may go now
			}
			send(e.State)
			return
		}
		send(e.Msg)
	})
	if ctx.Err() != nil {
		return nil
	}
	r.opts.Log.Error("hearth refused the client", "addr", r.opts.Addr, "err", err)
	send(FatalMsg{err})
	return err
}

// token waits for the auth token, reporting the wait as reconnecting.
func (r *Remote) token(ctx context.Context, send func(tea.Msg)) (string, error) {
	for attempt := 1; ; attempt++ {
		tok, err := r.opts.Token()
		if err == nil {
			return tok, nil
		}
		if !errors.Is(err, ipc.ErrNoToken) {
			r.opts.Log.Error("read auth token", "err", err)
			send(FatalMsg{err})
			return "", err
		}
		send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: attempt, Retry: r.opts.TokenRetry, Err: err})
		t := time.NewTimer(r.opts.TokenRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", context.Cause(ctx)
		case <-t.C:
		}
	}
}

func (r *Remote) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// write sends queued requests in order. A request that fails goes back to
// the UI, which decides whether to try again.
func (r *Remote) write(ctx context.Context, send func(tea.Msg)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		q, c := r.queue, r.client
		r.queue = nil
		r.mu.Unlock()
		for _, m := range q {
			err := ipc.ErrNotConnected
			if c != nil {
				err = c.Send(m)
			}
			if err != nil {
				r.opts.Log.Info("request not sent", "type", m.Type(), "err", err)
				send(SendFailedMsg{Msg: m, Err: err})
			}
			r.mu.Lock()
			r.written++
			close(r.progress)
			r.progress = make(chan struct{})
			r.mu.Unlock()
		}
	}
}

// Flush waits until every request queued before it was written to the
// connection (or failed), or ctx ends: on quit, so that what the UI sent
// last (a voice session's stop_voice and transcripts) is not lost. It
// needs Run to be running.
func (r *Remote) Flush(ctx context.Context) error {
	r.mu.Lock()
	target := r.queued
	for r.written < target {
		ch := r.progress
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("requests not written: %w", context.Cause(ctx))
		case <-ch:
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
	return nil
}
