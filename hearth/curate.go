package hearth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// CuratorConfig turns on the curator pass: after each turn commits, a
// worker off the reply path asks a model (structured output, the schema
// of hearth/curator) what of the turn belongs in the vault, and sends
// each proposal through Propose, where policy applies, queues or rejects
// it. Questions go to inbox/questions/. A durable cursor, the id of the
// last record curated, lets a down model or a restart catch up later.
type CuratorConfig struct {
	// StateDir holds the cursor file (curator.cursor); required.
	StateDir string
	// Model is the curator's model; nil: the turn's (Config.Models).
	Model Model
	// ModelName asks the provider for another model than its own ("":
	// the provider's configured one).
	ModelName string
	// Context is how many records before a turn the curator reads with
	// it, in the turn's window; default 12.
	Context int
	// Retry paces retries while the model fails; zero: from 5 s to 10 min.
	Retry backoff.Policy
	// Observe, when set, is told of each turn curated, after its cursor
	// is saved (tests and evals wait on it). It must not block long.
	Observe func(Curated)
	// FlushAt is how full (percent of the recent-turn share) the window
	// may get before the flush pass summarises what is about to leave it
	// (see flushPending); 0: DefaultFlushAt; negative: no flush pass, and
	// the window trims as without a curator.
	FlushAt int
	// FlushLowWater is how full (percent of the share) a flush leaves the
	// window's unflushed records: it flushes the oldest until the rest
	// fit; 0: DefaultFlushLowWater; at most FlushAt.
	FlushLowWater int
	// OnFlush, when set, is told of each flush after its cursor is saved.
	OnFlush func(Flushed)
}

// Curated is what the curator made of one turn.
type Curated struct {
	Turn      []string          // the ids of the turn's records
	Outcomes  []ProposalOutcome // what policy did with each proposal
	Rejected  []curator.Rejection
	Questions []string // the files of the questions asked
	None      bool     // the curator said nothing is to be kept
	// Entities and Relations are what it extracted, typed by the
	// archetype (they join the entity graph); EntityNotes is what policy
	// did with the notes that keep them (entities/<type>/<slug>.md).
	Entities    []curator.Entity
	Relations   []curator.Relation
	EntityNotes []ProposalOutcome
	// Invalid is why the reply as a whole was refused; "" when it was used.
	Invalid                   string
	InputTokens, OutputTokens int64
}

// CursorFile is the curator's cursor in CuratorConfig.StateDir.
const CursorFile = "curator.cursor"

// CuratorHealth is the curator's progress and cost.
type CuratorHealth struct {
	Cursor    string // the last record curated
	Uncurated int    // turns after the cursor, as of the last pass
	Turns     int    // turns curated since start
	Calls     int    // model calls
	// InputTokens and OutputTokens are what the calls cost.
	InputTokens, OutputTokens int64
	Applied, Queued, Rejected int // proposals, by what policy (or the decoder) decided
	Questions                 int
	LastError                 string // the last failure, "" after a success
	// FlushCursor is main's last record flushed (summarised before it
	// may leave the window; every conversation has its own, see
	// FlushCursorFileOf); Unflushed the records due for a flush in the
	// conversations loaded, as of the last pass; Flushes the flushes
	// since start, of every conversation.
	FlushCursor string
	Unflushed   int
	Flushes     int
	// Kept is how many unflushed records the latest context (of any
	// conversation) kept past the recent share; Cut how many it had to leave out unflushed,
	// past the whole budget (the context then says so).
	Kept, Cut int
}

// curatorState is the worker's: its wake-up, cursor and health.
type curatorState struct {
	cfg  CuratorConfig
	wake chan struct{} // capacity 1: a wake-up never blocks the reply path
	// pending is what the turn being curated made, told to Observe once
	// its cursor is saved. Only the worker uses it.
	pending []Curated

	mu     sync.Mutex
	health CuratorHealth
	// flush is each conversation's flush cursor, as saved (none: nothing
	// flushed yet); flushOff the conversations whose cursor was
	// unreadable at start (their flush is off); unflushed each loaded
	// conversation's records due for a flush as of the last pass.
	flush     map[string]flushMemo
	flushOff  map[string]bool
	unflushed map[string]int
	active    bool // the worker runs: the window waits for flushes
	// rewrite are the notes a forget hid, waiting for their rewrite
	// (rewrite.go); rewriteScanned: the vault was searched for those a
	// forget hid before a restart.
	rewrite        map[string]bool
	rewriteScanned bool
}

