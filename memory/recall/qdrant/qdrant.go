// Package qdrant is the Qdrant backend of recall.Index, spoken over gRPC
// with github.com/qdrant/go-client.
//
// Documents live in two collections, as in mnemo's design: turns (and any
// kind other than tools) in Options.Collection ("mnemo-conversation"),
// tool calls and results in Options.ToolCollection ("mnemo-tool-cache").
// Each has a named dense vector "dense" (cosine, Options.Dim) and a named
// sparse vector "bm25" with Qdrant's IDF modifier, and a payload carrying
// the document (see README.md for the fields). Meta values and the
// lexical statistics live in a third, vector-less collection,
// Options.Collection + "-meta". Collections are created on first use.
//
// Point ids are UUIDv5 of the document id (see PointID), so upserting a
// document twice replaces it.
package qdrant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"

	"github.com/mnemo/mnemo/memory/recall"
)

// Defaults of Options.
const (
	DefaultAddr           = "localhost:6334"
	DefaultCollection     = "mnemo-conversation"
	DefaultToolCollection = "mnemo-tool-cache"
	// MetaSuffix makes the meta collection's name from Options.Collection.
	MetaSuffix     = "-meta"
	DefaultTimeout = 30 * time.Second
)

// MaxBatch is the most points one Upsert, Get or Delete call carries.
const MaxBatch = 256

const (
	denseName  = "dense" // named dense vector
	sparseName = "bm25"  // named sparse vector, IDF modifier

	// maxBatchBytes bounds the size of one upsert call.
	maxBatchBytes = 8 << 20
	// maxMessage is the largest gRPC message the client accepts.
	maxMessage = 64 << 20
	scrollPage = 1024
)

// Options configure Open.
type Options struct {
	// Addr is the host:port of Qdrant's gRPC API (DefaultAddr when empty;
	// the port defaults to 6334). An https:// prefix implies UseTLS.
	Addr string
	// APIKey is sent as the api-key header when set. It is never logged.
	APIKey string
	UseTLS bool
	// Collection holds turns and every kind but tools
	// (DefaultCollection when empty); ToolCollection holds
	// recall.KindTool documents (DefaultToolCollection when empty). The
	// meta collection is Collection + MetaSuffix.
	Collection     string
	ToolCollection string
	// Dim is the embedder's dimension; 0 makes a lexical-only index.
	Dim int
	// Log receives the backend's logs (discarded when nil).
	Log *slog.Logger
	// SkipCompatibilityCheck skips the client's server version check.
	SkipCompatibilityCheck bool
	// Timeout bounds each call to Qdrant (DefaultTimeout when zero).
	Timeout time.Duration
}

// Index is a recall.Index stored in Qdrant. It is safe for concurrent use;
// writes are serialised so that the lexical statistics stay consistent.
// One process should write a set of collections at a time.
type Index struct {
	client  *qc.Client
	log     *slog.Logger
	addr    string
	dim     int
	docs    string // collection of turns and all kinds but tools
	tools   string // collection of recall.KindTool documents
	meta    string // collection of meta values and statistics
	timeout time.Duration

	// life is held shared by every call and exclusively by Close, so that
	// no call uses the client while or after it closes.
	life   sync.RWMutex
	closed bool // guarded by life

	mu    sync.Mutex          // serialises writes; guards stats
	stats map[string]lexStats // by document collection
}

// enter starts a call; the caller must call ix.life.RUnlock when it ends.
func (ix *Index) enter() error {
	ix.life.RLock()
	if ix.closed {
		ix.life.RUnlock()
		return ErrClosed
	}
	return nil
}

var _ recall.Index = (*Index)(nil)

// Open connects to Qdrant, creates the collections that do not exist yet
// and checks those that do. A collection made for another dimension gives
// an error wrapping recall.ErrDimension: Drop the collections and
// re-embed. An unreachable server gives an error wrapping ErrUnavailable.
func Open(ctx context.Context, opts Options) (*Index, error) {
	ix, err := newIndex(opts)
	if err != nil {
		return nil, err
	}
	if err := ix.setup(ctx); err != nil {
		ix.client.Close()
		return nil, err
	}
	ix.log.Info("qdrant: index open", "addr", ix.addr, "collections", []string{ix.docs, ix.tools, ix.meta}, "dim", ix.dim)
	return ix, nil
}

