// Package hearth is mnemo's core: the one owner of the conversation, its
// journal and the agent turn. It knows no transport: commands are methods
// (Send, AddTranscript, Cancel, Confirm, Search, Health), and what happens
// is published as typed events to subscribers (Subscribe, Watch: a
// snapshot, then deltas). Doors — the NDJSON server (hearth/ndjson), the
// in-process client (hearth/local) — are thin adapters over both.
package hearth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// Model streams one reply. The hearth/llm adapters implement it.
type Model interface {
	Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)
	Name() string
	Model() string
}

// Journal is the durable conversation log. *journal.Journal implements it.
type Journal interface {
	Append(ctx context.Context, rec journal.Record) (journal.Record, error)
	Tail(n int) ([]journal.Record, error)
	// TailOf is Tail of one conversation (conv "": main), reading from
	// the day of its first record on (see journal.TailOf).
	TailOf(conv string, n int, first string) ([]journal.Record, error)
	// ScanAfter calls fn for every record after id ("": all), oldest
	// first, until fn returns an error (see History).
	ScanAfter(ctx context.Context, id string, fn func(journal.Record) error) error
	// Find returns the live records among ids (see Forget).
	Find(ctx context.Context, ids []string) (map[string]journal.Record, error)
	// Purge removes the content of every forgotten record from disk.
	Purge(ctx context.Context) (journal.PurgeReport, error)
}

// Models picks the model of each turn (the owner's preferences may change
// it between turns). Its error is safe to show: it says what to configure.
type Models interface {
	Resolve() (Model, error)
}

// Budgets gives the context budget of each turn.
type Budgets interface {
	Budget() ContextBudget
}

// Memory is what the core needs from durable memory beyond the journal.
type Memory interface {
	// Relevant is the injected block of older turns and tool results
	// relevant to req.Query, within its allowances; "" when none.
	Relevant(ctx context.Context, req memory.ContextRequest) string
	// Search answers a memory search, its filters applied.
	Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error)
	// Notify is told the id of every committed record; it must not block.
	Notify(id string)
	// Health reports the index's progress; nil while it first opens.
	Health() *memory.IndexHealth
	// Forget drops the records ids from every index, so that no search
	// finds them once it returns; with purge, also from what the index
	// keeps on disk.
	Forget(ctx context.Context, ids []string, purge bool) error
}

// Anchor gives the system messages that open every session: the agent's
// instructions and the continuity anchor.
type Anchor interface {
	SessionContext() ([]llm.Message, error)
}

// Config configures a Hearth. Zero values take the documented defaults.
type Config struct {
	Journal Journal // required
	// Models answers messages; nil means no provider is configured.
	Models Models
	// Budgets, when set, gives each turn's context budget; else Budget
	// (zero: DefaultContextBudget) applies.
	Budgets Budgets
	Budget  ContextBudget
	// Memory injects relevant memories and answers searches; nil: none.
	Memory Memory
	// Entities is the entity graph: searches are expanded with it and
	// the entities a turn names are injected; nil: none.
	Entities Entities
	// Tools are offered to the model; nil offers none.
	Tools agent.Tools
	// Anchor opens every session; nil injects nothing.
	Anchor Anchor
	// Voice mints realtime voice credentials; nil: no voice provider.
	Voice VoiceMinter
	// Vault is the readable memory agent and owner write (Propose); nil:
	// none.
	Vault Vault
	// VaultRetry paces retries of failed vault commits; zero:
	// DefaultVaultRetry.
	VaultRetry backoff.Policy
	// ToolCatalog keeps knowledge/system/tool_catalog.md in the Vault
	// written from Tools while Run runs (see RefreshToolCatalog).
	ToolCatalog bool
	// Curator, when set (and with a Vault), runs the curator pass after
	// each turn (see CuratorConfig); nil: off.
	Curator *CuratorConfig
	// Jobs, when set (and with a Vault), runs the vault's jobs (see
	// JobsConfig); nil: off.
	Jobs *JobsConfig

	HistoryTurns   int           // records in a snapshot; default 50
	ContextTurns   int           // most records sent to the model, within the budget; default 100
	TurnQueue      int           // messages waiting for the agent; default 256
	MaxReplyBytes  int           // a longer reply is cut short and stored incomplete; default 1 MiB
	MaxIterations  int           // safety bound on model calls per turn; 0 = none
	ToolTimeout    time.Duration // per tool call unless the tool sets one; default 60s
	ConfirmTimeout time.Duration // how long a confirm tool waits for the owner; default 2m
	ShutdownGrace  time.Duration // how long a turn in flight may finish on shutdown; default 10s
	Version        string        // reported in snapshots
	Log            *slog.Logger
	// ConversationsFile is where the conversations' registry is cached
	// (see DESIGN.md "Conversations"); "": it is rebuilt from the whole
	// journal at every start.
	ConversationsFile string
}