func newCuratorState(cfg *CuratorConfig) *curatorState {
	if cfg == nil {
		return nil
	}
	c := &curatorState{cfg: *cfg, wake: make(chan struct{}, 1), flush: map[string]flushMemo{}, flushOff: map[string]bool{}, unflushed: map[string]int{}}
	if c.cfg.Context <= 0 {
		c.cfg.Context = 12
	}
	if c.cfg.FlushAt == 0 {
		c.cfg.FlushAt = DefaultFlushAt
	}
	c.cfg.FlushAt = min(c.cfg.FlushAt, 100)
	if c.cfg.FlushLowWater <= 0 {
		c.cfg.FlushLowWater = DefaultFlushLowWater
	}
	c.cfg.FlushLowWater = min(c.cfg.FlushLowWater, max(c.cfg.FlushAt, 0))
	if c.cfg.Retry == (backoff.Policy{}) {
		c.cfg.Retry = backoff.Policy{Initial: 5 * time.Second, Max: 10 * time.Minute, JitterBelow: 0.2, JitterAbove: 0.2}
	}
	return c
}

// curateSoon tells the curator a turn committed. It is all the reply
// path pays: a send that never blocks.
func (h *Hearth) curateSoon() {
	if h.curator == nil {
		return
	}
	select {
	case h.curator.wake <- struct{}{}:
	default:
	}
}

// CuratorHealth reports the curator; nil when it is off.
func (h *Hearth) CuratorHealth() *CuratorHealth {
	c := h.curator
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.health
	return &r
}

// startCurator reads the cursor, then runs the curator until ctx ends;
// done waits for it. Run calls it before the conversation starts.
func (h *Hearth) startCurator(ctx context.Context) (done func()) {
	c := h.curator
	if c == nil || h.cfg.Vault == nil {
		return func() {}
	}
	// The cursor is read before the conversation runs: a new one starts
	// at the newest record, and a turn committed before it was read
	// would be skipped, or cut in half.
	cursor, err := h.loadCursor()
	if err != nil {
		h.log.Error("curator: no cursor; the curator is off", "err", err)
		return func() {}
	}
	flush, off, err := h.loadFlushes()
	if err != nil {
		h.log.Error("curator: no flush cursor; the curator is off", "err", err)
		return func() {}
	}
	c.mu.Lock()
	c.health.Cursor = cursor
	c.flush, c.flushOff, c.health.FlushCursor, c.active = flush, off, flush[MainConversation].Cursor, true
	c.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for attempt := 0; ; {
			err := h.curatePending(ctx)
			if err == nil {
				err = h.flushPending(ctx)
			}
			if err == nil {
				err = h.rewritePending(ctx)
			}
			if err != nil && ctx.Err() == nil {
				attempt++
				h.log.Warn("curator: pass failed; the turns wait", "err", err, "attempt", attempt)
				t := time.NewTimer(c.cfg.Retry.Delay(attempt))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				case <-c.wake:
					t.Stop()
				}
				continue
			}
			attempt = 0
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
		}
	}()
	return func() { <-finished }
}

// loadCursor reads the cursor; without one it starts at the journal's
// newest record (turning the curator on does not send the whole past to
// a model) and saves that.
func (h *Hearth) loadCursor() (string, error) {
	p := filepath.Join(h.curator.cfg.StateDir, CursorFile)
	b, err := os.ReadFile(p)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("curator cursor: %w", err)
	}
	last, err := h.cfg.Journal.Tail(1)
	if err != nil {
		return "", fmt.Errorf("curator cursor: %w", err)
	}
	cursor := ""
	if len(last) == 1 {
		cursor = last[0].ID
	}
	return cursor, h.saveCursor(cursor)
}

// saveCursor writes the cursor durably: temporary file, fsync, rename,
// directory fsync.
func (h *Hearth) saveCursor(id string) error {
	if err := writeFileDurable(h.curator.cfg.StateDir, CursorFile, []byte(id+"\n")); err != nil {
		return fmt.Errorf("curator cursor: %w", err)
	}
	h.curator.mu.Lock()
	h.curator.health.Cursor = id
	h.curator.mu.Unlock()
	return nil
}