// Drop deletes the collections opts names (documents, tool cache, meta),
// whatever their schema. It is the way out of recall.ErrDimension from
// Open: Drop, Open, re-embed.
func Drop(ctx context.Context, opts Options) error {
	ix, err := newIndex(opts)
	if err != nil {
		return err
	}
	defer ix.client.Close()
	for _, name := range []string{ix.docs, ix.tools, ix.meta} {
		if err := ix.dropCollection(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// newIndex validates opts and makes the client; it does not call Qdrant
// unless the compatibility check is on.
func newIndex(opts Options) (*Index, error) {
	if opts.Dim < 0 {
		return nil, fmt.Errorf("qdrant: negative dimension %d", opts.Dim)
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Collection == "" {
		opts.Collection = DefaultCollection
	}
	if opts.ToolCollection == "" {
		opts.ToolCollection = DefaultToolCollection
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	meta := opts.Collection + MetaSuffix
	if opts.Collection == opts.ToolCollection || opts.ToolCollection == meta {
		return nil, fmt.Errorf("qdrant: collections %q, %q and %q must differ", opts.Collection, opts.ToolCollection, meta)
	}
	host, port, tls, err := splitAddr(opts.Addr)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if port == 6333 {
		log.Warn("qdrant: port 6333 is Qdrant's REST port; the gRPC API is usually on 6334", "addr", addr)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // the client joins host and port itself
	}
	client, err := qc.NewClient(&qc.Config{
		Host:                   host,
		Port:                   port,
		APIKey:                 opts.APIKey,
		UseTLS:                 opts.UseTLS || tls,
		SkipCompatibilityCheck: opts.SkipCompatibilityCheck,
		PoolSize:               1,
		GrpcOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessage),
			grpc.MaxCallSendMsgSize(maxMessage),
		)},
	})
	if err != nil {
		return nil, fmt.Errorf("qdrant: client for %s: %w", addr, err)
	}
	return &Index{
		client:  client,
		log:     log,
		addr:    addr,
		dim:     opts.Dim,
		docs:    opts.Collection,
		tools:   opts.ToolCollection,
		meta:    meta,
		timeout: opts.Timeout,
		stats:   map[string]lexStats{},
	}, nil
}

// splitAddr parses "host", "host:port", "[v6]:port", optionally behind
// http://, https:// (TLS) or grpc://.
func splitAddr(addr string) (host string, port int, tls bool, err error) {
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http", "grpc":
		case "https", "grpcs":
			tls = true
		default:
			return "", 0, false, fmt.Errorf("qdrant: address %q: unknown scheme %q", addr, scheme)
		}
		u, perr := url.Parse("x://" + rest)
		if perr != nil {
			return "", 0, false, fmt.Errorf("qdrant: address %q: %w", addr, perr)
		}
		addr = u.Host
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		// No port.
		host, portStr = strings.Trim(addr, "[]"), "6334"
	}
	if host == "" {
		host = "localhost"
	}
	port, err = strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, false, fmt.Errorf("qdrant: address %q: bad port %q", addr, portStr)
	}
	return host, port, tls, nil
}

// callCtx bounds one call to Qdrant.
func (ix *Index) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ix.timeout)
}

// docColls are the document collections, documents collection first.
func (ix *Index) docColls() []string { return []string{ix.docs, ix.tools} }

// collectionOf routes a document by kind.
func (ix *Index) collectionOf(kind string) string {
	if kind == recall.KindTool {
		return ix.tools
	}
	return ix.docs
}

// targets are the collections a filter can match.
func (ix *Index) targets(f recall.Filter) []string {
	if len(f.Kinds) == 0 {
		return ix.docColls()
	}
	var docs, tools bool
	for _, k := range f.Kinds {
		if k == recall.KindTool {
			tools = true
		} else {
			docs = true
		}
	}
	var out []string
	if docs {
		out = append(out, ix.docs)
	}
	if tools {
		out = append(out, ix.tools)
	}
	return out
}

// checkVector checks a vector against the index's dimension.
func (ix *Index) checkVector(v []float32) error {
	if ix.dim == 0 || len(v) != ix.dim {
		return fmt.Errorf("%d-dimensional vector for a %d-dimensional index: %w", len(v), ix.dim, recall.ErrDimension)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("vector has a NaN or infinite component")
		}
	}
	return nil
}

// pending is a document on its way into a batch.
type pending struct {
	doc    recall.Doc
	vec    []float32 // nil: lexical only
	pid    string
	coll   string
	counts map[uint32]int
	n      int // length in tokens
}

