package hearth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
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
}

// openRecall sets up recall from the environment. The journal stays the
// truth: a corrupt or mismatched embedded index is removed and rebuilt
// from it.
func openRecall(ctx context.Context, root *memory.Root, j *journal.Journal, o DaemonOptions, log *slog.Logger) (*recallSystem, error) {
	emb, err := newEmbedder(o, log)
	if err != nil {
		return nil, err
	}
	dim := 0
	if emb != nil {
		dim = emb.Dim()
	}
	rs := &recallSystem{embedder: emb}
	if addr := o.Getenv("MNEMO_QDRANT_ADDR"); addr != "" {
		rs.backend = "qdrant"
		rs.index, err = qdrant.Open(ctx, qdrant.Options{Addr: addr, APIKey: o.Getenv("MNEMO_QDRANT_API_KEY"), UseTLS: o.Getenv("MNEMO_QDRANT_TLS") == "1", Dim: dim, Log: log})
		if errors.Is(err, recall.ErrDimension) {
			log.Warn("qdrant collections have another dimension: recreating them from the journal")
			if err = qdrant.Drop(ctx, qdrant.Options{Addr: addr, APIKey: o.Getenv("MNEMO_QDRANT_API_KEY"), UseTLS: o.Getenv("MNEMO_QDRANT_TLS") == "1"}); err == nil {
				rs.index, err = qdrant.Open(ctx, qdrant.Options{Addr: addr, APIKey: o.Getenv("MNEMO_QDRANT_API_KEY"), UseTLS: o.Getenv("MNEMO_QDRANT_TLS") == "1", Dim: dim, Log: log})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("qdrant at %s: %w", addr, err)
		}
	} else {
		rs.backend = "embedded"
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
	rs.indexer = indexer.New(indexer.Options{Journal: j, Index: rs.index, Embedder: emb, Session: conversationID, Log: log})
	rs.searcher = &recall.Searcher{Index: rs.index, Embedder: emb}
	return rs, nil
}

// newEmbedder picks the embedder: MNEMO_EMBEDDER=wordvec (the default when
// the vectors file exists), openai, ollama or none.
func newEmbedder(o DaemonOptions, log *slog.Logger) (recall.Embedder, error) {
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
			return nil, fmt.Errorf("word vectors: %w", err)
		}
		return m.Embedder(wordvec.Options{}), nil
	case "openai", "ollama":
		dim, _ := strconv.Atoi(o.Getenv("MNEMO_EMBED_DIM"))
		if dim <= 0 {
			return nil, fmt.Errorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_DIM (the model's vector size, e.g. 1024 for Qwen3-Embedding-0.6B)", kind)
		}
		model := o.Getenv("MNEMO_EMBED_MODEL")
		if model == "" {
			return nil, fmt.Errorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_MODEL", kind)
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
	return nil, fmt.Errorf("MNEMO_EMBEDDER=%q: use wordvec, openai, ollama or none", kind)
}

// search answers memory_search and clients' searches with hybrid
// retrieval.
func (rs *recallSystem) search(ctx context.Context, query string, k int) ([]tools.Hit, error) {
	hits, err := rs.searcher.Search(ctx, recall.Query{Text: query, K: k})
	if err != nil {
		return nil, err
	}
	out := make([]tools.Hit, len(hits))
	for i, h := range hits {
		out[i] = tools.Hit{ID: h.Doc.ID, Role: h.Doc.Role, Text: h.Doc.Text, TS: h.Doc.TS, Score: h.Score}
	}
	return out, nil
}

// memoryTimeout bounds how long a turn waits for relevant memories: the
// reply never waits long on the index.
const memoryTimeout = 300 * time.Millisecond

// memories returns a block of relevant older memories for query, within
// budget (in tokens, estimated as 4 bytes each), leaving out what the
// context window already holds. It is injected context: marked with the
// sentinel, never journaled, never indexed.
func (rs *recallSystem) memories(ctx context.Context, query string, exclude map[string]bool, budget int) string {
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	hits, err := rs.searcher.Search(ctx, recall.Query{Text: query, K: 20})
	if err != nil || len(hits) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(InjectedSentinel + "\n## Relevant memories (older turns found for this message; use them if they help)\n")
	head := b.Len()
	for _, h := range hits {
		base, _, _ := strings.Cut(h.Doc.ID, "#")
		if exclude[base] {
			continue
		}
		line := fmt.Sprintf("- [%s] %s: %s\n", h.Doc.TS.UTC().Format("2006-01-02 15:04"), h.Doc.Role, oneLine(h.Doc.Text, 600))
		if b.Len()+len(line) > budget*4 {
			break
		}
		b.WriteString(line)
	}
	if b.Len() == head {
		return ""
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if t, shortened := cut(s, n); shortened {
		return t + "…"
	}
	return s
}

// Close stops using the index.
func (rs *recallSystem) Close() error { return rs.index.Close() }

// health reports the indexer's progress in terms safe to show.
func (rs *recallSystem) health() *ipc.IndexHealth {
	st := rs.indexer.Status()
	h := &ipc.IndexHealth{Backend: rs.backend, Embedder: embedderName(rs.embedder), Indexed: st.Indexed, LagMS: st.Lag.Milliseconds(), Failures: st.Failures}
	if st.Failures > 0 {
		h.Failing = fmt.Sprintf("indexing is failing; retrying at %s (details in hearth's log)", st.RetryAt.Format(time.TimeOnly))
	}
	return h
}

// lateRecall is the recall system once it is open; before that (or when
// it could not open) search falls back to keywords and nothing is injected.
type lateRecall struct {
	rs      atomic.Pointer[recallSystem]
	keyword func(ctx context.Context, query string, k int) ([]tools.Hit, error)
}

func (l *lateRecall) search(ctx context.Context, query string, k int) ([]tools.Hit, error) {
	if rs := l.rs.Load(); rs != nil {
		return rs.search(ctx, query, k)
	}
	return l.keyword(ctx, query, k)
}

func (l *lateRecall) memories(ctx context.Context, query string, exclude map[string]bool, budget int) string {
	if rs := l.rs.Load(); rs != nil {
		return rs.memories(ctx, query, exclude, budget)
	}
	return ""
}

// notify needs no queue before the indexer runs: it starts from its cursor.
func (l *lateRecall) notify(id string) {
	if rs := l.rs.Load(); rs != nil {
		rs.indexer.Notify(id)
	}
}

func (l *lateRecall) health() *ipc.IndexHealth {
	if rs := l.rs.Load(); rs != nil {
		return rs.health()
	}
	return nil
}