func (c *Config) setDefaults() {
	if c.HistoryTurns <= 0 {
		c.HistoryTurns = 50
	}
	if c.ContextTurns <= 0 {
		c.ContextTurns = 100
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

// MainConversation names the conversation every client shares: the one a
// client is on unless it names another.
const MainConversation = "main"

// Hearth is the state owner: the conversations, their subscribers and the
// one commit path to the journal.
type Hearth struct {
	cfg     Config
	log     *slog.Logger
	nextSub atomic.Uint64
	// conv is main, the conversation voice, the curator's flush and
	// Health follow; convs holds it and every other conversation loaded
	// (guarded by mu), reg every conversation known (see conversations.go).
	conv  *conversation
	convs map[string]*conversation
	reg   *registry
	// run is set when Run starts (guarded by mu): conversations loaded
	// from then on start their turn worker at once.
	run *runState
	// asked counts the requests of every conversation queued or in
	// flight; settled is closed when it drops to zero (nil while it is
	// zero). See Settled. Guarded by mu.
	asked   int
	settled chan struct{}
	// vaultMu serializes the vault's writes: the owner-edit scan, the
	// policy's decision, the file write, the git commit and the ledger
	// (Propose, DecideProposal, ProposeBatch, WriteVault, Purge, the tool
	// catalog, a forget's cascade, the keeper's pass). Lock order: vaultMu
	// before commitMu. A vault write takes commitMu only for the journal
	// record and event of its decision (decidedLocked), never across git,
	// so a turn never waits behind a vault commit.
	vaultMu sync.Mutex
	// commitMu orders journal commits, so that subscribers see records in
	// the order the journal holds them: it is held for the append and the
	// events published with it, nothing slower.
	commitMu sync.Mutex
	keeper   vaultKeeper // see vault_keeper.go
	// catalog keeps the tool catalog; nil when Config.ToolCatalog is off.
	catalog *catalog
	// curator is the curator pass's state; nil when it is off.
	curator *curatorState
	// jobs is the job runner's state; nil when it is off.
	jobs *jobsState
	// started is when New made the hearth: a session whose last record
	// is older ended with a stop.
	started time.Time

	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	closing bool
	dropped int // subscribers cut off for falling behind
	// forgets counts the forgets committed; forgot keeps the last
	// maxForgot of them, for a flush that read its records before one
	// (flushRaced).
	forgets uint64
	forgot  []forgotten
}

// conversation is one conversation's state: its recent records, the reply
// streaming now, its queue of turns and its confirmations. The fields
// after the queue are guarded by Hearth.mu.
type conversation struct {
	id    string
	keep  int
	turns chan turnReq

	recent  []journal.Record // the last keep records, oldest first
	state   string
	detail  string          // of state: the tool running, or the model call's retry
	pending strings.Builder // the reply streaming now
	closed  bool            // the queue was drained: nothing more is accepted
	// cancelTurn cancels the turn in flight; nil when idle.
	cancelTurn context.CancelCauseFunc
	// confirms holds the answer channels of pending confirmations.
	confirms map[string]chan bool
	// current is the model of the latest turn, reported in snapshots.
	current Model
	// started: its turn worker runs (see startWorkerLocked); unloaded:
	// it went idle and left Hearth.convs (see unloadIfIdle).
	started, unloaded bool
	// voice is the mode-switch state cross-modal injection keeps.
	voice modeState
	// voiceCalls are the call ids of the voice tool calls running.
	voiceCalls map[string]bool
}

// turnReq is a message or transcript waiting its turn.
type turnReq struct {
	rec journal.Record
	ref string
	// id is the sender's identity when the door gave one (SendAs): the
	// turn's tools see it in their ctx (auth.From).
	id *auth.Identity
	// model, when set, answers this turn only (SendOptions.Model).
	model Model
	// mark, when set, is no turn: it primes the voice→text injection
	// once what was queued before it is stored (see StopVoice).
	mark *modeMark
	// poke is no turn either: its last follower left, so the worker
	// unloads the conversation if it is idle (see unloadIfIdle).
	poke bool
}

// New returns a Hearth over cfg, with the recent records read from the
// journal. Nothing runs until Run.
func New(cfg Config) (*Hearth, error) {
	cfg.setDefaults()
	if cfg.Journal == nil {
		return nil, errors.New("hearth: no journal")
	}
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("hearth: %w", err)
	}
	h := &Hearth{
		cfg:    cfg,
		log:    cfg.Log,
		subs:   make(map[*Subscription]struct{}),
		keeper: vaultKeeper{wake: make(chan struct{}, 1)},
		convs:  make(map[string]*conversation),
	}
	if err := h.loadRegistry(context.Background()); err != nil {
		return nil, fmt.Errorf("hearth: read journal: %w", err)
	}
	// main's tail is not bounded by its first record: a journal older
	// than conversations, or edited by hand, may hold records whose ids
	// do not match their shard's day (see firstBound).
	recent, err := cfg.Journal.TailOf("", h.keep(), "")
	if err != nil {
		return nil, fmt.Errorf("hearth: read journal: %w", err)
	}
	h.conv = h.newConversation(MainConversation, recent)
	h.convs[MainConversation] = h.conv
	h.countSaved()
	if cfg.Models != nil {
		h.conv.current, _ = cfg.Models.Resolve()
	}
	if cfg.Curator != nil && cfg.Vault != nil {
		if cfg.Curator.StateDir == "" {
			return nil, errors.New("hearth: the curator needs a state dir")
		}
		h.curator = newCuratorState(cfg.Curator)
	}
	h.started = time.Now()
	if cfg.Jobs != nil {
		if cfg.Jobs.StateDir == "" {
			return nil, errors.New("hearth: the job runner needs a state dir")
		}
		h.jobs = newJobsState(cfg.Jobs)
	}
	if cfg.ToolCatalog && cfg.Vault != nil && cfg.Tools != nil {
		h.catalog = &catalog{raw: cfg.Tools, wake: make(chan struct{}, 1)}
		h.cfg.Tools = observedTools{Tools: cfg.Tools, cat: h.catalog}
	}
	return h, nil
}

// Run answers the conversation until ctx ends, then shuts down in order:
// the turn in flight may finish within ShutdownGrace (else it is
// cancelled and what streamed is stored), what is still queued is stored
// unanswered, and every subscription ends with ErrShuttingDown after what
// was queued for it. Run returns when all that is done.
func (h *Hearth) Run(ctx context.Context) error {
	turnCtx, cancelTurns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurns()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(h.cfg.ShutdownGrace, cancelTurns)
		context.AfterFunc(turnCtx, func() { t.Stop() })
	})
	defer stop()
	keeperDone := h.startVaultKeeper(ctx)
	defer func() { <-keeperDone }()

	catalogDone := h.startCatalog(ctx)
	curatorDone := h.startCurator(ctx)
	jobsDone := h.startJobs(ctx)
	registryDone := h.startRegistry()
	h.mu.Lock()
	h.run = &runState{ctx: ctx, turnCtx: turnCtx}
	for _, c := range h.convs {
		h.startWorkerLocked(c)
	}
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	h.run.stopped = true // no worker starts from now on
	h.mu.Unlock()
	h.run.workers.Wait()
	catalogDone()
	curatorDone()
	jobsDone()
	registryDone()
	h.log.Info("shutting down")

	h.mu.Lock()
	h.closing = true
	for s := range h.subs {
		h.cutLocked(s, ErrShuttingDown)
	}
	h.mu.Unlock()
	return nil
}

