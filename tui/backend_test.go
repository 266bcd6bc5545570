package tui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// fakeHearth speaks enough of protocol v1 over real TCP to drive Remote:
// it answers connect with history (or an error) and records what it reads.
type fakeHearth struct {
	ln     net.Listener
	refuse *ipc.Error

	mu   sync.Mutex
	got  []ipc.Msg
	cond *sync.Cond
}

func newFakeHearth(t *testing.T, refuse *ipc.Error) *fakeHearth {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeHearth{ln: ln, refuse: refuse}
	f.cond = sync.NewCond(&f.mu)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { f.serve(nc) })
		}
	})
	return f
}

func (f *fakeHearth) serve(nc net.Conn) {
	defer nc.Close()
	r, w := ipc.NewReader(nc), ipc.NewWriter(nc)
	if _, err := r.Read(); err != nil { // connect
		return
	}
	if f.refuse != nil {
		w.Write(f.refuse)
		return
	}
	w.Write(&ipc.History{Turns: []ipc.Turn{userTurn(1, "hi")}, Server: "fake/1", Protocol: 1, ConversationID: "main", State: ipc.StateIdle})
	w.Write(&ipc.Token{Content: "hello"})
	for {
		m, err := r.Read()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.got = append(f.got, m)
		f.cond.Broadcast()
		f.mu.Unlock()
	}
}

// waitGot waits until n messages have arrived and returns them.
func (f *fakeHearth) waitGot(n int) []ipc.Msg {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.got) < n {
		f.cond.Wait()
	}
	return append([]ipc.Msg(nil), f.got...)
}

// events collects what Remote passes to send.
type events struct{ ch chan tea.Msg }

func (e *events) send(m tea.Msg) { e.ch <- m }

func (e *events) next(t *testing.T) tea.Msg {
	t.Helper()
	select {
	case m := <-e.ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

func TestRemoteWaitsForTokenThenStreams(t *testing.T) {
	f := newFakeHearth(t, nil)
	tries := 0
	r := NewRemote(RemoteOptions{
		Addr:       f.ln.Addr().String(),
		TokenRetry: time.Millisecond,
		Token: func() (string, error) {
			if tries++; tries < 3 {
				return "", ipc.ErrNoToken
			}
			return "tok", nil
		},
	})
	// Before there is a connection a request comes back failed.
	early := &ipc.Ping{Ref: "early"}
	r.Send(early)

	ev := &events{ch: make(chan tea.Msg, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, ev.send) }()

	var states []string
	var sawFailed, sawToken bool
	for !sawToken {
		switch m := ev.next(t).(type) {
		case *ipc.StateChange:
			states = append(states, m.State.String())
			if m.State == ipc.StateReconnecting && !errors.Is(m.Err, ipc.ErrNoToken) {
				t.Errorf("waiting for the token reported %v", m.Err)
			}
			if m.State == ipc.StateConnected && (m.History == nil || len(m.History.Turns) != 1) {
				t.Errorf("connected without the history: %+v", m.History)
			}
		case SendFailedMsg:
			if m.Msg != early || !errors.Is(m.Err, ipc.ErrNotConnected) {
				t.Errorf("failed %+v", m)
			}
			sawFailed = true
		case *ipc.Token:
			sawToken = m.Content == "hello"
		}
	}
	if !sawFailed {
		t.Errorf("a request sent before the connection did not come back failed")
	}
	want := []string{"reconnecting", "reconnecting", "connecting", "connected"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("states %v, want %v", states, want)
	}

	// Requests arrive in order.
	for i := range 200 {
		r.Send(&ipc.Message{Content: fmt.Sprint(i), Ref: fmt.Sprint(i)})
	}
	got := f.waitGot(200)
	for i, m := range got {
		if msg, ok := m.(*ipc.Message); !ok || msg.Content != fmt.Sprint(i) {
			t.Fatalf("request %d arrived as %+v", i, m)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
}

func TestRemoteRefusedIsFatal(t *testing.T) {
	f := newFakeHearth(t, &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong token"})
	r := NewRemote(RemoteOptions{Addr: f.ln.Addr().String(), Token: func() (string, error) { return "bad", nil }})
	ev := &events{ch: make(chan tea.Msg, 64)}
	err := r.Run(context.Background(), ev.send)
	var herr *ipc.Error
	if !errors.As(err, &herr) || herr.Code != ipc.CodeUnauthorized {
		t.Fatalf("Run = %v, want unauthorized", err)
	}
	for {
		if m, ok := ev.next(t).(FatalMsg); ok {
			if !errors.As(m.Err, &herr) {
				t.Errorf("fatal %v", m.Err)
			}
			return
		}
	}
}

func TestRemoteBadTokenFileIsFatal(t *testing.T) {
	r := NewRemote(RemoteOptions{Addr: "127.0.0.1:1", Token: func() (string, error) { return "", errors.New("token file has mode 0644") }})
	ev := &events{ch: make(chan tea.Msg, 8)}
	if err := r.Run(context.Background(), ev.send); err == nil {
		t.Fatal("Run with an unreadable token returned nil")
	}
	if _, ok := ev.next(t).(FatalMsg); !ok {
		t.Errorf("no FatalMsg")
	}
}

// TestRemoteFlush: Flush returns once every request queued before it was
// written, so that cancelling Run right after loses none; it gives up when
// its ctx ends.
func TestRemoteFlush(t *testing.T) {
	f := newFakeHearth(t, nil)
	r := NewRemote(RemoteOptions{Addr: f.ln.Addr().String(), Token: func() (string, error) { return "tok", nil }})
	ev := &events{ch: make(chan tea.Msg, 256)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, ev.send) }()
	for {
		if s, ok := ev.next(t).(*ipc.StateChange); ok && s.State == ipc.StateConnected {
			break
		}
	}
	const n = 100
	for i := range n {
		r.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: fmt.Sprint(i), Ref: fmt.Sprint(i)})
	}
	r.Send(&ipc.StopVoice{})
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	if err := r.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if got := f.waitGot(n + 1); got[n].Type() != ipc.TypeStopVoice {
		t.Errorf("last request %s, want stop_voice", got[n].Type())
	}

	// Nothing writes: Flush gives up with its ctx.
	idle := NewRemote(RemoteOptions{Addr: f.ln.Addr().String()})
	idle.Send(&ipc.StopVoice{})
	gone, stop := context.WithCancel(context.Background())
	stop()
	if err := idle.Flush(gone); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush without a writer = %v", err)
	}
}
