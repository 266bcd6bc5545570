package recallbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/recall"
)

// Retrieval modes.
const (
	ModeLexical = "lexical"
	ModeVector  = "vector"
	ModeHybrid  = "hybrid"
)

// SearchQuery is what a SearchFunc is asked.
type SearchQuery struct {
	Text string
	K    int
	At   time.Time // the "now" of the question; zero when unknown
}

// SearchFunc ranks the documents of one index for a query, best first,
// returning at most K document ids.
type SearchFunc func(ctx context.Context, q SearchQuery) ([]string, error)

// Backend is the recall system under test. cmd/recall wires the embedded
// index and recall.Searcher; tests wire small stand-ins.
type Backend struct {
	// Open returns a new, empty index kept in dir.
	Open func(ctx context.Context, dir string) (recall.Index, error)
	// Embedder embeds documents on their way into the index; nil indexes
	// without vectors (lexical mode only).
	Embedder recall.Embedder
	// Searcher returns the search of mode over idx.
	Searcher func(idx recall.Index, mode string) (SearchFunc, error)
}

// Options configure Run.
type Options struct {
	// Modes to measure, each over the same index (default lexical, vector
	// and hybrid; lexical only without an embedder).
	Modes []string
	// Ks are the cutoffs scored (default 5, 10, 25, 50); the search
	// depth is the largest.
	Ks []int
	// Batch is the number of documents per embed and upsert (default 128).
	Batch int
	// TempDir is where the per-group index directories are made (default
	// os.TempDir()); each is removed once measured.
	TempDir string
	// PerQuery keeps each query's ranking and scores in the result.
	PerQuery bool
	// ContextTurns is how many preceding turns of the same session each
	// document carries as its recall.Doc.Context (RecallDocs): 0 means
	// recall.ContextTurns, a negative number none.
	ContextTurns int
	// EmbedContext embeds each document's text and context
	// (recall.IndexText) rather than its text alone, which is what mnemo's
	// indexer does because it measures better (bench/README.md).
	EmbedContext bool
	// Entities, when set, turns on entity expansion under this archetype:
	// each group's documents build its entity graph (memory/graph's
	// deterministic extractor), and a query naming entities is searched
	// again with the names of related ones, that ranking fused in at the
	// archetype's expansion weight.
	Entities *graph.Archetype
	Log      *slog.Logger // progress; nil discards
}

// DefaultKs are the cutoffs LoCoMo reports.
func DefaultKs() []int { return []int{5, 10, 25, 50} }

// AllModes lists the modes in report order.
func AllModes() []string { return []string{ModeLexical, ModeVector, ModeHybrid} }

// Result is a benchmark run.
type Result struct {
	Dataset    string       `json:"dataset"`
	Groups     int          `json:"groups"`
	Docs       int          `json:"docs"`
	Queries    int          `json:"queries"`
	Ks         []int        `json:"ks"`
	Embedder   string       `json:"embedder,omitempty"` // "" when lexical only
	Index      IndexStats   `json:"index"`
	Modes      []ModeResult `json:"modes"`
	References []Reference  `json:"references,omitempty"`
	Notes      []string     `json:"notes,omitempty"`
}

// IndexStats measure the indexing of every group.
type IndexStats struct {
	Time  time.Duration `json:"time_ns"`       // embedding and upserts
	Embed time.Duration `json:"embed_time_ns"` // of which embedding
	Bytes int64         `json:"bytes"`         // on disk, all groups, after Close
}

// ModeResult is one mode's scores and latency.
type ModeResult struct {
	Mode    string        `json:"mode"`
	P50     time.Duration `json:"query_p50_ns"`
	P95     time.Duration `json:"query_p95_ns"`
	Rows    []Row         `json:"rows"`
	Queries []QueryResult `json:"queries,omitempty"`
}

// Row is the mean of the scores of a set of queries: a category, the
// overall set, a separately reported category, or all of them.
type Row struct {
	Key   string `json:"key"`   // the category, "overall" or "all"
	Label string `json:"label"` // e.g. "1 multi-hop", "overall (1–4)"
	N     int    `json:"n"`
	// Turn and Session hold one entry per cutoff of Result.Ks.
	Turn    []Metrics `json:"turn"`
	Session []Metrics `json:"session"`
}

// QueryResult is one query's ranking and scores.
type QueryResult struct {
	Group    string        `json:"group"`
	ID       string        `json:"id"`
	Category string        `json:"category"`
	Ranked   []string      `json:"ranked"`
	Latency  time.Duration `json:"latency_ns"`
	Turn     []Metrics     `json:"turn"`
	Session  []Metrics     `json:"session"`
}

