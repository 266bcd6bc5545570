package ndjson

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/wire"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

func TestHandshakeRefusals(t *testing.T) {
	th := startHearth(t, "", nil)
	tests := []struct {
		name     string
		lines    []string
		wantCode string
	}{
		{"wrong token", []string{`{"type":"connect","token":"nope"}`}, ipc.CodeUnauthorized},
		{"missing token", []string{`{"type":"connect"}`}, ipc.CodeUnauthorized},
		{"message before connect", []string{`{"type":"message","content":"hi"}`}, ipc.CodeUnauthorized},
		{"garbage first", []string{`hello`}, ipc.CodeUnauthorized},
		{"future protocol", []string{`{"type":"connect","token":"` + testToken + `","protocol":99}`}, ipc.CodeProtocol},
		{"oversize first line", []string{`{"type":"connect","token":"` + strings.Repeat("x", ipc.MaxLineBytes) + `"}`}, ipc.CodeLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, th.addr)
			for _, l := range tt.lines {
				c.send(t, l)
			}
			got := c.rest(t)
			want := []ipc.Msg{&ipc.Error{Code: tt.wantCode}}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *ipc.Error) bool { return a.Code == b.Code })); diff != "" {
				t.Errorf("server sent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	th := startHearth(t, "", func(c *testConfig) { c.HandshakeTimeout = 50 * time.Millisecond })
	c := dialRaw(t, th.addr)
	got := c.rest(t)
	if len(got) != 1 || got[0].(*ipc.Error).Code != ipc.CodeHandshake {
		t.Errorf("got %v, want one handshake_timeout error", got)
	}
}

// TestTooManyClients: MaxClients bounds authenticated clients, and the
// cap is decided after the handshake, so that connections that never
// authenticate cannot lock the owner out (DESIGN.md, "Doors").
func TestTooManyClients(t *testing.T) {
	const maxClients = 2
	onlyTooMany := func(t *testing.T, got []ipc.Msg) {
		t.Helper()
		if len(got) != 1 {
			t.Fatalf("got %v, want one too_many_clients error", got)
		}
		if e, ok := got[0].(*ipc.Error); !ok || e.Code != ipc.CodeTooManyClients {
			t.Errorf("got %+v, want one too_many_clients error", got[0])
		}
	}
	t.Run("the next authenticated client is refused", func(t *testing.T) {
		th := startHearth(t, "", func(c *testConfig) { c.MaxClients = maxClients })
		for range maxClients {
			dial(t, th.addr) // returns once its history arrived: it counts
		}
		c := dialRaw(t, th.addr)
		c.send(t, connectLine)
		onlyTooMany(t, c.rest(t))
	})
	t.Run("idle unauthenticated connections do not count", func(t *testing.T) {
		th := startHearth(t, "", func(c *testConfig) {
			c.MaxClients = maxClients
			c.HandshakeTimeout = time.Minute // the idle ones stay in their handshake throughout
		})
		// MaxClients sockets connect first (the listener accepts in order)
		// and never say a word.
		idle := make([]*rawConn, maxClients)
		for i := range idle {
			idle[i] = dialRaw(t, th.addr)
		}
		for range maxClients {
			dial(t, th.addr) // fails the test if refused
		}
		// The idle ones were waiting all along: authenticating now, one
		// finds the cap reached.
		idle[0].send(t, connectLine)
		onlyTooMany(t, idle[0].rest(t))
	})
}

// TestFailedHandshakeIsThrottled: a failed handshake is answered only
// after the gate's delay, and health counts it (DESIGN.md, "Doors"); the
// owner's client from the same source is served after it.
func TestFailedHandshakeIsThrottled(t *testing.T) {
	const delay = 100 * time.Millisecond
	th := startHearth(t, "", func(c *testConfig) { c.Gate.BaseDelay, c.Gate.MaxDelay = delay, delay })
	c := dialRaw(t, th.addr)
	start := time.Now()
	c.send(t, `{"type":"connect","token":"nope"}`)
	got := c.rest(t)
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("wrong token answered after %v, want at least %v", elapsed, delay)
	}
	if len(got) != 1 {
		t.Fatalf("got %v, want one unauthorized error", got)
	}
	if e, ok := got[0].(*ipc.Error); !ok || e.Code != ipc.CodeUnauthorized {
		t.Errorf("got %+v, want one unauthorized error", got[0])
	}

	owner := dial(t, th.addr)
	if err := owner.Send(&ipc.Health{Ref: "h"}); err != nil {
		t.Fatal(err)
	}
	msgs := recvUntil(t, owner, func(m ipc.Msg) bool { _, ok := m.(*ipc.HealthReport); return ok })
	if r := msgs[len(msgs)-1].(*ipc.HealthReport); r.Throttled != 1 || r.Refused != 0 || r.Clients != 1 {
		t.Errorf("health = %+v, want 1 throttled handshake, none refused, 1 client", r)
	}
}