// Upsert implements recall.Index. Points are sent at most MaxBatch per
// call, and each call waits until Qdrant has applied the write.
func (ix *Index) Upsert(ctx context.Context, docs []recall.Doc, vecs [][]float32) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.life.RUnlock()
	if vecs != nil && len(vecs) != len(docs) {
		return fmt.Errorf("qdrant: upsert: %d vectors for %d documents", len(vecs), len(docs))
	}
	for i, v := range vecs {
		if err := ix.checkVector(v); err != nil {
			return fmt.Errorf("qdrant: upsert %q: %w", docs[i].ID, err)
		}
	}
	last := make(map[string]int, len(docs)) // the last of duplicate ids wins
	for i, d := range docs {
		if d.ID == "" {
			return errors.New("qdrant: upsert: a document has an empty id")
		}
		last[d.ID] = i
	}
	items := make([]pending, 0, len(last))
	for i, d := range docs {
		if last[d.ID] != i {
			continue
		}
		p := pending{doc: d, pid: PointID(d.ID), coll: ix.collectionOf(d.Kind)}
		if vecs != nil {
			p.vec = vecs[i]
		}
		p.counts, p.n = termCounts(d)
		items = append(items, p)
	}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	for len(items) > 0 {
		n := batchLen(items)
		if err := ix.upsertBatchLocked(ctx, items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// batchLen is how many of items go in the next upsert call: at most
// MaxBatch, and about maxBatchBytes, but at least one.
func batchLen(items []pending) int {
	size := 0
	for i, it := range items {
		size += len(it.doc.Text) + len(it.doc.Context) + len(it.doc.ID) + 4*len(it.vec) + 8*len(it.counts) + 256
		if i == MaxBatch || (i > 0 && size > maxBatchBytes) {
			return i
		}
	}
	return len(items)
}

// upsertBatchLocked writes one batch: it looks up the points the batch
// replaces (in either collection, since a document may change kind),
// updates the lexical statistics, removes moved points from their old
// collection, writes the points and then the statistics.
func (ix *Index) upsertBatchLocked(ctx context.Context, items []pending) error {
	pids := make([]string, len(items))
	for i, it := range items {
		pids[i] = it.pid
	}
	prior := make(map[string]map[string]int, 2)
	for _, coll := range ix.docColls() {
		m, err := ix.lengths(ctx, coll, pids)
		if err != nil {
			return err
		}
		prior[coll] = m
	}
	stats := maps.Clone(ix.stats)
	moved := map[string][]string{}
	for _, it := range items {
		for coll, m := range prior {
			n, ok := m[it.pid]
			if !ok {
				continue
			}
			s := stats[coll]
			s.remove(n)
			stats[coll] = s
			if coll != it.coll {
				moved[coll] = append(moved[coll], it.pid)
			}
		}
		s := stats[it.coll]
		s.add(it.n)
		stats[it.coll] = s
	}
	for _, coll := range ix.docColls() {
		if err := ix.deletePoints(ctx, coll, moved[coll]); err != nil {
			return err
		}
	}
	points := map[string][]*qc.PointStruct{}
	for _, it := range items {
		vectors := map[string]*qc.Vector{}
		if sv := docSparse(it.counts, it.n, stats[it.coll].avgdl()); len(sv.indices) > 0 {
			vectors[sparseName] = qc.NewVectorSparse(sv.indices, sv.values)
		}
		if it.vec != nil {
			vectors[denseName] = qc.NewVectorDense(it.vec)
		}
		points[it.coll] = append(points[it.coll], &qc.PointStruct{
			Id:      qc.NewID(it.pid),
			Vectors: qc.NewVectorsMap(vectors),
			Payload: docPayload(it.doc, it.n),
		})
	}
	for _, coll := range ix.docColls() {
		if err := ix.upsertPoints(ctx, coll, points[coll]); err != nil {
			return err
		}
	}
	ix.stats = stats
	ix.log.Debug("qdrant: upserted", "points", len(items), "collection_docs", len(points[ix.docs]), "collection_tools", len(points[ix.tools]))
	return ix.saveStatsLocked(ctx)
}

// upsertPoints writes points to coll and waits for the write. If the
// collection has disappeared (dropped by another process), it is created
// again and the write retried once.
func (ix *Index) upsertPoints(ctx context.Context, coll string, pts []*qc.PointStruct) error {
	if len(pts) == 0 {
		return nil
	}
	err := ix.upsertOnce(ctx, coll, pts)
	if isNotFound(err) {
		ix.log.Warn("qdrant: collection vanished; creating it again", "collection", coll)
		if err := ix.ensure(ctx, coll); err != nil {
			return err
		}
		err = ix.upsertOnce(ctx, coll, pts)
	}
	return err
}

func (ix *Index) upsertOnce(ctx context.Context, coll string, pts []*qc.PointStruct) error {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	res, err := ix.client.Upsert(cctx, &qc.UpsertPoints{CollectionName: coll, Wait: qc.PtrOf(true), Points: pts})
	if err != nil {
		return ix.wrap("upsert into", coll, err)
	}
	if st := res.GetStatus(); st != qc.UpdateStatus_Completed {
		return fmt.Errorf("qdrant: upsert into %s: write not completed (status %v)", coll, st)
	}
	return nil
}

// lengths returns the stored token lengths of those of pids that are in
// coll. A missing collection holds nothing.
func (ix *Index) lengths(ctx context.Context, coll string, pids []string) (map[string]int, error) {
	pts, err := ix.getPoints(ctx, coll, pids, qc.NewWithPayloadInclude(keyLen))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(pts))
	for _, p := range pts {
		out[p.GetId().GetUuid()] = int(numberValue(p.GetPayload()[keyLen]))
	}
	return out, nil
}

// getPoints fetches points by id, MaxBatch per call. A missing collection
// holds nothing.
func (ix *Index) getPoints(ctx context.Context, coll string, pids []string, with *qc.WithPayloadSelector) ([]*qc.RetrievedPoint, error) {
	var out []*qc.RetrievedPoint
	for chunk := range slices.Chunk(pids, MaxBatch) {
		ids := make([]*qc.PointId, len(chunk))
		for i, pid := range chunk {
			ids[i] = qc.NewID(pid)
		}
		cctx, cancel := ix.callCtx(ctx)
		pts, err := ix.client.Get(cctx, &qc.GetPoints{CollectionName: coll, Ids: ids, WithPayload: with, WithVectors: qc.NewWithVectors(false)})
		cancel()
		if isNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, ix.wrap("get from", coll, err)
		}
		out = append(out, pts...)
	}
	return out, nil
}

