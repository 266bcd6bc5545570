// Package hearth is the mnemo daemon: it owns the one persistent
// conversation, its journal and the model, and serves protocol v1 (package
// ipc) to every connected client over TCP.
package hearth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

// Model streams one reply. *llm.OpenAI implements it.
type Model interface {
	Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)
	Name() string
	Model() string
}

// Journal is the durable conversation log. *journal.Journal implements it.
type Journal interface {
	Append(ctx context.Context, rec journal.Record) (journal.Record, error)
	Tail(n int) ([]journal.Record, error)
}

// Config configures a Hearth. Zero values take the documented defaults.
type Config struct {
	Journal Journal // required
	Token   string  // required: the token clients must present
	// Model answers messages; nil means no provider is configured, and
	// NoModel says why (shown to clients, so it must be safe to display).
	Model   Model
	NoModel error
	// Resolve, when set, picks the model for each turn (the owner's
	// preference file is read every time), overriding Model.
	Resolve func() (Model, error)
	// Tools are offered to the model; nil offers none.
	Tools agent.Tools
	// Memories returns injected context of older turns and tool results
	// relevant to the newest message, each part within its allowance and
	// leaving out the ids already in the context window; nil injects none.
	Memories func(ctx context.Context, req MemoryRequest) string
	// Budget is the context budget of every turn; the zero value takes
	// DefaultContextBudget. ResolveBudget, when set, overrides it for each
	// turn (the owner's preference file is read every time).
	Budget        ContextBudget
	ResolveBudget func() ContextBudget
	// OnAppend is told the id of every record hearth appends (the indexer
	// listens); it must not block.
	OnAppend func(id string)
	// IndexHealth reports the recall indexer's progress; nil when recall
	// is off.
	IndexHealth func() *ipc.IndexHealth
	// Search answers clients' search requests, applying the request's
	// filters (validated, K within bounds); nil means unavailable.
	Search func(ctx context.Context, req tools.SearchRequest) ([]tools.Hit, error)
	// Context returns the system messages injected at the start of every
	// session (AGENT.md, the continuity anchor). It is called before the
	// first turn of each hearth session; nil injects nothing.
	Context func() ([]llm.Message, error)

	HistoryTurns     int           // turns sent to a client on connect; default 50
	ContextTurns     int           // most turns sent to the model, within the budget; default 100
	MaxClients       int           // concurrent connections; default 64
	ClientQueue      int           // frames queued per client before it is dropped; default 1024
	ClientBudget     int           // bytes queued per client before it is dropped; default 4 MiB
	DropGrace        time.Duration // how long a dropped client may take to read why; default 5s
	TurnQueue        int           // messages waiting for the agent; default 256
	MaxReplyBytes    int           // a longer reply is cut short and stored incomplete; default 1 MiB
	MaxIterations    int           // safety bound on model calls per turn; 0 = none
	ToolTimeout      time.Duration // per tool call unless the tool sets one; default 60s
	ConfirmTimeout   time.Duration // how long a confirm tool waits for the owner; default 2m
	HandshakeTimeout time.Duration // default 10s
	ShutdownGrace    time.Duration // how long a turn in flight may finish on shutdown; default 10s
	Version          string        // reported in history
	Log              *slog.Logger
}

