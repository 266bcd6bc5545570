package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// VectorStore is implemented by indexes that can hand back the vectors
// they store (unit length, possibly quantised), which Searcher uses for
// MMR diversification. An entry is nil for a document without a vector.
type VectorStore interface {
	Vectors(ctx context.Context, ids []string) ([][]float32, error)
}

// Search modes.
const (
	ModeHybrid  = "hybrid"
	ModeLexical = "lexical"
	ModeVector  = "vector"
)

// SearchOptions tune Searcher. Zero fields take their defaults, except the
// weights and MMRLambda: when all of those are zero they all take their
// defaults (DefaultSearchOptions), otherwise they are used as given (so
// MMRLambda 0 turns MMR off).
type SearchOptions struct {
	Mode       string  // ModeHybrid (default), ModeLexical or ModeVector
	Candidates int     // per ranker before fusion; default 100
	RRFK       float64 // reciprocal rank fusion constant; default 10 (measured, see DefaultSearchOptions)

	// Fusion weights. A document's score is the weighted sum, over the
	// rankings it appears in, of (RRFK+1)/(RRFK+rank) — 1 at rank 1 —
	// plus RecencyWeight·2^(-age/RecencyHalfLife), SalienceWeight·Salience,
	// DateWeight when it is about a date window the query names (About),
	// TimeWeight when the query asks when (AsksWhen) and it names a time
	// other than the day it was said ("yesterday", "last May"), and
	// SpeakerWeight when the query names its role (its speaker).
	// RerankWeight weighs the Reranker's ranking of the best RerankDepth
	// candidates (at least K), fused the same way.
	LexicalWeight, VectorWeight, RecencyWeight, SalienceWeight float64
	DateWeight, TimeWeight, SpeakerWeight, RerankWeight        float64
	RerankDepth                                                int // default 200

	RecencyHalfLife time.Duration // default 30 days
	// MMRLambda trades relevance (1) against novelty (0) when picking the
	// results from the fused candidates; 0 disables MMR.
	MMRLambda float64
	Now       func() time.Time // default time.Now
}

// DefaultSearchOptions returns the defaults, chosen on LoCoMo (categories
// 1–4, 1,536 questions, embedded index, wink SIF word vectors; turn
// recall@10; bench/README.md has the full tables):
//
//	hybrid, defaults                              0.772
//	  time weight 0                               0.769
//	  rerank weight 0 (no reranking)              0.744
//	  vector 0.6, rerank 0.5                      0.759
//	  RRFK 60, weights 1 : 1, no reranking        0.596 (session 1)
//	  speaker weight 0.3                          0.779, adversarial 0.908 → 0.828
//	lexical only                                  0.730
//	vector only                                   0.484
//
// With word vectors much weaker than BM25, a small RRF k makes the top of
// each list count and a lower vector weight keeps the vector side from
// pushing good lexical hits down; the soft-matching reranker is the
// vectors' best use. MMR at λ 0.7 is neutral on LoCoMo and kept for
// near-duplicate turns. Recency and salience are tie-breakers of the size
// of a few ranks. SpeakerWeight is off: it helps questions about a named
// speaker and hurts those that name the wrong one.
func DefaultSearchOptions() SearchOptions {
	return SearchOptions{
		Mode:            ModeHybrid,
		Candidates:      100,
		RRFK:            10,
		LexicalWeight:   1,
		VectorWeight:    0.4,
		RecencyWeight:   0.02,
		SalienceWeight:  0.05,
		DateWeight:      0.3,
		TimeWeight:      0.2,
		SpeakerWeight:   0,
		RerankWeight:    0.6,
		RerankDepth:     200,
		RecencyHalfLife: 30 * 24 * time.Hour,
		MMRLambda:       0.7,
		Now:             time.Now,
	}
}

