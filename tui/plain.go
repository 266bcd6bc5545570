package tui

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// Options say which hearth to talk to.
type Options struct {
	Addr   string
	Token  string
	Client string // e.g. "mnemo/0.1"
	// Dial, when set, opens the session instead of dialling Addr: an
	// in-process hearth (`mnemo --local`).
	Dial func(ctx context.Context) (Conn, error)
}

// Conn is one session with hearth: *ipc.Conn over TCP, or an in-process
// one of the same shape.
type Conn interface {
	Send(m ipc.Msg) error
	Recv(ctx context.Context) (ipc.Msg, error)
	History() *ipc.History
	Close() error
}

func (o Options) dial() ipc.DialOptions {
	return ipc.DialOptions{Token: o.Token, Client: o.Client}
}

// connect opens a session with hearth.
func (o Options) connect(ctx context.Context) (Conn, error) {
	if o.Dial != nil {
		return o.Dial(ctx)
	}
	c, err := ipc.Dial(ctx, o.Addr, o.dial())
	if err != nil {
		return nil, err
	}
	return c, nil
}

func newRef() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Send sends text as one message and streams the reply to w. It returns
// when the reply is complete, or with the error hearth reported.
func Send(ctx context.Context, o Options, text string, w io.Writer) error {
	conn, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ref := newRef()
	if err := conn.Send(&ipc.Message{Content: text, Ref: ref}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	mine := false // our turn is stored: the tokens that follow answer it
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return fmt.Errorf("connection to hearth lost: %w", err)
		}
		switch m := m.(type) {
		case *ipc.TurnStored:
			if m.Ref == ref {
				mine = true
			}
		case *ipc.Token:
			if mine {
				io.WriteString(w, m.Content)
			}
		case *ipc.Done:
			if !mine {
				continue
			}
			io.WriteString(w, "\n")
			if !m.Turn.Incomplete {
				return nil
			}
		case *ipc.Error:
			if m.Ref == ref || m.Ref == "" {
				return m
			}
		}
	}
}

// History prints the last turns hearth sends on connect.
func History(ctx context.Context, o Options, w io.Writer) error {
	conn, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, t := range conn.History().Turns {
		printTurn(w, t)
	}
	return nil
}

func printTurn(w io.Writer, t ipc.Turn) {
	mark := ""
	if t.Mode == ipc.ModeVoice {
		mark = " (voice)"
	}
	if t.Incomplete {
		mark += " (cut short)"
	}
	fmt.Fprintf(w, "[%s] %s%s: %s\n", t.TS.Local().Format(time.DateTime), t.Role, mark, t.Content)
}