func (c *Config) setDefaults() {
	if c.HistoryTurns <= 0 {
		c.HistoryTurns = 50
	}
	if c.ContextTurns <= 0 {
		c.ContextTurns = 100
	}
	if c.MaxClients <= 0 {
		c.MaxClients = 64
	}
	if c.ClientQueue <= 0 {
		c.ClientQueue = 1024
	}
	if c.ClientBudget <= 0 {
		c.ClientBudget = 4 << 20
	}
	if c.DropGrace <= 0 {
		c.DropGrace = 5 * time.Second
	}
	if c.Budget == (ContextBudget{}) {
		c.Budget = DefaultContextBudget()
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = 2 * time.Minute
	}
	if c.MaxReplyBytes <= 0 {
		c.MaxReplyBytes = 1 << 20
	}
	if c.TurnQueue <= 0 {
		c.TurnQueue = 256
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// conversationID names the one conversation hearth keeps.
const conversationID = "main"

// Hearth owns the conversation and its clients.
type Hearth struct {
	cfg    Config
	log    *slog.Logger
	turns  chan turnReq
	nconns atomic.Int64
	nextID atomic.Uint64

	mu      sync.Mutex
	clients map[*client]struct{}
	recent  []journal.Record // the last keep turns, oldest first
	keep    int
	state   string
	pending strings.Builder // the reply streaming now
	closing bool
	// cancelTurn cancels the turn in flight; nil when idle.
	cancelTurn context.CancelCauseFunc
	// confirms holds the answer channels of pending confirmations.
	confirms map[string]chan bool
	// current is the model of the latest turn, reported in history.
	current Model
}

// turnReq is a message or transcript waiting its turn.
type turnReq struct {
	from *client
	rec  journal.Record
	ref  string
}

// New returns a Hearth over cfg, with the recent turns read from the journal.
func New(cfg Config) (*Hearth, error) {
	cfg.setDefaults()
	if cfg.Journal == nil {
		return nil, errors.New("hearth: no journal")
	}
	if cfg.Token == "" {
		return nil, errors.New("hearth: no auth token")
	}
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("hearth: %w", err)
	}
	keep := max(cfg.HistoryTurns, cfg.ContextTurns)
	recent, err := cfg.Journal.Tail(keep)
	if err != nil {
		return nil, fmt.Errorf("hearth: read journal: %w", err)
	}
	h := &Hearth{
		cfg:      cfg,
		log:      cfg.Log,
		turns:    make(chan turnReq, cfg.TurnQueue),
		clients:  make(map[*client]struct{}),
		recent:   recent,
		keep:     keep,
		confirms: make(map[string]chan bool),
		state:    ipc.StateIdle,
	}
	h.current, _ = h.model()
	return h, nil
}

// Run serves clients on ln until ctx ends, then shuts down in order: stop
// accepting, let the turn in flight finish within ShutdownGrace (else
// cancel it), store what is queued, say goodbye to clients. Run closes ln.
func (h *Hearth) Run(ctx context.Context, ln net.Listener) error {
	convDone := make(chan struct{})
	turnCtx, cancelTurns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurns()
	go func() {
		defer close(convDone)
		h.converse(ctx, turnCtx)
	}()

	var wg sync.WaitGroup
	acceptErr := make(chan error, 1)
	go func() {
		acceptErr <- h.accept(ln, &wg)
	}()

	var err error
	select {
	case <-ctx.Done():
	case err = <-acceptErr:
		err = fmt.Errorf("hearth: accept: %w", err)
	}
	ln.Close()
	h.log.Info("shutting down")

	grace := time.AfterFunc(h.cfg.ShutdownGrace, cancelTurns)
	defer grace.Stop()
	if err != nil {
		cancelTurns()
	}
	<-convDone

	h.mu.Lock()
	h.closing = true
	for c := range h.clients {
		c.kick(&ipc.Error{Code: ipc.CodeShuttingDown, Message: "hearth is shutting down"})
	}
	h.mu.Unlock()
	wg.Wait()
	return err
}

func (h *Hearth) accept(ln net.Listener, wg *sync.WaitGroup) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.serve(nc)
		}()
	}
}

// converse processes turns one at a time, in arrival order. When ctx ends
// it finishes the turn in flight (turnCtx bounds it) and stores, without
// answering, whatever is still queued, so no acknowledged-to-be message is
// dropped on the floor.
func (h *Hearth) converse(ctx, turnCtx context.Context) {
	var sess *session
	for {
		select {
		case <-ctx.Done():
			h.drainQueue(turnCtx)
			return
		case req := <-h.turns:
			if sess == nil && req.rec.Role == ipc.RoleUser && req.rec.Mode == ipc.ModeText {
				sess = h.startSession(turnCtx)
			}
			if sess == nil {
				sess = &session{} // history before the first question
				h.handleTurn(turnCtx, req, sess)
				sess = nil
				continue
			}
			h.handleTurn(turnCtx, req, sess)
		}
	}
}