func TestHistoryOnConnect(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []ipc.Turn
	for i := range 5 {
		role := ipc.RoleUser
		if i%2 == 1 {
			role = ipc.RoleAgent
		}
		rec, err := j.Append(context.Background(), journal.Record{Role: role, Text: fmt.Sprintf("turn %d", i), Mode: ipc.ModeText})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, wire.Turn(rec))
	}
	j.Close()

	th := startHearth(t, dir, func(c *testConfig) { c.HistoryTurns = 3 })
	h := dial(t, th.addr).History()
	if diff := cmp.Diff(want[2:], h.Turns); diff != "" {
		t.Errorf("history turns (-want +got):\n%s", diff)
	}
	if h.Protocol != ipc.ProtocolVersion || h.ConversationID == "" || h.State != ipc.StateIdle {
		t.Errorf("history header = %+v", h)
	}
}

func TestReplyStreamsToEveryClient(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = model
		c.Context = func() ([]llm.Message, error) {
			return []llm.Message{{Role: "system", Content: "anchor"}}, nil
		}
	})
	a, b := dial(t, th.addr), dial(t, th.addr)
	model.replies <- chunks("Hel", "lo ", "there")
	if err := a.Send(&ipc.Message{Content: "hi", Ref: "r1"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*ipc.Conn{"sender": a, "other": b} {
		got := recvUntil(t, c, isDone)
		// Token boundaries are not part of the protocol: text joins the
		// newest queued token while a client is behind (DESIGN.md,
		// "Subscriptions"), so the three chunks arrive as one to three
		// tokens, in order and whole.
		var types []string
		for _, m := range got {
			if _, ok := m.(*ipc.Token); ok && len(types) > 0 && types[len(types)-1] == "token" {
				continue
			}
			types = append(types, m.Type())
		}
		wantTypes := []string{"turn", "status", "token", "done"}
		if diff := cmp.Diff(wantTypes, types); diff != "" {
			t.Errorf("%s: event types, consecutive tokens as one (-want +got):\n%s", name, diff)
		}
		if text := streamed(got); text != "Hello there" {
			t.Errorf("%s: streamed %q, want %q", name, text, "Hello there")
		}
		stored := got[0].(*ipc.TurnStored)
		if stored.Ref != "r1" || stored.Turn.Content != "hi" || stored.Turn.Role != ipc.RoleUser || stored.Turn.ID == "" {
			t.Errorf("%s: stored turn = %+v", name, stored)
		}
		done := got[len(got)-1].(*ipc.Done)
		if done.Turn.Content != "Hello there" || done.Turn.Role != ipc.RoleAgent || done.Turn.ID <= stored.Turn.ID {
			t.Errorf("%s: done = %+v", name, done.Turn)
		}
	}
	// The session context comes first, then the conversation.
	req := model.lastRequest()
	want := []llm.Message{{Role: "system", Content: "anchor"}, {Role: "user", Content: "hi"}}
	if diff := cmp.Diff(want, req.Messages); diff != "" {
		t.Errorf("model request (-want +got):\n%s", diff)
	}
	// Both turns are durable: a fresh connection's history has them.
	h := dial(t, th.addr).History()
	if n := len(h.Turns); n != 2 {
		t.Fatalf("history has %d turns, want 2", n)
	}
}

func TestTurnsRunOneAtATimeInOrder(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
	a, b, obs := dial(t, th.addr), dial(t, th.addr), dial(t, th.addr)
	const n = 10
	dones := 0
	count := func(m ipc.Msg) {
		if isDone(m) {
			dones++
		}
	}
	for i := range n {
		c := a
		if i%2 == 1 {
			c = b
		}
		ref := fmt.Sprint(i)
		if err := c.Send(&ipc.Message{Content: fmt.Sprintf("m%d", i), Ref: ref}); err != nil {
			t.Fatal(err)
		}
		// Wait for the store so that arrival order is the send order.
		recvUntil(t, obs, func(m ipc.Msg) bool {
			count(m)
			s, ok := m.(*ipc.TurnStored)
			return ok && s.Ref == ref
		})
	}
	if dones < n {
		recvUntil(t, obs, func(m ipc.Msg) bool { count(m); return dones == n })
	}
	if got := model.maxSeen.Load(); got != 1 {
		t.Errorf("model calls in flight at once = %d, want 1", got)
	}
	turns, err := th.journal.Tail(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		u, r := turns[2*i], turns[2*i+1]
		if u.Text != fmt.Sprintf("m%d", i) || r.Text != "echo: "+u.Text {
			t.Errorf("turn pair %d = %q, %q", i, u.Text, r.Text)
		}
	}
}

func TestNoProvider(t *testing.T) {
	th := startHearth(t, "", func(c *testConfig) { c.NoModel = llm.ErrNoProvider })
	c := dial(t, th.addr)
	c.Send(&ipc.Message{Content: "hello?", Ref: "q"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	e := got[len(got)-1].(*ipc.Error)
	if e.Code != ipc.CodeNoProvider || e.Ref != "q" || !strings.Contains(e.Message, "XAI_API_KEY") {
		t.Errorf("error = %+v", e)
	}
	// The message itself is kept.
	if h := dial(t, th.addr).History(); len(h.Turns) != 1 || h.Turns[0].Content != "hello?" {
		t.Errorf("history = %+v, want the one message", h.Turns)
	}
}

func TestProviderErrorIsSafe(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
	secret := "sk-secret-key /home/user/.config stack trace goroutine 1"
	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Provider: "script", Status: 500, Err: errors.New(secret)}
	}
	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		onText("half a ")
		return llm.Response{}, &llm.Error{Provider: "script", Err: errors.New(secret)}
	}
	c := dial(t, th.addr)
	isErr := func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok }

	c.Send(&ipc.Message{Content: "one", Ref: "1"})
	got := recvUntil(t, c, isErr)
	c.Send(&ipc.Message{Content: "two", Ref: "2"})
	got2 := recvUntil(t, c, isErr)

	for _, m := range append(got, got2...) {
		line, _ := ipc.Encode(m)
		if strings.Contains(string(line), "secret") || strings.Contains(string(line), "/home") || strings.Contains(string(line), "goroutine") {
			t.Errorf("leaked detail: %s", line)
		}
	}
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeProviderError || e.Ref != "1" {
		t.Errorf("first error = %+v", e)
	}
	// A reply cut short keeps what streamed, marked incomplete.
	var done *ipc.Done
	for _, m := range got2 {
		if d, ok := m.(*ipc.Done); ok {
			done = d
		}
	}
	if done == nil || done.Turn.Content != "half a " || !done.Turn.Incomplete {
		t.Errorf("cut-short reply = %+v, want incomplete %q", done, "half a ")
	}
}