// resolved fills in defaults.
func (o SearchOptions) resolved() SearchOptions {
	d := DefaultSearchOptions()
	if o.LexicalWeight == 0 && o.VectorWeight == 0 && o.RecencyWeight == 0 && o.SalienceWeight == 0 &&
		o.DateWeight == 0 && o.TimeWeight == 0 && o.SpeakerWeight == 0 && o.RerankWeight == 0 && o.MMRLambda == 0 {
		o.LexicalWeight, o.VectorWeight, o.RecencyWeight = d.LexicalWeight, d.VectorWeight, d.RecencyWeight
		o.SalienceWeight, o.DateWeight, o.MMRLambda = d.SalienceWeight, d.DateWeight, d.MMRLambda
		o.TimeWeight, o.SpeakerWeight, o.RerankWeight = d.TimeWeight, d.SpeakerWeight, d.RerankWeight
	}
	if o.RerankDepth <= 0 {
		o.RerankDepth = d.RerankDepth
	}
	if o.Mode == "" {
		o.Mode = d.Mode
	}
	if o.Candidates <= 0 {
		o.Candidates = d.Candidates
	}
	if o.RRFK <= 0 {
		o.RRFK = d.RRFK
	}
	if o.RecencyHalfLife <= 0 {
		o.RecencyHalfLife = d.RecencyHalfLife
	}
	if o.Now == nil {
		o.Now = d.Now
	}
	return o
}

// Query is one search.
type Query struct {
	Text   string
	K      int // results wanted; default 10
	Filter Filter
	// At is "now" for relative dates in Text and for recency; zero means
	// Opts.Now().
	At time.Time
	// Vector, when not nil, is Text's embedding, made by the caller (who
	// searches one text several times and embeds it once); all zeros means
	// no vector signal. Nil: Search embeds Text itself.
	Vector []float32
}

// Hit is one result with its provenance.
type Hit struct {
	Doc   Doc
	Score float64 // fused score; results are in MMR order when MMR is on
	// Lexical is the BM25 score and LexicalRank the best 1-based rank in
	// the lexical rankings (0: in none); Vector and VectorRank likewise
	// for cosine similarity. A dated query adds rankings restricted to its
	// window, so a rank may come from those.
	Lexical     float64
	LexicalRank int
	Vector      float64
	VectorRank  int
	// Recency is the decay factor 2^(-age/half-life) in (0, 1].
	Recency float64
	// InWindow reports that the document is about the date window the
	// query names (see ParseDateWindow and About).
	InWindow bool
	// Timed reports that the query asks when and the document names a
	// time (TimeWeight).
	Timed bool
	// Speaker reports that the query names the document's role.
	Speaker bool
	// Rerank is the Reranker's score, when it ranked the document.
	Rerank float64
}

// Reranker scores documents' texts against a query with a finer model
// than the first-stage rankers (wordvec's soft term matching), higher
// better. The embedded default implements it.
type Reranker interface {
	Rerank(ctx context.Context, query string, texts []string) ([]float32, error)
}

// ErrNoEmbedder is returned by a vector-mode search without an Embedder.
var ErrNoEmbedder = errors.New("recall: vector search needs an embedder")

// Searcher runs hybrid retrieval over an Index: lexical and vector
// rankings fused by weighted reciprocal rank fusion, plus recency,
// salience and a boost for documents in a date window the question names,
// then diversified by MMR. It is safe for concurrent use.
type Searcher struct {
	Index    Index
	Embedder Embedder // nil: lexical only
	Reranker Reranker // nil: none
	Opts     SearchOptions
	Log      *slog.Logger // nil: discard
}

// ranking is one ranked list feeding the fusion.
type ranking struct {
	res    []Scored
	weight float64
	lex    bool // lexical (or vector) scores for provenance
	dated  bool // ranks documents near a date window: only those about it count
	err    error
}

// cand is a candidate result being scored.
type cand struct {
	hit   Hit
	fused float64
}

// MentionLag is how long after a date window documents are still looked
// at for mentions of it: "last month" is said up to a month after.
const MentionLag = 31 * 24 * time.Hour

// maxMentionSpan is the longest date mention that makes a document about a
// shorter window: "in 2023" is not about 16 March 2023.
const maxMentionSpan = 62 * 24 * time.Hour

// About reports whether d is about the window w: it was said in w, or its
// text names a date in w (relative dates read from when it was said).
func About(d Doc, w Window) bool {
	return w.Contains(d.TS) || mentionsIn(DateMentions(d.Text, d.TS), w)
}

// mentionsIn reports whether one of a document's date mentions falls in w
// and is no wider than max(maxMentionSpan, w's span).
func mentionsIn(mentions []Window, w Window) bool {
	span := max(maxMentionSpan, w.Until.Sub(w.Since))
	for _, m := range mentions {
		if m.Until.Sub(m.Since) <= span && m.Overlaps(w) {
			return true
		}
	}
	return false
}