// session is what a hearth session injects: the system messages made as
// it starts (AGENT.md, the continuity anchor, memories relevant to where
// the conversation left off) and the records those memories showed. Only
// the converse goroutine uses it.
type session struct {
	system   []llm.Message
	injected map[string]bool
	opened   bool // system holds an opening memory block, which takes half the memory allowances
}

// sessionTurns is how many of the last turns before a session starts make
// the query for its opening memories.
const sessionTurns = 4

// startSession makes the session context before its first turn: the
// continuity context, and, when recall is on, the older memories relevant
// to the last turns before this session (seed 004: "what's relevant to
// now", injected once per session, never journaled).
func (h *Hearth) startSession(ctx context.Context) *session {
	sess := &session{system: h.sessionContext(), injected: map[string]bool{}}
	if h.cfg.Memories == nil {
		return sess
	}
	allow := h.budget().Allowance()
	h.mu.Lock()
	window := contextWindow(h.recent, h.cfg.ContextTurns, allow.Recent)
	var query []string
	for i := len(h.recent) - 1; i >= 0 && len(query) < sessionTurns; i-- {
		if r := h.recent[i]; (r.Role == ipc.RoleUser || r.Role == ipc.RoleAgent) && strings.TrimSpace(r.Text) != "" {
			query = append(query, r.Text)
		}
	}
	h.mu.Unlock()
	if len(query) == 0 {
		return sess // a first conversation: nothing to recall yet
	}
	slices.Reverse(query)
	req := MemoryRequest{
		Query: strings.Join(query, "\n"), Exclude: make(map[string]bool, len(window)),
		Turns: allow.Memories / 2, Tools: allow.Tools / 2, Session: true, Injected: sess.injected,
	}
	for _, r := range window {
		req.Exclude[r.ID] = true
	}
	block := h.cfg.Memories(ctx, req)
	if block == "" {
		return sess
	}
	sess.opened = true
	if len(sess.system) > 0 && sess.system[0].Role == llm.RoleSystem {
		sess.system[0].Content += "\n\n" + block
	} else {
		sess.system = append([]llm.Message{{Role: llm.RoleSystem, Content: block}}, sess.system...)
	}
	return sess
}

func (h *Hearth) drainQueue(ctx context.Context) {
	for {
		select {
		case req := <-h.turns:
			h.store(ctx, req)
		default:
			return
		}
	}
}

func (h *Hearth) sessionContext() []llm.Message {
	if h.cfg.Context == nil {
		return nil
	}
	msgs, err := h.cfg.Context()
	if err != nil {
		h.log.Warn("session context unavailable; continuing without it", "err", err)
	}
	return msgs
}

// store appends req to the journal and tells every client. It reports
// whether the turn was stored.
func (h *Hearth) store(ctx context.Context, req turnReq) (journal.Record, bool) {
	rec, err := h.cfg.Journal.Append(ctx, req.rec)
	if err != nil {
		h.log.Error("journal append failed", "err", err)
		h.broadcast(&ipc.Error{Code: ipc.CodeInternal, Message: "hearth could not store the message; it was not sent", Ref: req.ref})
		return rec, false
	}
	h.appended(rec)
	h.mu.Lock()
	h.rememberLocked(rec)
	h.broadcastLocked(&ipc.TurnStored{Turn: wireTurn(rec), Ref: req.ref})
	h.mu.Unlock()
	return rec, true
}

func (h *Hearth) setState(s, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = s
	h.broadcastLocked(&ipc.Status{State: s, Detail: detail})
}

// appended tells the listener (the indexer) about a stored record.
func (h *Hearth) appended(rec journal.Record) {
	if h.cfg.OnAppend != nil {
		h.cfg.OnAppend(rec.ID)
	}
}