// converse processes c's turns one at a time, in arrival order. When ctx
// ends it finishes the turn in flight (turnCtx bounds it) and stores,
// without answering, whatever is still queued.
func (h *Hearth) converse(ctx, turnCtx context.Context, c *conversation) {
	var sess *session
	for {
		select {
		case <-ctx.Done():
			h.drain(turnCtx, c)
			return
		case req := <-c.turns:
			if req.poke {
				if h.unloadIfIdle(c) {
					return
				}
				continue
			}
			if req.mark != nil {
				h.prime(c, req.mark)
				h.answered(c)
				continue
			}
			if sess == nil && req.rec.Role == memory.RoleUser && req.rec.Mode == memory.ModeText {
				sess = h.startSession(turnCtx, c)
			}
			if sess == nil {
				h.handleTurn(turnCtx, c, req, &session{}) // history before the first question
			} else {
				h.handleTurn(turnCtx, c, req, sess)
			}
			gone := h.unloadIfIdle(c)
			h.answered(c)
			if gone {
				return
			}
		}
	}
}

// drain closes c's queue and stores what it holds. A request that comes
// after is refused (see enqueue), never lost.
func (h *Hearth) drain(ctx context.Context, c *conversation) {
	h.mu.Lock()
	c.closed = true
	h.mu.Unlock()
	for {
		select {
		case req := <-c.turns:
			if req.poke {
				continue
			}
			if req.mark == nil {
				h.store(ctx, c, req)
			}
			h.answered(c)
		default:
			return
		}
	}
}