// PingOnce checks that hearth answers a handshake.
func PingOnce(ctx context.Context, o Options) error {
	conn, err := o.connect(ctx)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Ping checks that hearth answers, retrying until ctx ends.
func Ping(ctx context.Context, o Options) error {
	for {
		conn, err := o.connect(ctx)
		if err == nil {
			return conn.Close()
		}
		var herr *ipc.Error
		if errors.As(err, &herr) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Chat reads lines from in and sends each as a message, printing the
// conversation (everyone's turns and the streamed replies) to w. It
// reconnects when hearth restarts. It returns at the end of in.
func Chat(ctx context.Context, o Options, in io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	client := ipc.NewClient(o.Addr, ipc.ClientOptions{DialOptions: o.dial()})
	events := make(chan ipc.Event, 256)
	runErr := make(chan error, 1)
	go func() {
		runErr <- client.Run(ctx, func(e ipc.Event) {
			select {
			case events <- e:
			case <-ctx.Done():
			}
		})
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), ipc.MaxLineBytes)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()

	v := &chatView{w: w, seen: make(map[string]bool), mine: make(map[string]bool)}
	var outbox []*ipc.Message
	for {
		select {
		case err := <-runErr:
			return err
		case e := <-events:
			v.show(e)
			if e.State != nil && e.State.State == ipc.StateConnected {
				for len(outbox) > 0 && client.Send(outbox[0]) == nil {
					outbox = outbox[1:]
				}
			}
			if lines == nil && len(v.mine) == 0 {
				return nil
			}
		case line, ok := <-lines:
			if !ok {
				// End of input: finish the replies still owed, then leave.
				if len(v.mine) == 0 {
					return nil
				}
				lines = nil
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			ref := newRef()
			v.mine[ref] = true
			msg := &ipc.Message{Content: line, Ref: ref}
			if err := client.Send(msg); err != nil {
				// Not connected yet, or between connections: it goes
				// out when the connection is back.
				outbox = append(outbox, msg)
			}
		}
	}
}

// chatView prints events as plain lines, skipping turns already shown.
type chatView struct {
	w         io.Writer
	seen      map[string]bool
	mine      map[string]bool // refs of our messages not answered yet
	answering string          // the ref whose reply is streaming
	streaming bool
}

func (v *chatView) show(e ipc.Event) {
	if s := e.State; s != nil {
		switch s.State {
		case ipc.StateConnected:
			for _, t := range s.History.Turns {
				if !v.seen[t.ID] {
					v.seen[t.ID] = true
					printTurn(v.w, t)
				}
			}
			fmt.Fprintf(v.w, "-- connected to %s --\n", s.History.Server)
		case ipc.StateReconnecting:
			v.endStream()
			fmt.Fprintf(v.w, "-- hearth unreachable, retrying in %s --\n", s.Retry.Round(time.Millisecond))
		}
		return
	}
	switch m := e.Msg.(type) {
	case *ipc.TurnStored:
		v.seen[m.Turn.ID] = true
		if m.Turn.Role == ipc.RoleAgent {
			v.endStream() // a step before tools; the answer streams next
			return
		}
		if v.mine[m.Ref] {
			v.answering = m.Ref
		} else {
			printTurn(v.w, m.Turn)
		}
	case *ipc.Token:
		if !v.streaming {
			io.WriteString(v.w, "agent: ")
			v.streaming = true
		}
		io.WriteString(v.w, m.Content)
	case *ipc.Done:
		v.seen[m.Turn.ID] = true
		v.endStream()
		if !m.Turn.Incomplete {
			delete(v.mine, v.answering)
			v.answering = ""
		}
	case *ipc.Error:
		v.endStream()
		fmt.Fprintf(v.w, "! %s\n", m.Message)
		delete(v.mine, m.Ref)
	}
}

func (v *chatView) endStream() {
	if v.streaming {
		io.WriteString(v.w, "\n")
		v.streaming = false
	}
}

// Status prints hearth's health report: agent state, clients, model and
// the recall index's progress.
func Status(ctx context.Context, o Options, w io.Writer) error {
	conn, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Send(&ipc.Health{Ref: "status"}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return fmt.Errorf("connection to hearth lost: %w", err)
		}
		switch m := m.(type) {
		case *ipc.HealthReport:
			printHealth(w, conn.History().Server, m)
			return nil
		case *ipc.Error:
			if m.Ref == "status" || m.Ref == "" {
				return m
			}
		}
	}
}

// printHealth writes a health report as Status shows it. While recall is
// unavailable nothing is being indexed: it says so, with the attempts to
// open the backend and hearth's reason (which says whether it retries),
// instead of an indexing progress that would read as healthy.
func printHealth(w io.Writer, server string, m *ipc.HealthReport) {
	fmt.Fprintf(w, "hearth %s: %s, %d client(s), model %s\n", server, m.State, m.Clients, orNone(m.Provider, m.Model))
	if m.Dropped+m.Refused+m.Throttled > 0 {
		fmt.Fprintf(w, "clients: %d dropped for falling behind, %d connections refused before authenticating, %d failed handshakes throttled\n", m.Dropped, m.Refused, m.Throttled)
	}
	ix := m.Index
	switch {
	case ix == nil:
		fmt.Fprintln(w, "recall: not running (opening, or unavailable: see hearth's log); search uses keywords over the journal")
	case ix.Unavailable:
		fmt.Fprintf(w, "recall: unavailable: the %s index (embedder %s) could not be opened after %s; nothing is being indexed\n",
			ix.Backend, ix.Embedder, plural(ix.Failures, "attempt"))
		fmt.Fprintf(w, "recall: %s\n", orDefault(ix.Failing, "memory search uses keywords over the journal meanwhile (details in hearth's log)"))
	default:
		state := "catching up with the journal (search may use keywords meanwhile)"
		if ix.Ready {
			state = "ready"
		}
		fmt.Fprintf(w, "recall: %s index, embedder %s, %s; %d documents indexed since start, %s behind the journal\n",
			ix.Backend, ix.Embedder, state, ix.Indexed, time.Duration(ix.LagMS)*time.Millisecond)
		if n := ix.RecallSearches + ix.KeywordSearches; n > 0 {
			fmt.Fprintf(w, "recall: searches since start: %d by recall, %d by keywords\n", ix.RecallSearches, ix.KeywordSearches)
		}
		if ix.Failing != "" {
			fmt.Fprintf(w, "recall: %s (%d failures)\n", ix.Failing, ix.Failures)
		}
	}
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orNone(provider, model string) string {
	if provider == "" {
		return "none configured"
	}
	return provider + " " + model
}