// rememberLocked keeps rec among the recent turns.
func (h *Hearth) rememberLocked(rec journal.Record) {
	h.recent = append(h.recent, rec)
	if n := len(h.recent); n > 2*h.keep {
		h.recent = append(h.recent[:0], h.recent[n-h.keep:]...)
	}
}

func (h *Hearth) broadcast(m ipc.Msg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broadcastLocked(m)
}

func (h *Hearth) broadcastLocked(m ipc.Msg) {
	frame, err := ipc.Encode(m)
	if err != nil {
		h.log.Error("encode event", "type", m.Type(), "err", err)
		return
	}
	h.sendFrameLocked(frame)
}

// sendFrameLocked queues one encoded frame to every client. A client whose
// queue is full is dropped; it reconnects and resyncs from history.
func (h *Hearth) sendFrameLocked(frame []byte) {
	for c := range h.clients {
		if !c.send(frame) {
			h.dropLocked(c, errSlowClient)
		}
	}
}

var errSlowClient = &ipc.Error{Code: ipc.CodeSlowClient, Message: "this client fell behind and was disconnected; reconnect to resync"}

func (h *Hearth) dropLocked(c *client, why *ipc.Error) {
	delete(h.clients, c)
	h.log.Warn("dropping client", "client", c.id, "reason", why.Code)
	c.kick(why)
}

// snapshotLocked is the history a new client starts from.
func (h *Hearth) snapshotLocked() *ipc.History {
	turns := h.recent[max(0, len(h.recent)-h.cfg.HistoryTurns):]
	hist := &ipc.History{
		Turns:          make([]ipc.Turn, len(turns)),
		Server:         "hearth/" + h.cfg.Version,
		Protocol:       ipc.ProtocolVersion,
		ConversationID: conversationID,
		State:          h.state,
		Pending:        h.pending.String(),
	}
	for i, r := range turns {
		hist.Turns[i] = wireTurn(r)
	}
	if h.current != nil {
		hist.Provider = h.current.Name()
		hist.Model = h.current.Model()
	}
	return hist
}

func wireTurn(r journal.Record) ipc.Turn {
	t := ipc.Turn{ID: r.ID, Role: r.Role, TS: r.TS, Mode: r.Mode, Incomplete: r.Incomplete}
	t.Content, t.Truncated = cut(r.Text, ipc.MaxTurnContent)
	for _, c := range r.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, ipc.ToolCall{ID: c.ID, Name: c.Name, Arguments: rawArgs(c.Arguments), Reason: c.Reason})
	}
	if tr := r.Tool; tr != nil {
		res := &ipc.ToolResult{ID: tr.CallID, Name: tr.Name, Arguments: rawArgs(tr.Arguments), Reason: tr.Reason, DurationMS: tr.DurationMS, Confirmed: tr.Confirmed}
		if tr.Error != "" {
			res.Error, _ = cut(tr.Error, maxToolSummary)
		} else {
			res.Result, _ = cut(r.Text, maxToolSummary)
		}
		t.Tool = res
		t.Content, t.Truncated = "", false // the outcome is in Tool
	}
	return t
}

// maxToolSummary bounds a tool's result or error as clients see it; the
// model and the journal get all of it.
const maxToolSummary = 2 << 10

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// historyFrameLocked encodes the snapshot for a new client, dropping the
// oldest turns until it fits in one line.
func (h *Hearth) historyFrameLocked() ([]byte, error) {
	hist := h.snapshotLocked()
	for {
		frame, err := ipc.Encode(hist)
		if !errors.Is(err, ipc.ErrLineTooLong) {
			return frame, err
		}
		switch {
		case len(hist.Turns) > 0:
			hist.Turns = hist.Turns[len(hist.Turns)/4+1:]
		case hist.Pending != "":
			hist.Pending = "" // the rest of the reply still streams
		default:
			return nil, err
		}
	}
}
