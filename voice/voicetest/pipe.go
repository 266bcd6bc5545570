package voicetest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// pipeListener hands the server ends of net.Pipe connections to an
// http.Server: a network with no sockets, usable in a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "voicetest.pipe" }

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func pipeClient(t testing.TB, h http.Handler) *http.Client {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(l) }()
	tr := &http.Transport{DialContext: l.dial, DisableKeepAlives: true}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = hs.Close()
	})
	return &http.Client{Transport: tr}
}