// Row keys of the aggregate rows.
const (
	KeyOverall = "overall"
	KeyAll     = "all"
)

// Run indexes every group of ds in a fresh index through the real indexing
// path (recall.Doc → Embedder → Index.Upsert, in batches), asks each of the
// group's queries in every mode, and scores the rankings.
func Run(ctx context.Context, ds *Dataset, b Backend, o Options) (*Result, error) {
	o, err := o.withDefaults(b)
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	docs, queries := ds.Counts()
	res := &Result{
		Dataset:    ds.Name,
		Groups:     len(ds.Groups),
		Docs:       docs,
		Queries:    queries,
		Ks:         o.Ks,
		References: ds.References,
	}
	if b.Embedder != nil {
		res.Embedder = fmt.Sprintf("%s (%d dims)", b.Embedder.Name(), b.Embedder.Dim())
	}
	depth := slices.Max(o.Ks)
	latencies := make([][]time.Duration, len(o.Modes))
	perMode := make([][]QueryResult, len(o.Modes))
	for gi, g := range ds.Groups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, results, err := runGroup(ctx, g, b, o, depth)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.ID, err)
		}
		res.Index.Time += st.Time
		res.Index.Embed += st.Embed
		res.Index.Bytes += st.Bytes
		for mi := range o.Modes {
			perMode[mi] = append(perMode[mi], results[mi]...)
			for _, q := range results[mi] {
				latencies[mi] = append(latencies[mi], q.Latency)
			}
		}
		log.Info("group done", "group", g.ID, "n", gi+1, "of", len(ds.Groups),
			"docs", len(g.Docs), "queries", len(g.Queries), "index", st.Time.Round(time.Millisecond))
	}
	for mi, mode := range o.Modes {
		mr := ModeResult{
			Mode: mode,
			P50:  Percentile(latencies[mi], 50),
			P95:  Percentile(latencies[mi], 95),
			Rows: aggregate(ds, perMode[mi], len(o.Ks)),
		}
		if o.PerQuery {
			mr.Queries = perMode[mi]
		}
		res.Modes = append(res.Modes, mr)
	}
	return res, nil
}

func (o Options) withDefaults(b Backend) (Options, error) {
	if b.Open == nil || b.Searcher == nil {
		return o, errors.New("recallbench: backend needs Open and Searcher")
	}
	if len(o.Modes) == 0 {
		o.Modes = AllModes()
		if b.Embedder == nil {
			o.Modes = []string{ModeLexical}
		}
	}
	for _, m := range o.Modes {
		switch m {
		case ModeLexical:
		case ModeVector, ModeHybrid:
			if b.Embedder == nil {
				return o, fmt.Errorf("recallbench: mode %q needs an embedder", m)
			}
		default:
			return o, fmt.Errorf("recallbench: unknown mode %q (want lexical, vector or hybrid)", m)
		}
	}
	if len(o.Ks) == 0 {
		o.Ks = DefaultKs()
	}
	o.Ks = slices.Clone(o.Ks)
	slices.Sort(o.Ks)
	o.Ks = slices.Compact(o.Ks)
	if o.Ks[0] < 1 {
		return o, fmt.Errorf("recallbench: cutoff %d is below 1", o.Ks[0])
	}
	if o.Batch <= 0 {
		o.Batch = 128
	}
	if o.ContextTurns == 0 {
		o.ContextTurns = recall.ContextTurns
	}
	return o, nil
}

