// Package recollect is the one entry point to mnemo's memory for hearth's
// core: it opens recall (an embedder, an index, the indexer that feeds the
// index from the journal, the hybrid searcher) in the background, retrying
// while its backend is unreachable, answers searches with hybrid recall
// once it is open and with keywords over the journal until then, and
// builds the block of relevant memories injected into a turn's context.
//
// It reads no environment: Settings are typed, and the caller maps its
// configuration onto them.
package recollect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/internal/backoff"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// Settings choose the embedder and the index.
type Settings struct {
	// Embedder is "wordvec", "openai", "ollama" or "none" (lexical only);
	// "" is wordvec when the Vectors file exists, else lexical only with
	// a warning.
	Embedder string
	// Vectors is the wordvec file; "" is
	// $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin.
	Vectors string
	// EmbedModel and EmbedDim (both required) and EmbedBaseURL and
	// EmbedAPIKey configure the openai and ollama embedders. EmbedBaseURL
	// "" is https://api.openai.com/v1 for openai, http://localhost:11434
	// for ollama.
	EmbedModel, EmbedBaseURL string
	EmbedDim                 int
	EmbedAPIKey              string
	// QdrantAddr, when set, puts the index in Qdrant (host:port of its
	// gRPC API); "" keeps it embedded under Options.Root.
	QdrantAddr, QdrantAPIKey string
	QdrantTLS                bool
}

// Options configure a Memory.
type Options struct {
	// Root is the memory root's directory; the embedded index lives in
	// <Root>/index/embedded.
	Root string
	// Journal is the truth the index derives from and the keyword
	// fallback searches. Required.
	Journal *journal.Journal
	// Session is the conversation id every document and hit carries.
	Session  string
	Settings Settings
	// Retry is how opening recall backs off; zero takes the defaults.
	Retry RetryPolicy
	Log   *slog.Logger // nil: discard
}

// RetryPolicy is how opening recall backs off: from Initial doubling to
// Max (defaults 1s and 1m), each delay jittered to between half of it and
// all of it, so that hearths sharing a backend do not retry in step.
type RetryPolicy struct {
	Initial, Max time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Initial <= 0 {
		p.Initial = time.Second
	}
	if p.Max < p.Initial {
		p.Max = max(time.Minute, p.Initial)
	}
	return p
}

// delay is the wait after the attempt-th failure (1-based).
func (p RetryPolicy) delay(attempt int) time.Duration {
	return backoff.Policy{Initial: p.Initial, Max: p.Max, JitterBelow: 0.5}.Delay(attempt)
}

// Memory is mnemo's memory as hearth's core uses it. Its methods are safe
// for concurrent use.
type Memory struct {
	o   Options
	log *slog.Logger
	// opener opens recall; Run calls it until it succeeds.
	opener func(context.Context) (*system, error)
	// backend and embedder describe what is being opened, for Health.
	backend, embedder string

	// mu guards rs: searches hold it for reading while they use the
	// index, so that Run closes it only once they are done.
	mu sync.RWMutex
	rs *system // nil until recall is open, and again once Run ends
	// down is what Health reports while recall is not open, once an
	// attempt to open it failed or Run ended.
	down atomic.Pointer[memory.IndexHealth]
	// rebuild asks Run to drop the index and rebuild it (capacity 1);
	// rebuilding is the system being rebuilt, for Health.
	rebuild    chan struct{}
	rebuilding atomic.Pointer[system]

	recallSearches, keywordSearches atomic.Int64
}

// Safe messages for a recall that is not open; details are in the log.
const (
	msgRecallRetrying      = "the %s index cannot be opened; retrying at %s, memory search uses keywords meanwhile (details in hearth's log)"
	msgRecallMisconfigured = "recall is misconfigured and stays off until hearth restarts; memory search uses keywords (details in hearth's log)"
	msgRecallStopped       = "recall has stopped; memory search uses keywords"
)

// New returns the memory o describes; nothing is opened until Run.
func New(o Options) *Memory {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Memory{o: o, log: o.Log, opener: opener(o), backend: backendName(o.Settings), embedder: embedderKind(o.Settings),
		rebuild: make(chan struct{}, 1)}
}