func writeFileDurable(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// pendingTurns reads the records after cursor and groups them in turns:
// a user record and what follows it, up to an agent reply without tool
// calls. A turn still running (no reply yet) is not returned.
func (h *Hearth) pendingTurns(ctx context.Context, cursor string) ([][]journal.Record, error) {
	var turns [][]journal.Record
	var cur []journal.Record
	err := h.cfg.Journal.ScanAfter(ctx, cursor, func(r journal.Record) error {
		if !r.IsTurn() {
			return nil
		}
		if r.Role == memory.RoleUser && len(cur) > 0 {
			turns = append(turns, cur) // a turn left without a reply
			cur = nil
		}
		cur = append(cur, r)
		if r.Role == memory.RoleAgent && len(r.ToolCalls) == 0 {
			turns = append(turns, cur)
			cur = nil
		}
		return nil
	})
	return turns, err
}

// curatePending curates every complete turn after the cursor, oldest
// first, moving the cursor past each. It stops at the first model
// failure: those turns wait for the next pass.
func (h *Hearth) curatePending(ctx context.Context) error {
	c := h.curator
	c.mu.Lock()
	cursor := c.health.Cursor
	c.mu.Unlock()
	turns, err := h.pendingTurns(ctx, cursor)
	if err != nil {
		return err
	}
	for i, turn := range turns {
		c.mu.Lock()
		c.health.Uncurated = len(turns) - i
		c.mu.Unlock()
		c.pending = c.pending[:0]
		if err := h.curateTurn(ctx, turn); err != nil {
			c.mu.Lock()
			c.health.LastError = err.Error()
			c.mu.Unlock()
			return err
		}
		if err := h.saveCursor(turn[len(turn)-1].ID); err != nil {
			return err
		}
		c.mu.Lock()
		c.health.Turns++
		c.health.Uncurated = len(turns) - i - 1
		c.health.LastError = ""
		c.mu.Unlock()
		if c.cfg.Observe != nil {
			for _, d := range c.pending {
				c.cfg.Observe(d)
			}
		}
		c.pending = c.pending[:0]
	}
	return nil
}

// curatorContext is the window a turn was answered in: the records before
// it that are still among the recent ones, at most Context of them.
func (h *Hearth) curatorContext(turn []journal.Record) []journal.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var recent []journal.Record
	if c := h.convs[convOf(turn[0])]; c != nil {
		recent = c.recent
	}
	for i, r := range recent {
		if r.ID == turn[0].ID {
			return append([]journal.Record(nil), recent[max(0, i-h.curator.cfg.Context):i]...)
		}
	}
	return nil
}