// AsksWhen reports whether a question asks for a time: it starts with
// "when", or asks "what date", "what time", "what day", "which day", "what
// year", "what month", "how long ago".
func AsksWhen(query string) bool {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) })
	if len(words) > 0 && words[0] == "when" {
		return true
	}
	for i := 1; i < len(words); i++ {
		switch words[i-1] + " " + words[i] {
		case "what date", "what time", "what day", "which day", "what year", "what month", "which year", "which month", "long ago":
			return true
		}
	}
	return false
}

// namesOtherTime reports whether a document said at ts with these date
// mentions names a time other than the day it was said: a turn that can
// answer "when".
func namesOtherTime(mentions []Window, ts time.Time) bool {
	for _, m := range mentions {
		if !m.Contains(ts) {
			return true
		}
	}
	return false
}

// namedRoles returns a test of whether the query names a role: every
// token of the role's name is among the query's tokens ("What did
// Caroline say" names the speaker Caroline). Role names are tokenized
// once per search.
func namedRoles(query string) func(role string) bool {
	qt := map[string]bool{}
	for _, t := range Tokens(query) {
		qt[t] = true
	}
	memo := map[string]bool{}
	return func(role string) bool {
		if role == "" {
			return false
		}
		named, ok := memo[role]
		if !ok {
			rt := Tokens(role)
			named = len(rt) > 0
			for _, t := range rt {
				named = named && qt[t]
			}
			memo[role] = named
		}
		return named
	}
}

// rerank adds the Reranker's opinion of the best RerankDepth candidates
// (by score so far) as one more ranking, fused like the others. A failing
// reranker is logged and ignored.
func (s *Searcher) rerank(ctx context.Context, query string, cands []*cand, o SearchOptions, k int, log *slog.Logger) {
	slices.SortStableFunc(cands, func(a, b *cand) int {
		return cmp.Or(cmp.Compare(b.hit.Score, a.hit.Score), cmp.Compare(a.hit.Doc.ID, b.hit.Doc.ID))
	})
	pool := cands[:min(len(cands), max(o.RerankDepth, k))]
	texts := make([]string, len(pool))
	for i, c := range pool {
		texts[i] = c.hit.Doc.Text
	}
	scores, err := s.Reranker.Rerank(ctx, query, texts)
	if err == nil && len(scores) != len(texts) {
		err = fmt.Errorf("reranker returned %d scores for %d texts", len(scores), len(texts))
	}
	if err != nil {
		log.Warn("recall: reranking failed, using fused scores", "err", err)
		return
	}
	idx := make([]int, len(pool))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	for rank, i := range idx {
		pool[i].hit.Rerank = float64(scores[i])
		pool[i].hit.Score += o.RerankWeight * (o.RRFK + 1) / (o.RRFK + float64(rank+1))
	}
}