func TestBadLinesKeepConnectionOpen(t *testing.T) {
	th := startHearth(t, "", nil)
	c := dialRaw(t, th.addr)
	c.send(t, `{"type":"connect","token":"`+testToken+`"}`)
	if _, ok := c.next(t).(*ipc.History); !ok {
		t.Fatal("no history")
	}
	tests := []struct{ line, code string }{
		{`{"type":"teleport"}`, ipc.CodeUnknownType},
		{`not json`, ipc.CodeBadRequest},
		{`{"type":"message","content":42}`, ipc.CodeBadRequest},
		{`{"type":"message","content":"  "}`, ipc.CodeBadRequest},
		{`{"type":"token","content":"x"}`, ipc.CodeBadRequest},
		{`{"type":"connect","token":"` + testToken + `"}`, ipc.CodeBadRequest},
		{`{"type":"transcript","role":"robot","text":"x"}`, ipc.CodeBadRequest},
		{`{"type":"voice_request"}`, ipc.CodeNoVoiceProvider},
	}
	for _, tt := range tests {
		c.send(t, tt.line)
		e, ok := c.next(t).(*ipc.Error)
		if !ok || e.Code != tt.code {
			t.Errorf("%s: got %+v, want error %s", tt.line, e, tt.code)
		}
	}
	c.send(t, `{"type":"ping","ref":"p"}`)
	if p, ok := c.next(t).(*ipc.Pong); !ok || p.Ref != "p" {
		t.Errorf("ping answered with %+v", p)
	}
	// An oversize line ends the connection with one error.
	c.send(t, `{"type":"message","content":"`+strings.Repeat("a", ipc.MaxLineBytes)+`"}`)
	got := c.rest(t)
	if len(got) != 1 || got[0].(*ipc.Error).Code != ipc.CodeLineTooLong {
		t.Errorf("after oversize line got %v, want one line_too_long error", got)
	}
}