// runState is what Run gives the turn workers it starts.
type runState struct {
	ctx, turnCtx context.Context
	workers      sync.WaitGroup
	stopped      bool // ctx ended: no worker starts (guarded by Hearth.mu)
}

// commit is the one journal writer: it appends rec (fsync'd before it
// returns), tells memory once, keeps the record among c's recent ones and
// publishes exactly one event for it, made by ev, followed by then (events
// that go with it, such as a state change), all under the lock, in
// journal order.
func (h *Hearth) commit(ctx context.Context, c *conversation, rec journal.Record, ev func(journal.Record) Event, then ...Event) (journal.Record, error) {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	rec.Conv = convField(c.id)
	stored, err := h.cfg.Journal.Append(ctx, rec)
	if err != nil {
		h.log.Error("journal append failed", "err", err)
		return stored, err
	}
	if h.cfg.Memory != nil {
		h.cfg.Memory.Notify(stored.ID)
	}
	h.observeEntities(stored)
	h.mu.Lock()
	defer h.mu.Unlock()
	c.rememberLocked(stored)
	h.noteLocked(stored)
	h.registryDirtyLocked()
	h.publishToLocked(c.id, ev(stored))
	for _, e := range then {
		h.publishToLocked(c.id, e)
	}
	if stored.Role == memory.RoleAgent && len(stored.ToolCalls) == 0 {
		h.curateSoon() // a turn is complete, text or voice: never blocks
	}
	return stored, nil
}

// store commits a message or transcript; false when it was not stored
// (every subscriber is told, with the sender's ref).
func (h *Hearth) store(ctx context.Context, c *conversation, req turnReq) (journal.Record, bool) {
	rec, err := h.commit(ctx, c, req.rec, func(r journal.Record) Event { return &TurnStored{Record: r, Ref: req.ref} })
	if err != nil {
		h.publishTo(c.id, &Problem{Code: CodeInternal, Message: "hearth could not store the message; it was not sent", Ref: req.ref})
		return rec, false
	}
	return rec, true
}

// rememberLocked keeps rec among the recent records.
func (c *conversation) rememberLocked(rec journal.Record) {
	c.recent = append(c.recent, rec)
	if n := len(c.recent); n > 2*c.keep {
		c.recent = append(c.recent[:0], c.recent[n-c.keep:]...)
	}
}

func (h *Hearth) setState(c *conversation, s, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.state, c.detail = s, detail
	h.publishToLocked(c.id, &StateChanged{State: s, Detail: detail})
}

// snapshotLocked is conversation c as a new subscriber starts from.
func (h *Hearth) snapshotLocked(c *conversation) *Snapshot {
	turns := c.recent[max(0, len(c.recent)-h.cfg.HistoryTurns):]
	snap := &Snapshot{
		Conversation: c.id,
		Turns:        append([]journal.Record(nil), turns...),
		State:        c.state,
		Detail:       c.detail,
		Pending:      c.pending.String(),
		Version:      h.cfg.Version,
		Features:     h.features(),
	}
	if c.current != nil {
		snap.Provider, snap.Model = c.current.Name(), c.current.Model()
	}
	return snap
}

// features is what this core offers, listed in every snapshot so that
// clients decide from it instead of guessing (DESIGN.md documents each).
func (h *Hearth) features() []string {
	f := []string{"cancel", "confirm", "conversations", "forget", "health", "history_query"}
	if h.cfg.Memory != nil {
		f = append(f, "search", "search_filters")
	}
	f = append(f, "tools", "transcript")
	if h.cfg.Vault != nil {
		f = append(f, "vault")
	}
	if h.cfg.Voice != nil {
		f = append(f, "voice")
	}
	return f
}

// Announce publishes a notice to every subscriber of ClassNotices.
func (h *Hearth) Announce(n Notice) {
	h.publish(&n)
}
