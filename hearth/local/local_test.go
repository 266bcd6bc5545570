package local_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/local"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

type echo struct{}

func (echo) Name() string  { return "echo" }
func (echo) Model() string { return "echo-1" }
func (echo) Stream(_ context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1].Content
	onText("echo: ")
	onText(last)
	return llm.Response{Text: "echo: " + last}, nil
}

type fixed struct{ m hearth.Model }

func (f fixed) Resolve() (hearth.Model, error) { return f.m, nil }

func startCore(t *testing.T) (*hearth.Hearth, func()) {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := hearth.New(hearth.Config{Journal: j, Models: fixed{echo{}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(func() { stop(); j.Close() })
	return h, stop
}

// inbox collects what a Client delivers.
type inbox struct {
	mu   sync.Mutex
	cond *sync.Cond
	msgs []any
}

func newInbox() *inbox {
	b := &inbox{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *inbox) send(m any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
	b.cond.Broadcast()
}

func (b *inbox) waitFor(t *testing.T, what string, ok func(any) bool) {
	t.Helper()
	timer := time.AfterFunc(10*time.Second, func() { b.send(nil) })
	defer timer.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 0; ; i++ {
		for ; i < len(b.msgs); i++ {
			if b.msgs[i] == nil {
				t.Fatalf("no %s within 10s; got %v", what, b.msgs)
			}
			if ok(b.msgs[i]) {
				return
			}
		}
		b.cond.Wait()
		i--
	}
}

func TestClientSpeaksV1InProcess(t *testing.T) {
	h, stop := startCore(t)
	c := local.New(h, local.Options{Name: "test"})
	box := newInbox()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background(), box.send) }()

	box.waitFor(t, "connected", func(m any) bool {
		s, ok := m.(*ipc.StateChange)
		return ok && s.State == ipc.StateConnected && s.History != nil && s.History.ConversationID == "main"
	})
	c.Send(&ipc.Message{Content: "hello", Ref: "r1"})
	c.Send(&ipc.Ping{Ref: "p1"})
	box.waitFor(t, "the user turn", func(m any) bool { ts, ok := m.(*ipc.TurnStored); return ok && ts.Ref == "r1" })
	box.waitFor(t, "the reply", func(m any) bool { d, ok := m.(*ipc.Done); return ok && d.Turn.Content == "echo: hello" })
	box.waitFor(t, "the pong", func(m any) bool { p, ok := m.(*ipc.Pong); return ok && p.Ref == "p1" })

	c.Send(&ipc.Message{Content: "  "})
	box.waitFor(t, "a refusal", func(m any) bool { e, ok := m.(*ipc.Error); return ok && e.Code == ipc.CodeBadRequest })

	stop()
	box.waitFor(t, "the shutdown notice", func(m any) bool { e, ok := m.(*ipc.Error); return ok && e.Code == ipc.CodeShuttingDown })
	if err := <-ran; err == nil {
		t.Errorf("Run returned nil after hearth shut down, want the reason")
	}
}

func TestConnSendRecv(t *testing.T) {
	h, _ := startCore(t)
	ctx := context.Background()
	c, err := local.Dial(ctx, h, local.Options{Name: "line"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.History() == nil || c.History().Protocol != ipc.ProtocolVersion {
		t.Fatalf("History() = %+v", c.History())
	}
	c.Send(&ipc.Message{Content: "ping me", Ref: "x"})
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		m, err := c.Recv(rctx)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if d, ok := m.(*ipc.Done); ok {
			if d.Turn.Content != "echo: ping me" {
				t.Errorf("reply %q", d.Turn.Content)
			}
			break
		}
	}
	// A Recv with nothing to come honours its context.
	short, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	for {
		if _, err := c.Recv(short); err != nil {
			break // the idle state change, then nothing: the deadline
		}
	}
}