// Search returns up to q.K hits, best first. In hybrid mode an embedder or
// vector failure degrades to lexical results with a warning rather than
// failing the search; so does an embedder that has not answered in half
// the time left to ctx's deadline (see EmbedQuery).
func (s *Searcher) Search(ctx context.Context, q Query) ([]Hit, error) {
	o := s.Opts.resolved()
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := q.K
	if k <= 0 {
		k = 10
	}
	at := q.At
	if at.IsZero() {
		at = o.Now()
	}
	lexical, vector := true, s.Embedder != nil
	switch o.Mode {
	case ModeHybrid:
	case ModeLexical:
		vector = false
	case ModeVector:
		if s.Embedder == nil {
			return nil, ErrNoEmbedder
		}
		lexical = false
	default:
		return nil, fmt.Errorf("recall: unknown search mode %q", o.Mode)
	}
	window, dated := ParseDateWindow(q.Text, at)
	if !dated && len(Tokens(q.Text)) == 0 {
		// No words and no date: nothing to look for.
		return nil, nil
	}
	// A dated question also ranks what was said in the window or soon
	// after it (when people still refer to it as "yesterday" or "last
	// month"); of those, the documents about the window (said in it, or
	// naming a date in it) count.
	var nearWindow Filter
	if dated {
		var ok bool
		if nearWindow, ok = narrow(q.Filter, Window{Since: window.Since, Until: window.Until.Add(MentionLag)}); !ok {
			dated = false
		}
	}

	var (
		rankings []*ranking
		wg       sync.WaitGroup
	)
	add := func(weight float64, lex, dateOnly bool, fn func() ([]Scored, error)) {
		r := &ranking{weight: weight, lex: lex, dated: dateOnly}
		rankings = append(rankings, r)
		wg.Go(func() { r.res, r.err = fn() })
	}
	if lexical {
		add(o.LexicalWeight, true, false, func() ([]Scored, error) { return s.Index.Lexical(ctx, q.Text, o.Candidates, q.Filter) })
		if dated {
			add(o.LexicalWeight, true, true, func() ([]Scored, error) { return s.Index.Lexical(ctx, q.Text, o.Candidates, nearWindow) })
		}
	}
	var vecErr error
	if vector {
		v, err := q.Vector, error(nil)
		if v == nil {
			v, err = s.EmbedQuery(ctx, q.Text)
		}
		switch {
		case err != nil:
			vecErr = err
		case isZero(v):
			// The embedder knows none of the words: no vector signal.
		default:
			add(o.VectorWeight, false, false, func() ([]Scored, error) { return s.Index.Vector(ctx, v, o.Candidates, q.Filter) })
			if dated {
				add(o.VectorWeight, false, true, func() ([]Scored, error) { return s.Index.Vector(ctx, v, o.Candidates, nearWindow) })
			}
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range rankings {
		if r.err == nil {
			continue
		}
		if r.lex || !lexical {
			return nil, fmt.Errorf("recall: search: %w", r.err)
		}
		vecErr = r.err
		r.res = nil
	}
	if vecErr != nil {
		if !lexical {
			return nil, vecErr
		}
		log.Warn("recall: vector search failed, using lexical results only", "err", vecErr)
	}

	// The candidates: every document of every ranking.
	byID := map[string]*cand{}
	var order []string
	for _, r := range rankings {
		for _, sc := range r.res {
			if byID[sc.ID] == nil {
				byID[sc.ID] = &cand{}
				order = append(order, sc.ID)
			}
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	docs, err := s.Index.Docs(ctx, order)
	if err != nil {
		return nil, fmt.Errorf("recall: search: %w", err)
	}
	// Dated questions and questions asking when read each candidate's
	// date mentions, once.
	asksWhen := o.TimeWeight > 0 && AsksWhen(q.Text)
	cands := make([]*cand, 0, len(docs))
	for _, d := range docs {
		c := byID[d.ID]
		if c == nil || c.hit.Doc.ID != "" {
			continue
		}
		c.hit.Doc = d
		c.hit.Recency = Recency(at.Sub(d.TS), o.RecencyHalfLife)
		if dated || asksWhen {
			mentions := DateMentions(d.Text, d.TS)
			c.hit.InWindow = dated && (window.Contains(d.TS) || mentionsIn(mentions, window))
			c.hit.Timed = asksWhen && namesOtherTime(mentions, d.TS)
		}
		cands = append(cands, c)
	}

	// Fuse: a window ranking counts only the documents about the window.
	for _, r := range rankings {
		rank := 0
		for _, sc := range r.res {
			c := byID[sc.ID]
			if c.hit.Doc.ID == "" || r.dated && !c.hit.InWindow {
				continue
			}
			rank++
			c.fused += r.weight * (o.RRFK + 1) / (o.RRFK + float64(rank))
			if r.lex && (c.hit.LexicalRank == 0 || rank < c.hit.LexicalRank) {
				c.hit.LexicalRank, c.hit.Lexical = rank, float64(sc.Score)
			}
			if !r.lex && (c.hit.VectorRank == 0 || rank < c.hit.VectorRank) {
				c.hit.VectorRank, c.hit.Vector = rank, float64(sc.Score)
			}
		}
	}
	named := namedRoles(q.Text)
	for _, c := range cands {
		d := c.hit.Doc
		c.hit.Score = c.fused + o.RecencyWeight*c.hit.Recency + o.SalienceWeight*float64(d.Salience)
		if c.hit.InWindow {
			c.hit.Score += o.DateWeight
		}
		if c.hit.Timed {
			c.hit.Score += o.TimeWeight
		}
		if named(d.Role) {
			c.hit.Speaker = true
			c.hit.Score += o.SpeakerWeight
		}
	}
	if o.Mode == ModeHybrid && s.Reranker != nil && o.RerankWeight > 0 && len(cands) > 1 {
		s.rerank(ctx, q.Text, cands, o, k, log)
	}
	slices.SortStableFunc(cands, func(a, b *cand) int {
		return cmp.Or(cmp.Compare(b.hit.Score, a.hit.Score), cmp.Compare(a.hit.Doc.ID, b.hit.Doc.ID))
	})
	hits := make([]Hit, len(cands))
	for i, c := range cands {
		hits[i] = c.hit
	}
	if vs, ok := s.Index.(VectorStore); ok && o.MMRLambda > 0 && len(hits) > 1 {
		pool := hits[:min(len(hits), max(3*k, 30))]
		ids := make([]string, len(pool))
		for i, h := range pool {
			ids[i] = h.Doc.ID
		}
		vecs, err := vs.Vectors(ctx, ids)
		if err != nil {
			log.Warn("recall: vectors for MMR unavailable, skipping it", "err", err)
		} else {
			return MMR(pool, vecs, o.MMRLambda, k), nil
		}
	}
	return hits[:min(k, len(hits))], nil
}

// EmbedQuery embeds a query's text as Search does, for a caller that
// passes it as Query.Vector to several searches. Under a deadline it
// waits at most half the time left, so that a search still has time to
// answer lexically when the embedder hangs.
func (s *Searcher) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if s.Embedder == nil {
		return nil, ErrNoEmbedder
	}
	// A hung or slow embedder may take at most half of what is left of
	// the search's time: the lexical half of a hybrid search still has the
	// rest to answer in.
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		defer cancel()
	}
	vecs, err := s.Embedder.Embed(ctx, []string{text})
	if err == nil && len(vecs) != 1 {
		err = fmt.Errorf("embedder returned %d vectors for 1 text", len(vecs))
	}
	if err != nil {
		return nil, fmt.Errorf("recall: embed query: %w", err)
	}
	return vecs[0], nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// narrow returns f restricted to w, and false when nothing can match.
func narrow(f Filter, w Window) (Filter, bool) {
	if f.Since.IsZero() || w.Since.After(f.Since) {
		f.Since = w.Since
	}
	if f.Until.IsZero() || w.Until.Before(f.Until) {
		f.Until = w.Until
	}
	return f, f.Since.Before(f.Until)
}

// Recency is the exponential decay 2^(-age/halfLife): 1 now (and for
// future times), ½ one half-life ago.
func Recency(age, halfLife time.Duration) float64 {
	if age <= 0 || halfLife <= 0 {
		return 1
	}
	return math.Exp2(-float64(age) / float64(halfLife))
}

// MMR picks up to k hits by maximal marginal relevance: each pick
// maximises λ·relevance − (1−λ)·(highest cosine similarity to a hit
// already picked), relevance being the hit's score scaled to [0, 1]
// within hits. vecs holds each hit's unit vector (nil: unknown, similar
// to nothing). hits must be sorted by score, best first.
func MMR(hits []Hit, vecs [][]float32, lambda float64, k int) []Hit {
	if len(hits) == 0 || k <= 0 {
		return nil
	}
	hi, lo := hits[0].Score, hits[len(hits)-1].Score
	rel := func(i int) float64 {
		if hi == lo {
			return 1
		}
		return (hits[i].Score - lo) / (hi - lo)
	}
	maxSim := make([]float64, len(hits))
	picked := make([]bool, len(hits))
	out := make([]Hit, 0, min(k, len(hits)))
	for len(out) < k && len(out) < len(hits) {
		best, bestV := -1, math.Inf(-1)
		for i := range hits {
			if picked[i] {
				continue
			}
			v := lambda*rel(i) - (1-lambda)*maxSim[i]
			if v > bestV {
				best, bestV = i, v
			}
		}
		picked[best] = true
		out = append(out, hits[best])
		for i := range hits {
			if !picked[i] {
				maxSim[i] = max(maxSim[i], cosine(vecs, i, best))
			}
		}
	}
	return out
}

// cosine is the cosine similarity of vecs[i] and vecs[j], 0 when either
// is missing.
func cosine(vecs [][]float32, i, j int) float64 {
	if i >= len(vecs) || j >= len(vecs) || vecs[i] == nil || len(vecs[i]) != len(vecs[j]) {
		return 0
	}
	var dot, a, b float64
	for n, x := range vecs[i] {
		y := float64(vecs[j][n])
		dot += float64(x) * y
		a += float64(x) * float64(x)
		b += y * y
	}
	if a == 0 || b == 0 {
		return 0
	}
	return dot / math.Sqrt(a*b)
}
