package recollect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/embed"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/recall/qdrant"
)

// system is recall once open: an embedder, an index, the indexer that
// feeds it from the journal, and the hybrid searcher.
type system struct {
	index    recall.Index
	embedder recall.Embedder // nil: lexical only
	indexer  *indexer.Indexer
	searcher *recall.Searcher
	backend  string
	log      *slog.Logger
	know     *knowledge // nil without a memory root
	// note says why recall is lexical only when it was not asked to be
	// (no word vectors where it looked); "" otherwise.
	note string
}

// newSystem is recall over an open index.
func newSystem(ix recall.Index, emb recall.Embedder, backend string, o Options) *system {
	rs := &system{index: ix, embedder: emb, backend: backend, log: o.Log}
	var j indexer.Journal
	if o.Journal != nil {
		j = o.Journal
	}
	rs.indexer = indexer.New(indexer.Options{Journal: j, Index: ix, Embedder: emb, Session: o.Session, Log: o.Log})
	rs.searcher = &recall.Searcher{Index: ix, Embedder: emb, Log: o.Log}
	if o.Root != "" {
		rs.know = &knowledge{root: o.Root, system: rs}
	}
	if r, ok := emb.(recall.Reranker); ok {
		rs.searcher.Reranker = r // the offline word vectors rerank too
	}
	return rs
}

// opener returns what Run retries until recall opens: the embedder is
// made on the first call that gets that far (its errors are configuration,
// never retried), the index on every call.
func opener(o Options) func(context.Context) (*system, error) {
	var emb recall.Embedder
	loaded := false
	return func(ctx context.Context) (*system, error) {
		if !loaded {
			var err error
			if emb, err = newEmbedder(o.Settings, o.Log); err != nil {
				return nil, err
			}
			loaded = true
		}
		rs, err := openSystem(ctx, o, emb)
		if rs != nil {
			rs.note = lexicalNote(o.Settings, emb)
		}
		return rs, err
	}
}

// lexicalNote says why recall is lexical only when s asked for the default
// embedder and got none: the word vectors were not where hearth looked.
func lexicalNote(s Settings, emb recall.Embedder) string {
	if emb != nil || s.Embedder != "" {
		return ""
	}
	return fmt.Sprintf("no word vectors at %s, so recall is lexical only: run `make vectors` (or `make install`) in the mnemo checkout, or pass -vectors", cmp.Or(s.Vectors, defaultVectors()))
}

// backendName names the index s configures.
func backendName(s Settings) string {
	if s.QdrantAddr != "" {
		return "qdrant"
	}
	return "embedded"
}

// embedderKind names the embedder s configures, before it is made.
func embedderKind(s Settings) string {
	switch kind := strings.ToLower(s.Embedder); kind {
	case "":
		return "wordvec"
	case "none":
		return embedderName(nil)
	case "wordvec", "openai", "ollama":
		return kind
	}
	return "unknown"
}

func embedderName(e recall.Embedder) string {
	if e == nil {
		return "none (lexical only)"
	}
	return e.Name()
}

// openSystem opens the index with emb's dimension. The journal stays the
// truth: a corrupt or mismatched index is removed and rebuilt from it.
func openSystem(ctx context.Context, o Options, emb recall.Embedder) (*system, error) {
	if o.Journal == nil {
		return nil, configErrorf("recall needs the journal")
	}
	dim := 0
	if emb != nil {
		dim = emb.Dim()
	}
	s, log := o.Settings, o.Log
	var ix recall.Index
	if addr := s.QdrantAddr; addr != "" {
		qo := qdrant.Options{Addr: addr, APIKey: s.QdrantAPIKey, UseTLS: s.QdrantTLS, Dim: dim, Log: log}
		q, err := qdrant.Open(ctx, qo)
		if errors.Is(err, recall.ErrDimension) {
			log.Warn("qdrant collections have another dimension: recreating them from the journal")
			if err = qdrant.Drop(ctx, qo); err == nil {
				q, err = qdrant.Open(ctx, qo)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("qdrant at %s: %w", addr, err)
		}
		ix = q
	} else {
		if o.Root == "" {
			return nil, configErrorf("the embedded recall index needs the memory root")
		}
		dir := filepath.Join(o.Root, "index", "embedded")
		e, err := embedded.Open(dir, embedded.Options{Dim: dim, Log: log})
		if err != nil && (embedded.IsCorrupt(err) || errors.Is(err, recall.ErrDimension)) {
			log.Warn("recall index unusable: rebuilding it from the journal", "err", err)
			if rerr := os.RemoveAll(dir); rerr != nil {
				return nil, fmt.Errorf("remove index: %w", rerr)
			}
			e, err = embedded.Open(dir, embedded.Options{Dim: dim, Log: log})
		}
		if err != nil {
			return nil, fmt.Errorf("open recall index: %w", err)
		}
		ix = e
	}
	return newSystem(ix, emb, backendName(s), o), nil
}

// configError is a recall setting that is wrong: waiting cannot heal it,
// so Run does not retry it.
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

// defaultVectors is where `make vectors` puts the word vectors.
func defaultVectors() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "mnemo", "wink-sg100-100k.bin")
}

