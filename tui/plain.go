package tui

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// UnreachableError is a failure to talk to hearth at all: it does not
// answer, refused the client (wrong token, protocol), or the connection
// broke. mnemo exits with status 3 on it.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// connect opens a session with hearth.
func (o Options) connect(ctx context.Context) (Conn, error) {
	if o.Dial != nil {
		c, err := o.Dial(ctx)
		if err != nil {
			return nil, &UnreachableError{err}
		}
		return c, nil
	}
	c, err := ipc.Dial(ctx, o.Addr, o.dial())
	if err != nil {
		return nil, &UnreachableError{err}
	}
	return c, nil
}

// lost is the error of a connection that broke mid-request.
func lost(err error) error {
	return &UnreachableError{fmt.Errorf("connection to hearth lost: %w", err)}
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
		return lost(err)
	}
	mine := false // our turn is stored: the tokens that follow answer it
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return lost(err)
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
			// A tool that failed is not the turn failing: the agent
			// was told and goes on.
			if (m.Ref == ref || m.Ref == "") && m.Code != ipc.CodeToolError {
				return m
			}
		}
	}
}

// HistoryOptions say which turns History prints, and how. The zero value
// prints the turns hearth sends on connect (its last 50 by default).
type HistoryOptions struct {
	Limit int       // the last Limit turns
	All   bool      // every turn
	Since time.Time // turns from then on
	JSON  bool      // one ipc.Turn as JSON per line, for scripts
	// Conversation is the conversation read ("": main).
	Conversation string
	// Notes gets what the reader should know about the output, such as a
	// hearth too old to read back further than its snapshot; nil: none.
	Notes io.Writer
}

// History prints stored turns, oldest first.
func History(ctx context.Context, o Options, q HistoryOptions, w io.Writer) error {
	conn, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	print := func(t ipc.Turn) error {
		if q.JSON {
			return printJSON(w, t)
		}
		printTurn(w, t)
		return nil
	}
	h := conn.History()
	if q.Conversation != "" && q.Conversation != h.ConversationID {
		if !h.HasFeature("conversations") {
			return fmt.Errorf("%s has one conversation only", orDefault(h.Server, "this hearth"))
		}
		if q.Limit == 0 && !q.All && q.Since.IsZero() {
			q.Limit = 50 // what a snapshot holds by default
		}
		return readHistory(ctx, conn, q, print)
	}
	if q.Limit == 0 && !q.All && q.Since.IsZero() {
		for _, t := range h.Turns {
			if err := print(t); err != nil {
				return err
			}
		}
		return nil
	}
	if h.HasFeature("history_query") {
		return readHistory(ctx, conn, q, print)
	}
	// A hearth before history_query: its snapshot is all there is.
	turns := slices.DeleteFunc(slices.Clone(h.Turns), func(t ipc.Turn) bool { return t.TS.Before(q.Since) })
	if q.Limit > 0 && len(turns) > q.Limit {
		turns = turns[len(turns)-q.Limit:]
	}
	if q.Notes != nil && (q.All || q.Limit > len(h.Turns) || !q.Since.IsZero()) {
		fmt.Fprintf(q.Notes, "mnemo: %s sends only its last %d turns; update it to read further back\n", orDefault(h.Server, "this hearth"), len(h.Turns))
	}
	for _, t := range turns {
		if err := print(t); err != nil {
			return err
		}
	}
	return nil
}

// readHistory asks hearth for the selection page by page, printing each.
func readHistory(ctx context.Context, conn Conn, q HistoryOptions, print func(ipc.Turn) error) error {
	query := &ipc.HistoryQuery{Since: q.Since, Ref: newRef(), ConversationID: q.Conversation}
	if !q.All {
		query.Limit = q.Limit
	}
	for {
		if err := conn.Send(query); err != nil {
			return lost(err)
		}
		page, err := awaitPage(ctx, conn, query.Ref)
		if err != nil {
			return err
		}
		for _, t := range page.Turns {
			if err := print(t); err != nil {
				return err
			}
		}
		if !page.More || len(page.Turns) == 0 {
			return nil
		}
		query.After = page.Turns[len(page.Turns)-1].ID
		if query.Limit > 0 {
			if query.Limit -= len(page.Turns); query.Limit <= 0 {
				return nil
			}
		}
	}
}

// awaitPage waits for the history page answering ref, passing over the
// conversation's events.
func awaitPage(ctx context.Context, conn Conn, ref string) (*ipc.HistoryPage, error) {
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return nil, lost(err)
		}
		switch m := m.(type) {
		case *ipc.HistoryPage:
			if m.Ref == ref {
				return m, nil
			}
		case *ipc.Error:
			if m.Ref == ref || m.Ref == "" {
				return nil, m
			}
		}
	}
}

// printJSON writes t as one line of JSON, as the wire carries it.
func printJSON(w io.Writer, t ipc.Turn) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(t)
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