// curatorPrompt is prompts/curator.system.md from the vault, or the
// default when it is absent or unreadable.
func (h *Hearth) curatorPrompt() string {
	b, err := h.cfg.Vault.Read(curator.PromptPath)
	if err != nil {
		h.log.Warn("curator: prompt unreadable; using the default", "path", curator.PromptPath, "err", err)
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return curator.DefaultPrompt
}

// curatorArchetype is the vault's archetype (config/archetype.yml), read
// at each pass so that an edit changes what the curator is told at once;
// an invalid file gives the graph's (the one hearth started with).
func (h *Hearth) curatorArchetype() (graph.Archetype, bool) {
	b, err := h.cfg.Vault.Read(graph.ArchetypeFile)
	if err == nil && b != nil {
		a, perr := graph.ParseArchetype(b)
		if perr == nil {
			return a, true
		}
		err = perr
	}
	if err != nil {
		h.log.Warn("curator: the archetype is not valid; using the one hearth started with", "file", graph.ArchetypeFile, "err", err)
	}
	if g := h.entityGraph(); g != nil {
		return g.Archetype(), true
	}
	return graph.Archetype{}, false
}

// curatedEntities adds what the curator extracted to the entity graph:
// each entity with its type fixed and its aliases, each relation between
// two of them with the records that state it. writeCuratedNotes keeps
// them in the vault, where a rebuilt graph finds them again.
func (h *Hearth) curatedEntities(res curator.Result) {
	g := h.entityGraph()
	if g == nil {
		return
	}
	for _, e := range res.Entities {
		g.AddEntity(graph.Entity{Name: e.Name, Type: e.Type, Aliases: e.Aliases, Evidence: e.Sources})
	}
	for _, r := range res.Relations {
		g.AddRelation(r.From, r.To, r.Type, r.Sources)
	}
}

// curateTurn runs the curator over one turn. Only a model failure is an
// error (the turn waits); a reply that is not usable is rejected, logged
// and counted, and the turn is done.
func (h *Hearth) curateTurn(ctx context.Context, turn []journal.Record) error {
	c := h.curator
	before := h.curatorContext(turn)
	shown := append(before, turn...)
	system, schema, extraction := h.curatorPrompt(), curator.Schema, curator.Extraction{}
	if a, ok := h.curatorArchetype(); ok {
		extraction = curator.ExtractionOf(a)
		system, schema = curator.SystemPrompt(system, a), curator.SchemaWith(extraction)
	}
	resp, usage, err := h.curatorAsk(ctx, system, curator.Message(convOf(turn[0]), shown, len(before)),
		&llm.OutputSchema{Name: curator.SchemaName, Schema: schema, Strict: true})
	if err != nil {
		return fmt.Errorf("curator model: %w", err)
	}
	done := Curated{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens}
	for _, r := range turn {
		done.Turn = append(done.Turn, r.ID)
	}
	res, err := curator.Decode([]byte(resp.Text), curator.Input{Thread: convOf(turn[0]), Records: shown, Read: h.cfg.Vault.Read, Extraction: extraction})
	if err != nil {
		h.log.Warn("curator: reply rejected", "turn", turn[0].ID, "why", err)
		done.Invalid = err.Error()
		c.mu.Lock()
		c.health.Rejected++
		c.mu.Unlock()
		c.pending = append(c.pending, done)
		return nil
	}
	done.Rejected, done.None = res.Rejected, res.None
	done.Entities, done.Relations = res.Entities, res.Relations
	h.curatedEntities(res)
	done.EntityNotes = h.writeCuratedNotes(ctx, convOf(turn[0]), res)
	for _, r := range res.Rejected {
		h.log.Warn("curator: op rejected", "turn", turn[0].ID, "index", r.Index, "op", r.Op, "path", r.Path, "why", r.Why)
	}
	var applied, queued, rejected int
	done.Outcomes, done.Questions, applied, queued, rejected = h.carryOut(ctx, "curator", res)
	asked := len(done.Questions)
	h.log.Info("curated", "turn", turn[0].ID, "records", len(turn), "applied", applied, "queued", queued,
		"rejected", rejected, "questions", asked, "none", res.None,
		"input_tokens", usage.InputTokens, "output_tokens", usage.OutputTokens)
	c.pending = append(c.pending, done)
	c.mu.Lock()
	c.health.Applied += applied
	c.health.Queued += queued
	c.health.Rejected += rejected
	c.health.Questions += asked
	c.mu.Unlock()
	return nil
}

// carryOut proposes what a curator's pass decoded, each through Propose
// under the vault's policy, and saves its questions for the owner; it
// returns the outcomes, the questions' paths, and how many proposals were
// applied, queued and rejected (those Decode refused included). what
// names the pass in the log.
func (h *Hearth) carryOut(ctx context.Context, what string, res curator.Result) (outs []ProposalOutcome, questions []string, applied, queued, rejected int) {
	rejected = len(res.Rejected)
	for _, p := range res.Proposals {
		out, err := h.Propose(ctx, p)
		if err != nil {
			h.log.Warn(what+": proposal failed", "id", p.ID, "path", p.Path, "err", err)
			out = ProposalOutcome{ID: p.ID, Path: p.Path, Decision: DecisionRejected, Why: err.Error()}
		}
		outs = append(outs, out)
		switch out.Decision {
		case DecisionApplied:
			applied++
		case DecisionQueued:
			queued++
		default:
			rejected++
		}
	}
	for _, q := range res.Questions {
		path, err := vault.SaveQuestion(h.cfg.Vault.Dir(), &q)
		if err != nil {
			h.log.Warn(what+": question not saved", "err", err)
			continue
		}
		questions = append(questions, path)
	}
	return outs, questions, applied, queued, rejected
}

// curatorAsk makes one of the curator's model calls (a pass or a flush):
// the curator's model, else the conversation's, asked for out; its calls
// and tokens are counted in the curator's health.
func (h *Hearth) curatorAsk(ctx context.Context, system, user string, out *llm.OutputSchema) (llm.Response, llm.Usage, error) {
	c := h.curator
	model := c.cfg.Model
	if model == nil {
		m, err := h.model()
		if err != nil {
			return llm.Response{}, llm.Usage{}, err
		}
		model = m
	}
	req := llm.Request{
		Model:    c.cfg.ModelName,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}},
		Output:   out,
	}
	resp, err := model.Stream(ctx, req, func(string) {})
	var usage llm.Usage
	if resp.Usage != nil {
		usage = *resp.Usage
	}
	c.mu.Lock()
	c.health.Calls++
	c.health.InputTokens += usage.InputTokens
	c.health.OutputTokens += usage.OutputTokens
	c.mu.Unlock()
	return resp, usage, err
}