// newEmbedder makes the embedder s picks (see Settings.Embedder); nil is
// lexical only. Its errors are configErrors. They name the settings by
// the environment variables that set them.
func newEmbedder(s Settings, log *slog.Logger) (recall.Embedder, error) {
	kind := strings.ToLower(s.Embedder)
	switch kind {
	case "", "wordvec":
		path := cmp.Or(s.Vectors, defaultVectors())
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
		if s.EmbedDim <= 0 {
			return nil, configErrorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_DIM (the model's vector size, e.g. 1024 for Qwen3-Embedding-0.6B)", kind)
		}
		if s.EmbedModel == "" {
			return nil, configErrorf("MNEMO_EMBEDDER=%s needs MNEMO_EMBED_MODEL", kind)
		}
		opts := embed.HTTPOptions{Model: s.EmbedModel, Dim: s.EmbedDim, Log: log, APIKey: s.EmbedAPIKey}
		if kind == "ollama" {
			opts.BaseURL = cmp.Or(s.EmbedBaseURL, "http://localhost:11434")
			return embed.NewOllama(opts), nil
		}
		opts.BaseURL = cmp.Or(s.EmbedBaseURL, "https://api.openai.com/v1")
		return embed.NewOpenAI(opts), nil
	case "none":
		return nil, nil
	}
	return nil, configErrorf("MNEMO_EMBEDDER=%q: use wordvec, openai, ollama or none", kind)
}

// search answers a memory search with hybrid retrieval, req's filters
// applied by the index.
func (rs *system) search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	k := req.K
	if req.MinConfidence > 0 && req.WantsKnowledge() {
		k = min(max(4*k, 50), 500) // notes below the confidence are left out after
	}
	hits, err := rs.searcher.Search(ctx, recall.Query{Text: req.Query, K: k, Filter: searchFilter(req)})
	if err != nil {
		return nil, err
	}
	out := make([]memory.Hit, 0, len(hits))
	for _, h := range hits {
		d := h.Doc
		if d.Kind == recall.KindKnowledge {
			if noteConfidence(d) < req.MinConfidence {
				continue
			}
			out = append(out, noteHit(d, h.Score))
		} else {
			out = append(out, memory.Hit{ID: d.ID, Kind: d.Kind, Role: d.Role, Session: d.Session, Channel: d.Channel, Mode: mode(d.Mode), Text: d.Text, TS: d.TS, Score: h.Score})
		}
		if req.K > 0 && len(out) == req.K {
			break
		}
	}
	return out, nil
}

// searchFilter is req's filters as recall's: the roles and kinds are the
// same words (a tool document has role "tool" and kind "tool"), and both
// time ranges include Since and exclude Until. A knowledge document's role
// is its note's status: when req may find notes, the roles filter also
// holds the statuses it asks for (active only by default), and a roles
// filter narrows only turns and tool results.
func searchFilter(req memory.SearchRequest) recall.Filter {
	f := recall.Filter{Kinds: req.Kinds, Roles: req.Roles, Since: req.Since, Until: req.Until}
	if req.WantsKnowledge() {
		var roles []string
		if req.WantsRecords() {
			roles = req.Roles
			if len(roles) == 0 {
				roles = memory.Roles()
			}
		}
		f.Roles = append(slices.Clone(roles), req.NoteStatuses()...)
	}
	return f
}

// health reports the indexer's progress in terms safe to show.
func (rs *system) health() *memory.IndexHealth {
	st := rs.indexer.Status()
	h := &memory.IndexHealth{Backend: rs.backend, Embedder: embedderName(rs.embedder), Ready: st.CaughtUp,
		IndexedSinceStart: st.Indexed, Lag: st.Lag, Failures: st.Failures, Note: rs.note}
	if st.Failures > 0 {
		h.Failing = fmt.Sprintf("indexing is failing; retrying at %s (details in hearth's log)", st.RetryAt.Format(time.TimeOnly))
	}
	return h
}