// Run opens recall, retrying by o.Retry while it fails for a reason that
// waiting may heal (an unreachable backend), then keeps the index up to
// date with the journal until ctx ends, and closes it. A configuration
// that is wrong, a refused Qdrant key or a foreign schema is not retried:
// Run logs it and returns, and search keeps to keywords. Call it once.
func (m *Memory) Run(ctx context.Context) {
	rs := m.open(ctx)
	if rs == nil {
		if ctx.Err() != nil {
			m.stopped()
		}
		return
	}
	m.log.Info("recall ready", "backend", rs.backend, "embedder", embedderName(rs.embedder))
	if err := m.syncSeen(ctx, rs, true); err != nil {
		m.log.Warn("could not check the journal against the index; a turn removed by hand may stay searchable until `hearth reindex`", "err", err)
	}
	rs.reconcileKnowledge(ctx)
	for m.runIndexer(ctx, rs) {
		m.rebuildIndex(ctx, rs)
	}
	if err := m.syncSeen(context.WithoutCancel(ctx), rs, false); err != nil {
		m.log.Warn("could not record what the index has seen of the journal", "err", err)
	}
	m.mu.Lock()
	m.rs = nil
	m.mu.Unlock()
	m.stopped()
	if err := rs.index.Close(); err != nil {
		m.log.Error("recall index close", "err", err)
	}
}

// runIndexer keeps the index up to date until ctx ends (false) or a
// rebuild is asked for (true).
func (m *Memory) runIndexer(ctx context.Context, rs *system) bool {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rs.indexer.Run(runCtx)
	}()
	select {
	case <-ctx.Done():
		<-done
		return false
	case <-m.rebuild:
		cancel()
		<-done
		return ctx.Err() == nil
	}
}

// RebuildIndex drops the recall index and rebuilds it from the journal
// and the vault's notes, in the background: it returns once the rebuild
// is asked for. Until it is done searches use keywords over the journal,
// as while recall first opens, and Health says Rebuilding with the
// documents indexed so far. It fails when recall is not open.
func (m *Memory) RebuildIndex(ctx context.Context) error {
	rs, release := m.acquire()
	if rs == nil {
		if m.rebuilding.Load() != nil {
			return nil // under way
		}
		return errors.New("recall: rebuild: the index is not open")
	}
	release()
	select {
	case m.rebuild <- struct{}{}:
	default: // asked for already
	}
	return nil
}

// rebuildIndex is RebuildIndex on Run's goroutine, with the indexer
// stopped: searches leave the index (waiting for those under way), it is
// reset and filled again from the journal and the notes, and searches
// come back to it. A failure is logged and left to the indexer, which
// goes on from the cursor the reset left.
func (m *Memory) rebuildIndex(ctx context.Context, rs *system) {
	m.rebuilding.Store(rs)
	defer m.rebuilding.Store(nil)
	m.mu.Lock()
	m.rs = nil
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.rs = rs
		m.mu.Unlock()
	}()
	start := time.Now()
	m.log.Info("recall: dropping the index to rebuild it")
	if err := rs.index.Reset(ctx); err != nil {
		m.log.Error("recall: could not reset the index; it is kept as it was", "err", err)
		return
	}
	if rs.know != nil {
		rs.know.reset()
	}
	if err := rs.indexer.CatchUp(ctx); err != nil {
		m.log.Warn("recall: the rebuild stopped short; the indexer goes on from where it got", "err", err)
		return
	}
	notes := 0
	if rs.know != nil {
		var err error
		if notes, _, err = rs.know.reconcile(ctx); err != nil {
			m.log.Warn("recall: the rebuild did not index every knowledge note", "err", err)
		}
	}
	m.log.Info("recall: index rebuilt", "documents", rs.indexer.Status().Indexed, "notes", notes, "took", time.Since(start).Round(time.Millisecond))
}

func (m *Memory) stopped() {
	m.down.Store(&memory.IndexHealth{Backend: m.backend, Embedder: m.embedder, Unavailable: true, Failing: msgRecallStopped})
}