// ChatFailedError says how many of the messages Chat sent failed: hearth
// refused them or could not answer them.
type ChatFailedError struct{ Failed, Sent int }

func (e *ChatFailedError) Error() string {
	return fmt.Sprintf("%d of %s failed", e.Failed, plural(e.Sent, "message"))
}

// Chat reads lines from in and sends each as a message, printing the
// conversation (everyone's turns and the streamed replies) to w. It
// reconnects when hearth restarts. It returns at the end of in, with a
// *ChatFailedError when any message failed. With echo (in is not a
// terminal, so what was sent is not on screen) each message of ours is
// printed as "> text" before its reply.
func Chat(ctx context.Context, o Options, in io.Reader, w io.Writer, echo bool) error {
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

	v := &chatView{w: w, echo: echo, seen: make(map[string]bool), mine: make(map[string]string)}
	var outbox []*ipc.Message
	for {
		select {
		case err := <-runErr:
			if err == nil {
				return v.result()
			}
			return &UnreachableError{err}
		case e := <-events:
			if e.State != nil && e.State.State == ipc.StateReconnecting {
				// What was sent on the lost connection will not be
				// answered: hearth stores a queued message unanswered
				// when it stops. What waits in the outbox goes out
				// again once connected.
				waiting := make(map[string]bool, len(outbox))
				for _, m := range outbox {
					waiting[m.Ref] = true
				}
				v.abandon(waiting)
			}
			v.show(e)
			if e.State != nil && e.State.State == ipc.StateConnected {
				for len(outbox) > 0 && client.Send(outbox[0]) == nil {
					outbox = outbox[1:]
				}
			}
			if lines == nil && len(v.mine) == 0 {
				return v.result()
			}
		case line, ok := <-lines:
			if !ok {
				// End of input: finish the replies still owed, then leave.
				if len(v.mine) == 0 {
					return v.result()
				}
				lines = nil
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			ref := newRef()
			v.mine[ref] = line
			v.sent++
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
	echo      bool
	seen      map[string]bool
	mine      map[string]string // our messages not answered yet, by ref
	echoed    map[string]bool   // refs whose message was echoed
	answering string            // the ref whose reply is streaming
	streaming bool
	sent      int
	failed    int
}

// result is what Chat returns once it is done.
func (v *chatView) result() error {
	if v.failed > 0 {
		return &ChatFailedError{Failed: v.failed, Sent: v.sent}
	}
	return nil
}

// echoMine prints our message ref as sent, once.
func (v *chatView) echoMine(ref, text string) {
	if !v.echo || v.echoed[ref] {
		return
	}
	if v.echoed == nil {
		v.echoed = make(map[string]bool)
	}
	v.echoed[ref] = true
	fmt.Fprintf(v.w, "> %s\n", strings.ReplaceAll(text, "\n", "\n> "))
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
		if _, ok := v.mine[m.Ref]; ok && m.Ref != "" {
			v.answering = m.Ref
			v.echoMine(m.Ref, m.Turn.Content)
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
		if m.Turn.Incomplete && v.answering != "" {
			// Cancelled, or cut off by hearth stopping: not answered.
			v.failed++
			fmt.Fprintln(v.w, "! the reply was cut off")
		}
		delete(v.mine, v.answering)
		v.answering = ""
	case *ipc.Error:
		v.endStream()
		if text, ok := v.mine[m.Ref]; ok && m.Ref != "" && m.Code != ipc.CodeToolError {
			v.echoMine(m.Ref, text) // refused before it was stored
			v.failed++
			delete(v.mine, m.Ref)
			if v.answering == m.Ref {
				v.answering = ""
			}
		}
		fmt.Fprintf(v.w, "! %s\n", m.Message)
	}
}

// abandon counts as failed every message of ours still owed a reply,
// but those in keep, and says so.
func (v *chatView) abandon(keep map[string]bool) {
	for ref, text := range v.mine {
		if keep[ref] {
			continue
		}
		v.endStream()
		v.echoMine(ref, text)
		fmt.Fprintf(v.w, "! hearth went away before answering %q\n", cut(text, 60))
		v.failed++
		delete(v.mine, ref)
	}
	v.answering = ""
}

// cut is s shortened to about n runes, with an ellipsis when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
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
		return lost(err)
	}
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return lost(err)
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
		switch {
		case ix.Rebuilding:
			state = "rebuilding from the journal and the notes (search uses keywords meanwhile)"
		case ix.Ready:
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
		if ix.Note != "" {
			fmt.Fprintf(w, "recall: %s\n", ix.Note)
		}
	}
	if v := m.Vault; v != nil && v.Uncommitted > 0 {
		fmt.Fprintf(w, "vault: %s saved but not committed to git yet (since %s): %s; hearth retries\n",
			plural(v.Uncommitted, "change"), v.Since.Local().Format(time.DateTime), orDefault(v.Failing, "git fails"))
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