func TestTranscriptsAreStoredNotAnswered(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
	c := dial(t, th.addr)
	c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: "spoken", Ref: "v1"})
	c.Send(&ipc.Transcript{Role: ipc.RoleAgent, Text: "said back", Ref: "v2"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { s, ok := m.(*ipc.TurnStored); return ok && s.Ref == "v2" })
	for _, m := range got {
		if s, ok := m.(*ipc.TurnStored); !ok || s.Turn.Mode != ipc.ModeVoice {
			t.Errorf("got %+v, want voice turns only", m)
		}
	}
	model.mu.Lock()
	n := len(model.requests)
	model.mu.Unlock()
	if n != 0 {
		t.Errorf("model called %d times for transcripts", n)
	}
}

func TestMidTurnConnectGetsPending(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) { c.Model = model })
	release := make(chan struct{})
	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		onText("first half, ")
		<-release
		onText("second half")
		return llm.Response{Text: "first half, second half"}, nil
	}
	a := dial(t, th.addr)
	a.Send(&ipc.Message{Content: "go"})
	recvUntil(t, a, func(m ipc.Msg) bool { _, ok := m.(*ipc.Token); return ok })

	b := dial(t, th.addr)
	if h := b.History(); h.Pending != "first half, " || h.State != ipc.StateThinking {
		t.Errorf("mid-turn history pending=%q state=%q", h.Pending, h.State)
	}
	close(release)
	if rest := streamed(recvUntil(t, b, isDone)); rest != "second half" {
		t.Errorf("after connect streamed %q, want %q", rest, "second half")
	}
}