// runGroup indexes one group and asks its queries in every mode.
func runGroup(ctx context.Context, g *Group, b Backend, o Options, depth int) (st IndexStats, results [][]QueryResult, err error) {
	dir, err := os.MkdirTemp(o.TempDir, "recallbench-*")
	if err != nil {
		return st, nil, fmt.Errorf("index dir: %w", err)
	}
	defer os.RemoveAll(dir)
	idx, err := b.Open(ctx, dir)
	if err != nil {
		return st, nil, fmt.Errorf("open index: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			idx.Close()
		}
	}()

	docs := RecallDocs(g, o.ContextTurns)
	session := make(map[string]string, len(g.Docs))
	for _, d := range g.Docs {
		session[d.ID] = d.Session
		if d.Session == "" {
			session[d.ID] = d.ID
		}
	}
	start := time.Now()
	st.Embed, err = indexDocs(ctx, idx, b.Embedder, docs, o.Batch, o.EmbedContext)
	if err != nil {
		return st, nil, err
	}
	st.Time = time.Since(start)
	sessionOf := func(id string) string {
		if s, ok := session[id]; ok {
			return s
		}
		return id
	}

	var entities *graph.Graph
	if o.Entities != nil {
		entities = GroupGraph(g, *o.Entities)
	}
	for _, mode := range o.Modes {
		search, err := b.Searcher(idx, mode)
		if err != nil {
			return st, nil, fmt.Errorf("%s searcher: %w", mode, err)
		}
		if entities != nil {
			search = expandSearch(search, entities)
		}
		rs := make([]QueryResult, 0, len(g.Queries))
		for _, q := range g.Queries {
			t0 := time.Now()
			ranked, err := search(ctx, SearchQuery{Text: q.Text, K: depth, At: q.Date})
			lat := time.Since(t0)
			if err != nil {
				return st, nil, fmt.Errorf("%s search %s: %w", mode, q.ID, err)
			}
			ranked = dedupe(ranked)
			if len(ranked) > depth {
				ranked = ranked[:depth]
			}
			goldSessions := Collapse(q.Relevant, sessionOf)
			sessions := Collapse(ranked, sessionOf)
			r := QueryResult{Group: g.ID, ID: q.ID, Category: q.Category, Ranked: ranked, Latency: lat}
			for _, k := range o.Ks {
				r.Turn = append(r.Turn, Score(ranked, q.Relevant, k))
				r.Session = append(r.Session, Score(sessions, goldSessions, k))
			}
			rs = append(rs, r)
		}
		results = append(results, rs)
	}

	closed = true
	if err := idx.Close(); err != nil {
		return st, nil, fmt.Errorf("close index: %w", err)
	}
	st.Bytes, err = DirSize(dir)
	if err != nil {
		return st, nil, err
	}
	return st, results, nil
}

// RecallDoc is the recall.Doc of a benchmark document of group.
func RecallDoc(group string, d Doc) recall.Doc {
	return recall.Doc{
		ID:      d.ID,
		Kind:    recall.KindTurn,
		Role:    d.Speaker,
		Mode:    "text",
		Channel: "chat",
		Session: group,
		Text:    d.Text,
		TS:      d.TS,
	}
}

// RecallDocs are the recall.Docs of g's documents, in order, each turn
// with the text of up to contextTurns documents before it in the same
// session as its Context (recall.Preceding, as mnemo's indexer does). A
// session's documents are taken to be consecutive, in order, as LoCoMo's
// are: a session that resumes after another starts again without context,
// and a document without a session has none. contextTurns <= 0 gives none.
func RecallDocs(g *Group, contextTurns int) []recall.Doc {
	docs := make([]recall.Doc, len(g.Docs))
	prev := recall.NewPreceding(contextTurns)
	for i, d := range g.Docs {
		if i == 0 || d.Session == "" || d.Session != g.Docs[i-1].Session {
			prev.Reset()
		}
		docs[i] = RecallDoc(g.ID, d)
		if d.Session != "" {
			docs[i].Context = prev.Context()
			prev.Push(d.Text)
		}
	}
	return docs
}

// IndexDocs stores docs in idx the way mnemo's indexer does: batch by
// batch, embedding each batch's Text (when emb is not nil) and upserting
// it with its vectors. It returns the time spent embedding.
func IndexDocs(ctx context.Context, idx recall.Index, emb recall.Embedder, docs []recall.Doc, batch int) (time.Duration, error) {
	return indexDocs(ctx, idx, emb, docs, batch, false)
}

// indexDocs is IndexDocs, embedding recall.IndexText (text and context)
// instead of Text when embedContext is set.
func indexDocs(ctx context.Context, idx recall.Index, emb recall.Embedder, docs []recall.Doc, batch int, embedContext bool) (time.Duration, error) {
	if batch <= 0 {
		batch = len(docs)
	}
	var embed time.Duration
	for chunk := range slices.Chunk(docs, max(batch, 1)) {
		var vecs [][]float32
		if emb != nil {
			texts := make([]string, len(chunk))
			for i, d := range chunk {
				texts[i] = d.Text
				if embedContext {
					texts[i] = recall.IndexText(d)
				}
			}
			t0 := time.Now()
			var err error
			vecs, err = emb.Embed(ctx, texts)
			embed += time.Since(t0)
			if err != nil {
				return embed, fmt.Errorf("embed: %w", err)
			}
			if len(vecs) != len(chunk) {
				return embed, fmt.Errorf("embed: %d vectors for %d texts", len(vecs), len(chunk))
			}
		}
		if err := idx.Upsert(ctx, chunk, vecs); err != nil {
			return embed, fmt.Errorf("upsert: %w", err)
		}
	}
	return embed, nil
}

// DirSize is the total size of the regular files under dir.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("index size: %w", err)
	}
	return n, nil
}

// Percentile is the p-th percentile (nearest rank) of ds; zero when empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(float64(len(s)) * p / 100))
	return s[min(max(rank, 1), len(s))-1]
}