// open calls m.opener until it succeeds, ctx ends, or it fails for a
// reason waiting cannot heal (see permanent), backing off by o.Retry in
// between. Meanwhile Health reports recall unavailable, with the attempts
// so far. It returns the open recall system, which search now uses, or
// nil.
func (m *Memory) open(ctx context.Context) *system {
	retry := m.o.Retry.withDefaults()
	for attempt := 1; ; attempt++ {
		rs, err := m.opener(ctx)
		if err == nil {
			m.mu.Lock()
			m.rs = rs
			m.mu.Unlock()
			m.down.Store(nil)
			return rs
		}
		if ctx.Err() != nil {
			return nil
		}
		down := &memory.IndexHealth{Backend: m.backend, Embedder: m.embedder, Unavailable: true, Failures: attempt}
		if permanent(err) {
			m.log.Error("recall is misconfigured: memory search falls back to keywords until it is fixed and hearth restarts", "err", err)
			down.Failing = msgRecallMisconfigured
			m.down.Store(down)
			return nil
		}
		wait := retry.delay(attempt)
		m.log.Warn("recall unavailable: memory search falls back to keywords; retrying", "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		down.Failing = fmt.Sprintf(msgRecallRetrying, m.backend, time.Now().Add(wait).Format(time.TimeOnly))
		m.down.Store(down)
		if !backoff.Sleep(ctx, wait) {
			return nil
		}
	}
}

// acquire returns the open recall system and the function that releases
// it, or nil while recall is not open.
func (m *Memory) acquire() (*system, func()) {
	m.mu.RLock()
	if m.rs == nil {
		m.mu.RUnlock()
		return nil, nil
	}
	return m.rs, m.mu.RUnlock
}

// Search returns the req.K best hits for req.Query among the records that
// pass req's filters: by hybrid recall once it is open, by keywords over
// the journal until then, with the same filters and provenance. When
// recall fails, or has not answered in half the time left to ctx's
// deadline (an index that hangs), the keywords answer. Its errors for a
// request that fails Validate are safe to show.
func (m *Memory) Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if rs, release := m.acquire(); rs != nil {
		defer release()
		// Under a deadline the index gets half the time left, so that
		// one that hangs (Qdrant stalled) leaves the keywords the rest.
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok {
			rctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		}
		hits, err := rs.search(rctx, req)
		cancel()
		if err == nil {
			m.recallSearches.Add(1)
			return hits, nil
		}
		if ctx.Err() != nil || m.o.Journal == nil {
			return nil, err
		}
		m.o.Log.Warn("recall search failed; answering by keywords over the journal", "err", err)
	}
	if m.o.Journal == nil {
		return nil, errors.New("memory search: no journal")
	}
	hits, err := keywordSearch(ctx, m.scanJournal, req)
	if err == nil {
		m.keywordSearches.Add(1)
	}
	return hits, err
}

// scanJournal visits every journal record as a hit's provenance.
func (m *Memory) scanJournal(ctx context.Context, fn func(memory.Hit) error) error {
	return m.o.Journal.Scan(ctx, func(r journal.Record) error {
		if !r.IsTurn() {
			return nil // a tombstone or a decision
		}
		return fn(Provenance(r, m.o.Session))
	})
}

// Relevant returns the block of older turns and tool results relevant to
// req.Query, injected into a turn's context; "" while recall is not open,
// or when nothing relevant fits. It waits at most 300 ms on the index.
func (m *Memory) Relevant(ctx context.Context, req memory.ContextRequest) string {
	rs, release := m.acquire()
	if rs == nil {
		return ""
	}
	defer release()
	return rs.memories(ctx, req)
}

// Notify tells memory that the record id was committed to the journal. It
// never blocks; before recall opens there is nothing to tell, as the
// indexer starts from its cursor.
func (m *Memory) Notify(id string) {
	if rs, release := m.acquire(); rs != nil {
		defer release()
		rs.indexer.Notify(id)
	}
}

// Health reports how recall is doing, in terms safe to show. It is never
// nil.
func (m *Memory) Health() *memory.IndexHealth {
	var h *memory.IndexHealth
	if rs := m.rebuilding.Load(); rs != nil {
		h = rs.health()
		h.Ready, h.Rebuilding = false, true
	} else if rs, release := m.acquire(); rs != nil {
		h = rs.health()
		release()
	} else if d := m.down.Load(); d != nil {
		c := *d
		h = &c
	} else {
		h = &memory.IndexHealth{Backend: m.backend, Embedder: m.embedder, Opening: true}
	}
	h.Searches = memory.SearchCounts{Recall: int(m.recallSearches.Load()), Keyword: int(m.keywordSearches.Load())}
	return h
}

// compactor is an index that can rewrite its storage without the garbage
// of deleted documents (embedded.Index).
type compactor interface {
	Compact(ctx context.Context) error
}

// Forget drops the records ids from recall (every document they made, and
// the context they gave the turns after them), and with purge also
// compacts an index that keeps deleted text on disk until then. While
// recall is not open there is nothing to do: the keyword fallback reads
// the journal's live view, and the indexer meets the tombstone when it
// catches up.
func (m *Memory) Forget(ctx context.Context, ids []string, purge bool) error {
	rs, release := m.acquire()
	if rs == nil {
		return nil
	}
	defer release()
	if len(ids) > 0 {
		if err := rs.indexer.Forget(ctx, ids); err != nil {
			return fmt.Errorf("recall: forget: %w", err)
		}
	}
	if c, ok := rs.index.(compactor); ok && purge {
		if err := c.Compact(ctx); err != nil {
			return fmt.Errorf("recall: compact: %w", err)
		}
	}
	return nil
}