func TestSlowClientDroppedOthersKeepStreaming(t *testing.T) {
	model := newScriptModel()
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = model
		c.ClientBudget = 256 << 10
		c.DropGrace = time.Minute
		c.MaxReplyBytes = 8 << 20
	})

	// The slow client handshakes, then never reads; a small receive
	// buffer makes its queue back up quickly.
	slow := dialRaw(t, th.addr)
	slow.Conn.(*net.TCPConn).SetReadBuffer(256 << 10)
	slow.send(t, `{"type":"connect","token":"`+testToken+`"}`)
	if _, ok := slow.next(t).(*ipc.History); !ok {
		t.Fatal("no history for slow client")
	}
	fast := dial(t, th.addr)

	// The model streams no further than 64 KiB ahead of what the fast
	// client has read: a fast reader, deterministically. Four replies of
	// 3 MiB outgrow the slow client's budget and its socket buffers.
	const turns, n, size = 4, 750, 4 << 10
	var received atomic.Int64
	progress := make(chan struct{}, 1)
	chunk := strings.Repeat("x", size)
	sent := 0
	for range turns {
		model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
			for range n {
				for int64(sent)-received.Load() > 64<<10 {
					select {
					case <-progress:
					case <-ctx.Done():
						return llm.Response{}, ctx.Err()
					}
				}
				sent += size
				onText(chunk)
			}
			return llm.Response{}, nil
		}
	}
	for range turns {
		fast.Send(&ipc.Message{Content: "flood"})
		recvUntil(t, fast, func(m ipc.Msg) bool {
			if tok, ok := m.(*ipc.Token); ok {
				received.Add(int64(len(tok.Content)))
				select {
				case progress <- struct{}{}:
				default:
				}
			}
			if e, ok := m.(*ipc.Error); ok {
				t.Fatalf("fast client got %+v", e)
			}
			return isDone(m)
		})
	}
	if got := received.Load(); got != turns*n*size {
		t.Errorf("fast client got %d bytes, want %d", got, turns*n*size)
	}
	t.Logf("fast done at %s", time.Now().Format("15:04:05.000"))
	// The slow client's stream ends with slow_client, then EOF.
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := slow.rest(t)
	if len(got) == 0 {
		t.Fatal("slow client got nothing")
	}
	if e, ok := got[len(got)-1].(*ipc.Error); !ok || e.Code != ipc.CodeSlowClient {
		t.Errorf("slow client's last message = %+v, want slow_client error", got[len(got)-1])
	}
}

func TestShutdownStoresTurnInFlight(t *testing.T) {
	model := newScriptModel()
	dir := t.TempDir()
	th := startHearth(t, dir, func(c *testConfig) { c.Model = model; c.ShutdownGrace = 20 * time.Millisecond })
	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		onText("partial")
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	c := dial(t, th.addr)
	c.Send(&ipc.Message{Content: "long question"})
	recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Token); return ok })
	th.stop(t)

	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recs, err := j.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Text != "partial" || !recs[1].Incomplete {
		t.Errorf("journal after shutdown = %+v, want the question and an incomplete %q", recs, "partial")
	}
}

func TestTokensEqual(t *testing.T) {
	tests := []struct {
		got, want string
		ok        bool
	}{
		{"abc", "abc", true},
		{"abd", "abc", false},
		{"ab", "abc", false},
		{"", "", false},
		{"abc", "", false},
	}
	for _, tt := range tests {
		if got := auth.TokenEqual(tt.got, tt.want); got != tt.ok {
			t.Errorf("TokenEqual(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.ok)
		}
	}
}

// TestOptionDefaults pins the documented defaults of the door.
func TestOptionDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	tests := []struct {
		name      string
		got, want any
	}{
		{"MaxClients", o.MaxClients, 64},
		{"HandshakeTimeout", o.HandshakeTimeout, 5 * time.Second},
		{"ClientQueue", o.ClientQueue, 1024},
		{"ClientBudget", o.ClientBudget, int64(4 << 20)},
		{"DropGrace", o.DropGrace, 5 * time.Second},
		{"CloseTimeout", o.CloseTimeout, 30 * time.Second},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New without a token succeeded")
	}
}