// aggregate averages per-query scores into rows: each category scored in
// the overall figure, the overall row, each separate category, and all
// queries (only when some category is separate).
func aggregate(ds *Dataset, rs []QueryResult, nk int) []Row {
	byCat := map[string][]QueryResult{}
	for _, r := range rs {
		byCat[r.Category] = append(byCat[r.Category], r)
	}
	cats := make([]string, 0, len(byCat))
	for c := range byCat {
		cats = append(cats, c)
	}
	slices.SortFunc(cats, categoryLess)
	var main, sep []string
	for _, c := range cats {
		if slices.Contains(ds.Separate, c) {
			sep = append(sep, c)
		} else {
			main = append(main, c)
		}
	}
	var rows []Row
	var overall []QueryResult
	for _, c := range main {
		rows = append(rows, mean(c, categoryLabel(c, ds.Categories), byCat[c], nk))
		overall = append(overall, byCat[c]...)
	}
	rows = append(rows, mean(KeyOverall, "overall"+span(main), overall, nk))
	for _, c := range sep {
		rows = append(rows, mean(c, categoryLabel(c, ds.Categories), byCat[c], nk))
	}
	if len(sep) > 0 {
		rows = append(rows, mean(KeyAll, "all"+span(cats), rs, nk))
	}
	return rows
}

func mean(key, label string, rs []QueryResult, nk int) Row {
	row := Row{Key: key, Label: label, N: len(rs), Turn: make([]Metrics, nk), Session: make([]Metrics, nk)}
	if len(rs) == 0 {
		return row
	}
	for _, r := range rs {
		for i := range nk {
			add(&row.Turn[i], r.Turn[i])
			add(&row.Session[i], r.Session[i])
		}
	}
	n := float64(len(rs))
	for i := range nk {
		div(&row.Turn[i], n)
		div(&row.Session[i], n)
	}
	return row
}

func add(a *Metrics, b Metrics) {
	a.Recall += b.Recall
	a.Hit += b.Hit
	a.All += b.All
	a.NDCG += b.NDCG
}

func div(a *Metrics, n float64) {
	a.Recall /= n
	a.Hit /= n
	a.All /= n
	a.NDCG /= n
}

func categoryLabel(c string, names map[string]string) string {
	if c == "" {
		c = "(none)"
	}
	if name := names[c]; name != "" {
		return c + " " + name
	}
	return c
}

// span names a set of categories for a row label: " (1–4)" for 1, 2, 3,
// 4; " (1, 3)" or " (a, b)" otherwise; "" when there are more than six
// that are not a range.
func span(cats []string) string {
	if len(cats) == 0 {
		return ""
	}
	ns := make([]int, len(cats))
	numeric := true
	for i, c := range cats {
		n, err := strconv.Atoi(c)
		numeric = numeric && err == nil
		ns[i] = n
	}
	if numeric && len(ns) > 2 {
		consecutive := true
		for i := 1; i < len(ns); i++ {
			consecutive = consecutive && ns[i] == ns[i-1]+1
		}
		if consecutive {
			return fmt.Sprintf(" (%d–%d)", ns[0], ns[len(ns)-1])
		}
	}
	if len(cats) > 6 {
		return ""
	}
	labels := make([]string, len(cats))
	for i, c := range cats {
		labels[i] = cmp.Or(c, "(none)")
	}
	return " (" + strings.Join(labels, ", ") + ")"
}

// GroupGraph is the entity graph of a group's documents, each a user
// turn by its speaker.
func GroupGraph(g *Group, arch graph.Archetype) *graph.Graph {
	gr := graph.New(arch)
	for _, d := range g.Docs {
		gr.Add(graph.Event{ID: d.ID, Session: d.Session, TS: d.TS, Type: graph.EventUser, Actor: "user", Speaker: d.Speaker, Text: d.Text})
	}
	return gr
}

// expandSearch is search with entity expansion: a query naming entities
// of gr is searched again with the names of related entities, and the
// two rankings fused, the second at the archetype's expansion weight.
func expandSearch(search SearchFunc, gr *graph.Graph) SearchFunc {
	x := gr.Archetype().Context.Expansion
	return func(ctx context.Context, q SearchQuery) ([]string, error) {
		ranked, err := search(ctx, q)
		if err != nil {
			return nil, err
		}
		more := graph.ExpandedQuery(q.Text, gr.Expand(q.Text, x.Related))
		if more == "" {
			return ranked, nil
		}
		eq := q
		eq.Text = more
		expanded, err := search(ctx, eq)
		if err != nil {
			return nil, err
		}
		return graph.Fuse(ranked, expanded, x.Weight), nil
	}
}
