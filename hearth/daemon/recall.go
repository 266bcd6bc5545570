package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/hearth/wire"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/embed"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/recall/qdrant"
)

// recallSystem is hearth's semantic memory: an embedder, an index, the
// indexer that feeds it from the journal, and the hybrid searcher.
type recallSystem struct {
	index    recall.Index
	embedder recall.Embedder // nil: lexical only
	indexer  *indexer.Indexer
	searcher *recall.Searcher
	backend  string
	log      *slog.Logger
}

// openRecall sets up recall from the environment (see newEmbedder and
// openIndex).
func openRecall(ctx context.Context, root *memory.Root, j *journal.Journal, o Options, log *slog.Logger) (*recallSystem, error) {
	emb, err := newEmbedder(o, log)
	if err != nil {
		return nil, err
	}
	return openIndex(ctx, root, j, o, emb, log)
}

// recallOpener returns what RunDaemon retries until recall opens: the
// embedder is made on the first call that gets that far (its errors are
// configuration, never retried), the index on every call.
func recallOpener(root *memory.Root, j *journal.Journal, o Options, log *slog.Logger) func(context.Context) (*recallSystem, error) {
	var emb recall.Embedder
	loaded := false
	return func(ctx context.Context) (*recallSystem, error) {
		if !loaded {
			var err error
			if emb, err = newEmbedder(o, log); err != nil {
				return nil, err
			}
			loaded = true
		}
		return openIndex(ctx, root, j, o, emb, log)
	}
}

// recallBackend names the index o configures.
func recallBackend(o Options) string {
	if o.Getenv("MNEMO_QDRANT_ADDR") != "" {
		return "qdrant"
	}
	return "embedded"
}

// embedderKind names the embedder o configures, before it is made.
func embedderKind(o Options) string {
	switch kind := strings.ToLower(o.Getenv("MNEMO_EMBEDDER")); kind {
	case "":
		return "wordvec"
	case "none":
		return embedderName(nil)
	case "wordvec", "openai", "ollama":
		return kind
	}
	return "unknown"
}

// openIndex opens the index with emb's dimension. The journal stays the
// truth: a corrupt or mismatched index is removed and rebuilt from it.
func openIndex(ctx context.Context, root *memory.Root, j *journal.Journal, o Options, emb recall.Embedder, log *slog.Logger) (*recallSystem, error) {
	dim := 0
	if emb != nil {
		dim = emb.Dim()
	}
	rs := &recallSystem{embedder: emb, backend: recallBackend(o), log: log}
	var err error
	if addr := o.Getenv("MNEMO_QDRANT_ADDR"); addr != "" {
		qo := qdrant.Options{Addr: addr, APIKey: o.Getenv("MNEMO_QDRANT_API_KEY"), UseTLS: o.Getenv("MNEMO_QDRANT_TLS") == "1", Dim: dim, Log: log}
		rs.index, err = qdrant.Open(ctx, qo)
		if errors.Is(err, recall.ErrDimension) {
			log.Warn("qdrant collections have another dimension: recreating them from the journal")
			if err = qdrant.Drop(ctx, qo); err == nil {
				rs.index, err = qdrant.Open(ctx, qo)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("qdrant at %s: %w", addr, err)
		}
	} else {
		dir := filepath.Join(root.Dir(), "index", "embedded")
		rs.index, err = embedded.Open(dir, embedded.Options{Dim: dim, Log: log})
		if err != nil && (embedded.IsCorrupt(err) || errors.Is(err, recall.ErrDimension)) {
			log.Warn("recall index unusable: rebuilding it from the journal", "err", err)
			if rerr := os.RemoveAll(dir); rerr != nil {
				return nil, fmt.Errorf("remove index: %w", rerr)
			}
			rs.index, err = embedded.Open(dir, embedded.Options{Dim: dim, Log: log})
		}
		if err != nil {
			return nil, fmt.Errorf("open recall index: %w", err)
		}
	}
	rs.indexer = indexer.New(indexer.Options{Journal: j, Index: rs.index, Embedder: emb, Session: hearth.MainConversation, Log: log})
	rs.searcher = &recall.Searcher{Index: rs.index, Embedder: emb, Log: log}
	if r, ok := emb.(recall.Reranker); ok {
		rs.searcher.Reranker = r // the offline word vectors rerank too
	}
	return rs, nil
}

// configError is a recall setting that is wrong: waiting cannot heal it,
// so hearth does not retry it.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func configErrorf(format string, args ...any) error {
	return &configError{fmt.Errorf(format, args...)}
}