// deletePoints deletes points by id, MaxBatch per call, and waits.
func (ix *Index) deletePoints(ctx context.Context, coll string, pids []string) error {
	for chunk := range slices.Chunk(pids, MaxBatch) {
		ids := make([]*qc.PointId, len(chunk))
		for i, pid := range chunk {
			ids[i] = qc.NewID(pid)
		}
		cctx, cancel := ix.callCtx(ctx)
		_, err := ix.client.Delete(cctx, &qc.DeletePoints{CollectionName: coll, Wait: qc.PtrOf(true), Points: qc.NewPointsSelector(ids...)})
		cancel()
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return ix.wrap("delete from", coll, err)
		}
	}
	return nil
}

// Delete implements recall.Index.
func (ix *Index) Delete(ctx context.Context, ids []string) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.life.RUnlock()
	if len(ids) == 0 {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for chunk := range slices.Chunk(ids, MaxBatch) {
		pids := make([]string, len(chunk))
		for i, id := range chunk {
			pids[i] = PointID(id)
		}
		stats := maps.Clone(ix.stats)
		for _, coll := range ix.docColls() {
			lens, err := ix.lengths(ctx, coll, pids)
			if err != nil {
				return err
			}
			if len(lens) == 0 {
				continue
			}
			s := stats[coll]
			found := make([]string, 0, len(lens))
			for pid, n := range lens {
				s.remove(n)
				found = append(found, pid)
			}
			stats[coll] = s
			if err := ix.deletePoints(ctx, coll, found); err != nil {
				return err
			}
		}
		ix.stats = stats
		if err := ix.saveStatsLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Lexical implements recall.Index: BM25 over recall.Tokens(query), the IDF
// part computed by Qdrant per collection.
func (ix *Index) Lexical(ctx context.Context, query string, k int, f recall.Filter) ([]recall.Scored, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.life.RUnlock()
	if k <= 0 {
		return nil, nil
	}
	q := querySparse(query)
	if len(q.indices) == 0 {
		return nil, nil
	}
	return ix.search(ctx, "lexical search", qc.NewQuerySparse(q.indices, q.values), sparseName, k, f, true)
}

// Vector implements recall.Index.
func (ix *Index) Vector(ctx context.Context, vec []float32, k int, f recall.Filter) ([]recall.Scored, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.life.RUnlock()
	if err := ix.checkVector(vec); err != nil {
		return nil, fmt.Errorf("qdrant: vector search: %w", err)
	}
	if k <= 0 {
		return nil, nil
	}
	return ix.search(ctx, "vector search", qc.NewQueryDense(vec), denseName, k, f, false)
}

// search runs one query in each collection f can match and merges the
// results by score (ties by id).
func (ix *Index) search(ctx context.Context, op string, q *qc.Query, using string, k int, f recall.Filter, positive bool) ([]recall.Scored, error) {
	filter := collectionFilter(f)
	var out []recall.Scored
	for _, coll := range ix.targets(f) {
		cctx, cancel := ix.callCtx(ctx)
		pts, err := ix.client.Query(cctx, &qc.QueryPoints{
			CollectionName: coll,
			Query:          q,
			Using:          qc.PtrOf(using),
			Filter:         filter,
			Limit:          qc.PtrOf(uint64(k)),
			WithPayload:    qc.NewWithPayloadInclude(keyID, keyID+rawSuffix),
		})
		cancel()
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, ix.wrap(op+" in", coll, err)
		}
		for _, p := range pts {
			if positive && !(p.GetScore() > 0) {
				continue
			}
			out = append(out, recall.Scored{ID: getString(p.GetPayload(), keyID), Score: p.GetScore()})
		}
	}
	slices.SortFunc(out, func(a, b recall.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// Docs implements recall.Index.
func (ix *Index) Docs(ctx context.Context, ids []string) ([]recall.Doc, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.life.RUnlock()
	if len(ids) == 0 {
		return nil, nil
	}
	pids := make([]string, len(ids))
	for i, id := range ids {
		pids[i] = PointID(id)
	}
	found := make(map[string]recall.Doc, len(ids))
	for _, coll := range ix.docColls() {
		pts, err := ix.getPoints(ctx, coll, pids, qc.NewWithPayload(true))
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			d, err := payloadDoc(p.GetPayload())
			if err != nil {
				return nil, fmt.Errorf("qdrant: docs from %s: %w", coll, err)
			}
			found[d.ID] = d
		}
	}
	out := make([]recall.Doc, 0, len(found))
	for _, id := range ids {
		if d, ok := found[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// Count implements recall.Index: the exact number of documents.
func (ix *Index) Count(ctx context.Context) (int, error) {
	if err := ix.enter(); err != nil {
		return 0, err
	}
	defer ix.life.RUnlock()
	total := 0
	for _, coll := range ix.docColls() {
		cctx, cancel := ix.callCtx(ctx)
		n, err := ix.client.Count(cctx, &qc.CountPoints{CollectionName: coll, Exact: qc.PtrOf(true)})
		cancel()
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return 0, ix.wrap("count", coll, err)
		}
		total += int(n)
	}
	return total, nil
}

// Meta implements recall.Index.
func (ix *Index) Meta(ctx context.Context, key string) (string, bool, error) {
	if err := ix.enter(); err != nil {
		return "", false, err
	}
	defer ix.life.RUnlock()
	pts, err := ix.getPoints(ctx, ix.meta, []string{uuid5(metaIDPrefix + key)}, qc.NewWithPayload(true))
	if err != nil {
		return "", false, err
	}
	if len(pts) == 0 {
		return "", false, nil
	}
	return getString(pts[0].GetPayload(), keyMetaValue), true, nil
}

// SetMeta implements recall.Index.
func (ix *Index) SetMeta(ctx context.Context, key, value string) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.life.RUnlock()
	p := map[string]*qc.Value{}
	putString(p, keyMetaKey, key)
	putString(p, keyMetaValue, value)
	return ix.upsertPoints(ctx, ix.meta, []*qc.PointStruct{metaPoint(uuid5(metaIDPrefix+key), p)})
}

// metaPoint is a vector-less point of the meta collection.
func metaPoint(pid string, payload map[string]*qc.Value) *qc.PointStruct {
	return &qc.PointStruct{Id: qc.NewID(pid), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{}), Payload: payload}
}

// Reset implements recall.Index: it drops and recreates the collections.
func (ix *Index) Reset(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.life.RUnlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, name := range []string{ix.docs, ix.tools, ix.meta} {
		if err := ix.dropCollection(ctx, name); err != nil {
			return err
		}
	}
	ix.stats = map[string]lexStats{}
	for _, name := range []string{ix.docs, ix.tools, ix.meta} {
		if err := ix.ensure(ctx, name); err != nil {
			return err
		}
	}
	ix.log.Info("qdrant: index reset", "collections", []string{ix.docs, ix.tools, ix.meta})
	return nil
}

// Close implements recall.Index. It waits for calls in flight; later
// calls return ErrClosed. Closing twice is harmless.
func (ix *Index) Close() error {
	ix.life.Lock()
	defer ix.life.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	if err := ix.client.Close(); err != nil {
		return fmt.Errorf("qdrant: close: %w", err)
	}
	return nil
}