// permanent reports whether opening recall failed for a reason that
// retrying cannot fix: a bad setting, a refused key, a foreign schema.
func permanent(err error) bool {
	var ce *configError
	return errors.As(err, &ce) || errors.Is(err, qdrant.ErrUnauthorized) || errors.Is(err, qdrant.ErrSchema)
}

// newEmbedder picks the embedder: MNEMO_EMBEDDER=wordvec (the default when
// the vectors file exists), openai, ollama or none. Its errors are
// configErrors.
func newEmbedder(o Options, log *slog.Logger) (recall.Embedder, error) {
	kind := strings.ToLower(o.Getenv("MNEMO_EMBEDDER"))
	switch kind {
	case "", "wordvec":
		path := o.Vectors
		if path == "" {
			path = o.Getenv("MNEMO_VECTORS")
		}
		if path == "" {
			if dir, err := os.UserCacheDir(); err == nil {
				path = filepath.Join(dir, "mnemo", "wink-sg100-100k.bin")
			}
		}
		m, err := wordvec.Load(path)
		if errors.Is(err, fs.ErrNotExist) && kind == "" {
			log.Warn("no word vectors: recall is lexical only (run `make vectors`, or pass -vectors)", "path", path)
			return nil, nil
		}
		if err != nil {
			return nil, configErrorf("word vectors: %w", err)
		}
		return m.Embedder(wordvec.Options{}), nil
	case "openai", "ollama":
		dim, _ := strconv.Atoi(o.Getenv("MNEMO_EMBED_DIM"))
		if dim <= 0 {
			return nil, configErrorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_DIM (the model's vector size, e.g. 1024 for Qwen3-Embedding-0.6B)", kind)
		}
		model := o.Getenv("MNEMO_EMBED_MODEL")
		if model == "" {
			return nil, configErrorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_MODEL", kind)
		}
		opts := embed.HTTPOptions{Model: model, Dim: dim, Log: log, APIKey: cmp.Or(o.Getenv("MNEMO_EMBED_API_KEY"), o.Getenv("OPENAI_API_KEY"))}
		if kind == "ollama" {
			opts.BaseURL = cmp.Or(o.Getenv("MNEMO_EMBED_BASE_URL"), "http://localhost:11434")
			return embed.NewOllama(opts), nil
		}
		opts.BaseURL = cmp.Or(o.Getenv("MNEMO_EMBED_BASE_URL"), o.Getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1")
		return embed.NewOpenAI(opts), nil
	case "none":
		return nil, nil
	}
	return nil, configErrorf("MNEMO_EMBEDDER=%q: use wordvec, openai, ollama or none", kind)
}

// search answers memory_search and clients' searches with hybrid
// retrieval, req's filters applied by the index.
func (rs *recallSystem) search(ctx context.Context, req tools.SearchRequest) ([]tools.Hit, error) {
	hits, err := rs.searcher.Search(ctx, recall.Query{Text: req.Query, K: req.K, Filter: searchFilter(req)})
	if err != nil {
		return nil, err
	}
	out := make([]tools.Hit, len(hits))
	for i, h := range hits {
		d := h.Doc
		out[i] = tools.Hit{ID: d.ID, Kind: d.Kind, Role: d.Role, Session: d.Session, Channel: d.Channel, Text: d.Text, TS: d.TS, Score: h.Score}
	}
	return out, nil
}

// searchFilter is req's filters as recall's: the roles and kinds are the
// same words (a tool document has role "tool" and kind "tool"), and both
// time ranges include Since and exclude Until.
func searchFilter(req tools.SearchRequest) recall.Filter {
	return recall.Filter{Kinds: req.Kinds, Roles: req.Roles, Since: req.Since, Until: req.Until}
}

// memoryTimeout bounds how long a turn waits for relevant memories: the
// reply never waits long on the index.
const memoryTimeout = 300 * time.Millisecond

// Headings of the injected memory block's two sections.
const (
	turnsHeading = "## Relevant memories (older turns found for this message; use them if they help)\n"
	toolsHeading = "## Relevant tool results (earlier tool outputs found for this message; use them if they help)\n"

	sessionTurnsHeading = "## Memories relevant to where we left off (older turns found as this session starts)\n"
	sessionToolsHeading = "## Tool results relevant to where we left off (found as this session starts)\n"
)

// memories returns a block of relevant older turns and tool results for
// req.Query, each section within its allowance, leaving out what the
// context window already holds. The two searches run concurrently within
// memoryTimeout. It is injected context: marked with the sentinel, never
// journaled, never indexed.
func (rs *recallSystem) memories(ctx context.Context, req memory.ContextRequest) string {
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	q := recall.Query{Text: req.Query}
	if rs.embedder != nil && req.Turns > 0 && req.Tools > 0 {
		// Both searches share one embedding of the query.
		v, err := rs.searcher.EmbedQuery(ctx, req.Query)
		if err != nil {
			rs.log.Warn("recall: cannot embed the query; relevant memories are lexical only", "err", err)
			v = make([]float32, rs.embedder.Dim())
		}
		q.Vector = v
	}
	var turns, results []recall.Hit
	var wg sync.WaitGroup
	wg.Go(func() { turns = rs.relevant(ctx, q, recall.KindTurn, req.Turns) })
	wg.Go(func() { results = rs.relevant(ctx, q, recall.KindTool, req.Tools) })
	wg.Wait()
	return memoryBlock(req, turns, results)
}

// relevant searches documents of one kind, enough of them to fill
// allowance; none when the search fails or is too slow.
func (rs *recallSystem) relevant(ctx context.Context, q recall.Query, kind string, allowance int) []recall.Hit {
	if allowance <= 0 {
		return nil
	}
	q.K, q.Filter = memoryHits(allowance), recall.Filter{Kinds: []string{kind}}
	hits, err := rs.searcher.Search(ctx, q)
	if err != nil {
		rs.log.Debug("no relevant memories for this turn", "kind", kind, "err", err)
		return nil
	}
	return hits
}

// memoryHits is how many hits to ask for to fill allowance tokens.
func memoryHits(allowance int) int {
	return min(max(allowance/40, 10), 50)
}

// memoryBlock is the injected block: the sentinel, then a section of older
// turns and one of tool results, each omitted when empty; "" when both
// are.
func memoryBlock(req memory.ContextRequest, turns, results []recall.Hit) string {
	th, rh := turnsHeading, toolsHeading
	if req.Session {
		th, rh = sessionTurnsHeading, sessionToolsHeading
	}
	body := memorySection(th, turns, req, req.Turns, turnLine) +
		memorySection(rh, results, req, req.Tools, toolLine)
	if body == "" {
		return ""
	}
	return InjectedSentinel + "\n" + body
}

// memorySection is heading and the lines of the hits not in req.Exclude,
// in rank order, skipping any that would take it over allowance tokens;
// "" when no hit fits. The records it shows are added to req.Injected.
func memorySection(heading string, hits []recall.Hit, req memory.ContextRequest, allowance int, line func(recall.Doc) string) string {
	used := memory.EstimateTokens(heading)
	var b strings.Builder
	for _, h := range hits {
		base, _, _ := strings.Cut(h.Doc.ID, "#")
		if req.Exclude[base] {
			continue
		}
		l := line(h.Doc)
		if n := memory.EstimateTokens(l); used+n <= allowance {
			used += n
			b.WriteString(l)
			if req.Injected != nil {
				req.Injected[base] = true
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return heading + b.String()
}

func turnLine(d recall.Doc) string {
	return fmt.Sprintf("- [%s] %s: %s\n", d.TS.UTC().Format("2006-01-02 15:04"), d.Role, oneLine(d.Text, 600))
}

// toolLine shows a tool document, whose text names the tool, its reason
// and arguments, then the result.
func toolLine(d recall.Doc) string {
	return fmt.Sprintf("- [%s] %s\n", d.TS.UTC().Format("2006-01-02 15:04"), oneLine(d.Text, 600))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if t, shortened := wire.Cut(s, n); shortened {
		return t + "…"
	}
	return s
}

// Close stops using the index.
func (rs *recallSystem) Close() error { return rs.index.Close() }

// health reports the indexer's progress in terms safe to show.
func (rs *recallSystem) health() *memory.IndexHealth {
	st := rs.indexer.Status()
	h := &memory.IndexHealth{Backend: rs.backend, Embedder: embedderName(rs.embedder), Indexed: st.Indexed, Lag: st.Lag, Failures: st.Failures}
	if st.Failures > 0 {
		h.Failing = fmt.Sprintf("indexing is failing; retrying at %s (details in hearth's log)", st.RetryAt.Format(time.TimeOnly))
	}
	return h
}

// lateRecall is the recall system once it is open; before that (or when
// it could not open) search falls back to keywords and nothing is injected.
type lateRecall struct {
	rs atomic.Pointer[recallSystem]
	// keyword is the fallback search, over the journal: it honours the
	// same filters.
	keyword tools.SearchFunc
	// down is what health reports while recall is not open, once an
	// attempt to open it failed.
	down atomic.Pointer[memory.IndexHealth]
	// backend and embedder describe what is being opened, for down.
	backend, embedder string
}

// Safe messages for a recall that is not open; details are in the log.
const (
	msgRecallRetrying      = "the %s index cannot be opened; retrying at %s, memory search uses keywords meanwhile (details in hearth's log)"
	msgRecallMisconfigured = "recall is misconfigured and stays off until hearth restarts; memory search uses keywords (details in hearth's log)"
)

// retryPolicy is how opening recall backs off: from Initial doubling to
// Max (defaults 1s and 1m), each delay jittered to between half of it and
// all of it, so that hearths sharing a backend do not retry in step.
type retryPolicy struct {
	Initial, Max time.Duration
}

func (p retryPolicy) withDefaults() retryPolicy {
	if p.Initial <= 0 {
		p.Initial = time.Second
	}
	if p.Max < p.Initial {
		p.Max = max(time.Minute, p.Initial)
	}
	return p
}

// delay is the wait after the attempt-th failure (1-based).
func (p retryPolicy) delay(attempt int) time.Duration {
	d := p.Max
	if shift := attempt - 1; shift < 32 {
		if e := p.Initial << shift; e > 0 && e < p.Max {
			d = e
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// open calls opener until it succeeds, ctx ends, or it fails for a reason
// waiting cannot heal (see permanent), backing off by retry in between.
// Meanwhile health reports recall unavailable, with the attempts so far.
// It returns the open recall system, which search now uses, or nil.
func (l *lateRecall) open(ctx context.Context, opener func(context.Context) (*recallSystem, error), retry retryPolicy, log *slog.Logger) *recallSystem {
	retry = retry.withDefaults()
	for attempt := 1; ; attempt++ {
		rs, err := opener(ctx)
		if err == nil {
			l.rs.Store(rs)
			l.down.Store(nil)
			return rs
		}
		if ctx.Err() != nil {
			return nil
		}
		down := &memory.IndexHealth{Backend: l.backend, Embedder: l.embedder, Unavailable: true, Failures: attempt}
		if permanent(err) {
			log.Error("recall is misconfigured: memory search falls back to keywords until it is fixed and hearth restarts", "err", err)
			down.Failing = msgRecallMisconfigured
			l.down.Store(down)
			return nil
		}
		wait := retry.delay(attempt)
		log.Warn("recall unavailable: memory search falls back to keywords; retrying", "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		down.Failing = fmt.Sprintf(msgRecallRetrying, l.backend, time.Now().Add(wait).Format(time.TimeOnly))
		l.down.Store(down)
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// search goes to recall once it is open, to the keyword fallback until
// then; both apply req's filters.
func (l *lateRecall) Search(ctx context.Context, mreq memory.SearchRequest) ([]memory.Hit, error) {
	hits, err := l.search(ctx, tools.SearchRequest{Query: mreq.Query, K: mreq.K, Roles: mreq.Roles, Kinds: mreq.Kinds, Since: mreq.Since, Until: mreq.Until})
	out := make([]memory.Hit, len(hits))
	for i, h := range hits {
		out[i] = memory.Hit{ID: h.ID, Kind: h.Kind, Role: h.Role, Session: h.Session, Channel: h.Channel, Text: h.Text, TS: h.TS, Score: h.Score}
	}
	return out, err
}

func (l *lateRecall) search(ctx context.Context, req tools.SearchRequest) ([]tools.Hit, error) {
	if rs := l.rs.Load(); rs != nil {
		return rs.search(ctx, req)
	}
	return l.keyword(ctx, req)
}

func (l *lateRecall) Relevant(ctx context.Context, req memory.ContextRequest) string {
	if rs := l.rs.Load(); rs != nil {
		return rs.memories(ctx, req)
	}
	return ""
}

// notify needs no queue before the indexer runs: it starts from its cursor.
func (l *lateRecall) Notify(id string) {
	if rs := l.rs.Load(); rs != nil {
		rs.indexer.Notify(id)
	}
}

// health is the open index's progress; while it is not open, why (once an
// attempt failed); nil while the first attempt runs.
func (l *lateRecall) Health() *memory.IndexHealth {
	if rs := l.rs.Load(); rs != nil {
		return rs.health()
	}
	if d := l.down.Load(); d != nil {
		c := *d
		return &c
	}
	return nil
}
