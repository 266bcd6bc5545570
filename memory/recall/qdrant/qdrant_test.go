package qdrant

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
)

// backend is a Qdrant the tests run against: the in-process stand-in, or
// a real server at $QDRANT_ADDR (with $QDRANT_API_KEY if set).
type backend struct {
	name   string
	addr   string
	apiKey string
	fake   *qdranttest.Server // nil for a real Qdrant
}

// standIn starts a stand-in that stops when the test ends.
func standIn(t *testing.T, opts qdranttest.Options) *qdranttest.Server {
	t.Helper()
	srv, err := qdranttest.Start(opts)
	if err != nil {
		t.Fatalf("qdranttest.Start: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// backends runs fn against the stand-in, and against a real Qdrant when
// QDRANT_ADDR is set (skipping that subtest with a message otherwise).
func backends(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Run("standin", func(t *testing.T) {
		srv := standIn(t, qdranttest.Options{})
		fn(t, backend{name: "standin", addr: srv.Addr(), fake: srv})
	})
	t.Run("real", func(t *testing.T) {
		addr := os.Getenv("QDRANT_ADDR")
		if addr == "" {
			t.Skip("QDRANT_ADDR is not set: no real Qdrant to test against (see README.md to start one)")
		}
		fn(t, backend{name: "real", addr: addr, apiKey: os.Getenv("QDRANT_API_KEY")})
	})
}

// uniqueOptions returns options with collection names no other test uses,
// and drops those collections when the test ends.
func uniqueOptions(t *testing.T, b backend, dim int) Options {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("rand: %v", err)
	}
	prefix := "mnemo-test-" + hex.EncodeToString(r[:])
	opts := Options{
		Addr:                   b.addr,
		APIKey:                 b.apiKey,
		Collection:             prefix + "-conversation",
		ToolCollection:         prefix + "-tool-cache",
		Dim:                    dim,
		Log:                    slog.New(slog.NewTextHandler(t.Output(), nil)),
		SkipCompatibilityCheck: true,
		Timeout:                20 * time.Second,
	}
	t.Cleanup(func() {
		if err := Drop(context.Background(), opts); err != nil {
			t.Errorf("Drop: %v", err)
		}
	})
	return opts
}

func mustOpen(t *testing.T, opts Options) *Index {
	t.Helper()
	ix, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// rawClient is a plain go-client connection for inspecting what the
// backend stored.
func rawClient(t *testing.T, b backend) *qc.Client {
	t.Helper()
	host, port, _, err := splitAddr(b.addr)
	if err != nil {
		t.Fatalf("splitAddr: %v", err)
	}
	c, err := qc.NewClient(&qc.Config{Host: host, Port: port, APIKey: b.apiKey, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatalf("qdrant.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestQdrantConformance(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		recalltest.RunIndexConformance(t, func(t *testing.T, dim int) recall.Index {
			return mustOpenNoCleanup(t, uniqueOptions(t, b, dim))
		})
	})
}

// mustOpenNoCleanup opens an index the caller closes (the suite does).
func mustOpenNoCleanup(t *testing.T, opts Options) *Index {
	t.Helper()
	ix, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ix
}

var t0 = time.Date(2026, 3, 10, 5, 0, 0, 0, time.UTC)

func turn(id, text string) recall.Doc {
	return recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Mode: "text", Channel: "chat", Session: "s1", Text: text, TS: t0}
}

func tool(id, text string) recall.Doc {
	return recall.Doc{ID: id, Kind: recall.KindTool, Role: "tool", Mode: "text", Channel: "web_search", Session: "s1", Text: text, TS: t0}
}

// pointsIn lists the document ids stored in a collection, sorted.
func pointsIn(t *testing.T, c *qc.Client, coll string) []string {
	t.Helper()
	pts, err := c.Scroll(context.Background(), &qc.ScrollPoints{
		CollectionName: coll,
		Limit:          qc.PtrOf(uint32(1000)),
		WithPayload:    qc.NewWithPayloadInclude(keyID),
	})
	if err != nil {
		t.Fatalf("Scroll(%s): %v", coll, err)
	}
	var ids []string
	for _, p := range pts {
		ids = append(ids, p.GetPayload()[keyID].GetStringValue())
	}
	slices.Sort(ids)
	return ids
}

func TestRouting(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 4)
		ix := mustOpen(t, opts)
		raw := rawClient(t, b)
		other := turn("other", "a question about the weather")
		other.Kind = "note" // any kind but tools shares the conversation collection
		docs := []recall.Doc{turn("t1", "what is the weather in Lisbon"), tool("x1", "weather in Lisbon: sunny"), other}
		if err := ix.Upsert(ctx, docs, [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if got, want := pointsIn(t, raw, opts.Collection), []string{"other", "t1"}; !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", opts.Collection, got, want)
		}
		if got, want := pointsIn(t, raw, opts.ToolCollection), []string{"x1"}; !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", opts.ToolCollection, got, want)
		}

		tests := []struct {
			name  string
			kinds []string
			want  []string
		}{
			{"all", nil, []string{"other", "t1", "x1"}},
			{"tools", []string{recall.KindTool}, []string{"x1"}},
			{"turns", []string{recall.KindTurn}, []string{"t1"}},
			{"note", []string{"note"}, []string{"other"}},
			{"turns and tools", []string{recall.KindTurn, recall.KindTool}, []string{"t1", "x1"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := ix.Lexical(ctx, "weather", 10, recall.Filter{Kinds: tt.kinds})
				if err != nil {
					t.Fatalf("Lexical: %v", err)
				}
				if got := sortedIDs(res); !slices.Equal(got, tt.want) {
					t.Errorf("Lexical(kinds %v) = %v, want %v", tt.kinds, got, tt.want)
				}
				res, err = ix.Vector(ctx, []float32{1, 1, 1, 0}, 10, recall.Filter{Kinds: tt.kinds})
				if err != nil {
					t.Fatalf("Vector: %v", err)
				}
				if got := sortedIDs(res); !slices.Equal(got, tt.want) {
					t.Errorf("Vector(kinds %v) = %v, want %v", tt.kinds, got, tt.want)
				}
			})
		}

		// A document that changes kind moves collection, it is not duplicated.
		moved := tool("t1", "now a tool result")
		if err := ix.Upsert(ctx, []recall.Doc{moved}, nil); err != nil {
			t.Fatalf("Upsert(moved): %v", err)
		}
		if got, want := pointsIn(t, raw, opts.Collection), []string{"other"}; !slices.Equal(got, want) {
			t.Errorf("after the move %s holds %v, want %v", opts.Collection, got, want)
		}
		if got, want := pointsIn(t, raw, opts.ToolCollection), []string{"t1", "x1"}; !slices.Equal(got, want) {
			t.Errorf("after the move %s holds %v, want %v", opts.ToolCollection, got, want)
		}
		if n, err := ix.Count(ctx); err != nil || n != 3 {
			t.Errorf("Count = %d, %v; want 3", n, err)
		}
	})
}

func sortedIDs(res []recall.Scored) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out
}

func TestPointIDs(t *testing.T) {
	// Values from Python: uuid.uuid5(uuid.NAMESPACE_URL, "mnemo:doc:" + id).
	tests := []struct{ id, want string }{
		{"a", "e8301fb2-e7e9-5f61-bd0b-3af19c62498e"},
		{"01HX0000000000000000000000", "44822702-d42e-58d1-af1a-6ffc1586527f"},
		{"", "b7bdb3e4-81c7-5adc-9168-80b53522b9ed"},
	}
	for _, tt := range tests {
		if got := PointID(tt.id); got != tt.want {
			t.Errorf("PointID(%q) = %s, want %s", tt.id, got, tt.want)
		}
	}
	if got, want := uuid5(metaIDPrefix+"cursor"), "61880d4d-d447-57eb-ad78-f9f2fd261ed3"; got != want {
		t.Errorf("uuid5(meta cursor) = %s, want %s", got, want)
	}

	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 0)
		ix := mustOpen(t, opts)
		for range 2 { // the second upsert replaces, it does not add
			if err := ix.Upsert(ctx, []recall.Doc{turn("a", "hello there")}, nil); err != nil {
				t.Fatalf("Upsert: %v", err)
			}
		}
		pts, err := rawClient(t, b).Get(ctx, &qc.GetPoints{
			CollectionName: opts.Collection,
			Ids:            []*qc.PointId{qc.NewID(tests[0].want)},
			WithPayload:    qc.NewWithPayload(true),
		})
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if len(pts) != 1 || pts[0].GetPayload()[keyID].GetStringValue() != "a" {
			t.Fatalf("point %s = %v, want the document a", tests[0].want, pts)
		}
		p := pts[0].GetPayload()
		if got := p[keyTSMillis].GetIntegerValue(); got != t0.UnixMilli() {
			t.Errorf("payload ts_ms = %d, want %d", got, t0.UnixMilli())
		}
		if got := p[keyTS].GetStringValue(); got != "2026-03-10T05:00:00Z" {
			t.Errorf("payload ts = %q, want RFC 3339", got)
		}
		if n, err := ix.Count(ctx); err != nil || n != 1 {
			t.Errorf("Count = %d, %v; want 1", n, err)
		}
	})
}

func TestBatching(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 4)
		ix := mustOpen(t, opts)
		const n = 1000
		docs := make([]recall.Doc, n)
		vecs := make([][]float32, n)
		ids := make([]string, n)
		for i := range docs {
			docs[i] = turn(fmt.Sprintf("d%04d", i), fmt.Sprintf("batched document number %d about topic%d", i, i%10))
			if i%3 == 0 {
				docs[i].Kind = recall.KindTool
			}
			vecs[i] = []float32{1, float32(i), float32(i % 7), 0.5}
			ids[i] = docs[i].ID
		}
		if err := ix.Upsert(ctx, docs, vecs); err != nil {
			t.Fatalf("Upsert(%d): %v", n, err)
		}
		if got, err := ix.Count(ctx); err != nil || got != n {
			t.Errorf("Count = %d, %v; want %d", got, err, n)
		}
		slices.Reverse(ids)
		got, err := ix.Docs(ctx, ids)
		if err != nil {
			t.Fatalf("Docs: %v", err)
		}
		gotIDs := make([]string, len(got))
		for i, d := range got {
			gotIDs[i] = d.ID
		}
		if diff := cmp.Diff(ids, gotIDs); diff != "" {
			t.Errorf("Docs(%d ids, reversed) order (-want +got):\n%s", n, diff)
		}
		res, err := ix.Lexical(ctx, "topic7", 1000, recall.Filter{})
		if err != nil || len(res) != n/10 {
			t.Errorf("Lexical(topic7) = %d results, %v; want %d", len(res), err, n/10)
		}
		if b.fake == nil {
			return
		}
		points := map[string]int{}
		for _, u := range b.fake.Upserts() {
			if u.Points > MaxBatch {
				t.Errorf("an upsert into %s carried %d points, more than %d", u.Collection, u.Points, MaxBatch)
			}
			if !u.Wait {
				t.Errorf("an upsert into %s did not wait for the write", u.Collection)
			}
			points[u.Collection] += u.Points
		}
		if got, want := points[opts.Collection]+points[opts.ToolCollection], n; got != want {
			t.Errorf("upserted %d document points, want %d", got, want)
		}
	})
}

func TestAPIKey(t *testing.T) {
	srv := standIn(t, qdranttest.Options{APIKey: "s3cret"})
	b := backend{addr: srv.Addr(), fake: srv}
	tests := []struct {
		name    string
		key     string
		wantErr bool
	}{
		{"missing", "", true},
		{"wrong", "guess", true},
		{"right", "s3cret", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			opts := Options{
				Addr: b.addr, APIKey: tt.key, Dim: 4, SkipCompatibilityCheck: true,
				Collection: "c-" + tt.name, ToolCollection: "t-" + tt.name,
				Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			}
			ix, err := Open(context.Background(), opts)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if err := ix.Upsert(context.Background(), []recall.Doc{turn("a", "with a key")}, nil); err != nil {
					t.Errorf("Upsert: %v", err)
				}
				ix.Close()
				if strings.Contains(logs.String(), "s3cret") {
					t.Errorf("the logs leak the key:\n%s", logs.String())
				}
				return
			}
			if err == nil {
				ix.Close()
				t.Fatalf("Open with key %q succeeded, want a refusal", tt.key)
			}
			if !errors.Is(err, ErrUnauthorized) {
				t.Errorf("Open error = %v, want ErrUnauthorized", err)
			}
			if got := status.Code(err); got != codes.PermissionDenied {
				t.Errorf("status code = %v, want PermissionDenied", got)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q leaks the key", err)
			}
		})
	}
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	t.Run("open", func(t *testing.T) {
		addr := deadAddr(t)
		_, err := Open(ctx, Options{Addr: addr, Dim: 4, SkipCompatibilityCheck: true})
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Open(%s) error = %v, want ErrUnavailable", addr, err)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name the address %s", err, addr)
		}
	})
	t.Run("after open", func(t *testing.T) {
		srv, err := qdranttest.Start(qdranttest.Options{})
		if err != nil {
			t.Fatalf("qdranttest.Start: %v", err)
		}
		ix := mustOpen(t, Options{Addr: srv.Addr(), Dim: 4, SkipCompatibilityCheck: true})
		if err := ix.Upsert(ctx, []recall.Doc{turn("a", "before the outage")}, nil); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		srv.Close()
		calls := []struct {
			name string
			fn   func() error
		}{
			{"Upsert", func() error { return ix.Upsert(ctx, []recall.Doc{turn("b", "during the outage")}, nil) }},
			{"Lexical", func() error { _, err := ix.Lexical(ctx, "outage", 5, recall.Filter{}); return err }},
			{"Vector", func() error { _, err := ix.Vector(ctx, []float32{1, 0, 0, 0}, 5, recall.Filter{}); return err }},
			{"Docs", func() error { _, err := ix.Docs(ctx, []string{"a"}); return err }},
			{"Count", func() error { _, err := ix.Count(ctx); return err }},
			{"Meta", func() error { _, _, err := ix.Meta(ctx, "cursor"); return err }},
			{"SetMeta", func() error { return ix.SetMeta(ctx, "cursor", "x") }},
			{"Delete", func() error { return ix.Delete(ctx, []string{"a"}) }},
		}
		for _, c := range calls {
			if err := c.fn(); !errors.Is(err, ErrUnavailable) {
				t.Errorf("%s error = %v, want ErrUnavailable", c.name, err)
			}
		}
	})
}

func TestDimensionChange(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 8)
		ix, err := Open(ctx, opts)
		if err != nil {
			t.Fatalf("Open(dim 8): %v", err)
		}
		if err := ix.Upsert(ctx, []recall.Doc{turn("a", "eight dimensions")}, [][]float32{{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		ix.Close()

		for _, dim := range []int{16, 0} {
			o := opts
			o.Dim = dim
			if ix, err := Open(ctx, o); !errors.Is(err, recall.ErrDimension) {
				if err == nil {
					ix.Close()
				}
				t.Errorf("Open(dim %d) over dim-8 collections: error = %v, want ErrDimension", dim, err)
			}
		}

		// The way out: drop, open, re-embed.
		o := opts
		o.Dim = 16
		if err := Drop(ctx, o); err != nil {
			t.Fatalf("Drop: %v", err)
		}
		ix = mustOpen(t, o)
		if n, err := ix.Count(ctx); err != nil || n != 0 {
			t.Errorf("Count after Drop = %d, %v; want 0", n, err)
		}
		if err := ix.Upsert(ctx, []recall.Doc{turn("a", "sixteen")}, [][]float32{make16()}); err != nil {
			t.Errorf("Upsert(dim 16): %v", err)
		}
	})
}

func make16() []float32 {
	v := make([]float32, 16)
	v[0] = 1
	return v
}

func TestSchemaMismatch(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 4)
		raw := rawClient(t, b)
		// A collection someone else made, with an unnamed vector.
		err := raw.CreateCollection(ctx, &qc.CreateCollection{
			CollectionName: opts.Collection,
			VectorsConfig:  qc.NewVectorsConfig(&qc.VectorParams{Size: 4, Distance: qc.Distance_Cosine}),
		})
		if err != nil {
			t.Fatalf("CreateCollection: %v", err)
		}
		if ix, err := Open(ctx, opts); !errors.Is(err, ErrSchema) {
			if err == nil {
				ix.Close()
			}
			t.Errorf("Open over a foreign collection: error = %v, want ErrSchema", err)
		}
	})
}

func TestCollectionsCreated(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 4)
		raw := rawClient(t, b)
		ix := mustOpen(t, opts)
		for _, coll := range []string{opts.Collection, opts.ToolCollection} {
			info, err := raw.GetCollectionInfo(ctx, coll)
			if err != nil {
				t.Fatalf("GetCollectionInfo(%s): %v", coll, err)
			}
			params := info.GetConfig().GetParams()
			dense := params.GetVectorsConfig().GetParamsMap().GetMap()[denseName]
			if dense.GetSize() != 4 || dense.GetDistance() != qc.Distance_Cosine {
				t.Errorf("%s: dense vector = %v, want 4-dim cosine", coll, dense)
			}
			if sp := params.GetSparseVectorsConfig().GetMap()[sparseName]; sp.GetModifier() != qc.Modifier_Idf {
				t.Errorf("%s: sparse vector = %v, want the IDF modifier", coll, sp)
			}
			for _, fi := range fieldIndexes {
				if got := info.GetPayloadSchema()[fi.field]; got == nil {
					t.Errorf("%s: no payload index on %s", coll, fi.field)
				}
			}
		}
		if ok, err := raw.CollectionExists(ctx, opts.Collection+MetaSuffix); err != nil || !ok {
			t.Errorf("meta collection exists = %v, %v; want true", ok, err)
		}

		// A collection dropped behind the index's back is made again on
		// the next write.
		if err := raw.DeleteCollection(ctx, opts.Collection); err != nil {
			t.Fatalf("DeleteCollection: %v", err)
		}
		if err := ix.Upsert(ctx, []recall.Doc{turn("a", "recreated")}, nil); err != nil {
			t.Fatalf("Upsert after the collection vanished: %v", err)
		}
		if n, err := ix.Count(ctx); err != nil || n != 1 {
			t.Errorf("Count = %d, %v; want 1", n, err)
		}
	})
}

func TestStatsSurviveReopen(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		opts := uniqueOptions(t, b, 0)
		ix := mustOpen(t, opts)
		docs := []recall.Doc{
			turn("a", "one two three"),
			turn("b", "four five six seven"),
			tool("c", "eight nine"),
			turn("d", "ten"),
		}
		if err := ix.Upsert(ctx, docs, nil); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if err := ix.Upsert(ctx, []recall.Doc{turn("a", "one two three four five")}, nil); err != nil {
			t.Fatalf("Upsert(replace): %v", err)
		}
		if err := ix.Delete(ctx, []string{"d"}); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		// Lengths count each word of a document's text recall.TextWeight times.
		want := map[string]lexStats{
			opts.Collection:     {Docs: 2, Tokens: recall.TextWeight * (5 + 4)},
			opts.ToolCollection: {Docs: 1, Tokens: recall.TextWeight * 2},
		}
		if diff := cmp.Diff(want, ix.stats); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
		ix.Close()

		re := mustOpen(t, opts)
		if diff := cmp.Diff(want, re.stats); diff != "" {
			t.Errorf("stats after reopening (-want +got):\n%s", diff)
		}
		re.Close()

		// Lost statistics are recounted from the points.
		raw := rawClient(t, b)
		if _, err := raw.Delete(ctx, &qc.DeletePoints{
			CollectionName: opts.Collection + MetaSuffix,
			Wait:           qc.PtrOf(true),
			Points:         qc.NewPointsSelector(qc.NewID(uuid5(statsIDPrefix+opts.Collection)), qc.NewID(uuid5(statsIDPrefix+opts.ToolCollection))),
		}); err != nil {
			t.Fatalf("Delete stats: %v", err)
		}
		re = mustOpen(t, opts)
		if diff := cmp.Diff(want, re.stats); diff != "" {
			t.Errorf("recounted stats (-want +got):\n%s", diff)
		}
	})
}

func TestSplitAddr(t *testing.T) {
	tests := []struct {
		in      string
		host    string
		port    int
		tls     bool
		wantErr bool
	}{
		{"localhost:6334", "localhost", 6334, false, false},
		{"qdrant.lan", "qdrant.lan", 6334, false, false},
		{"10.0.0.2:7000", "10.0.0.2", 7000, false, false},
		{"[::1]:6334", "::1", 6334, false, false},
		{"::1", "::1", 6334, false, false},
		{"http://qdrant:6334", "qdrant", 6334, false, false},
		{"https://xyz.cloud.qdrant.io:6334", "xyz.cloud.qdrant.io", 6334, true, false},
		{":6334", "localhost", 6334, false, false},
		{"host:notaport", "", 0, false, true},
		{"host:70000", "", 0, false, true},
		{"ftp://host", "", 0, false, true},
	}
	for _, tt := range tests {
		host, port, tls, err := splitAddr(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("splitAddr(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && (host != tt.host || port != tt.port || tls != tt.tls) {
			t.Errorf("splitAddr(%q) = %q, %d, %v; want %q, %d, %v", tt.in, host, port, tls, tt.host, tt.port, tt.tls)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"negative dim", Options{Dim: -1}},
		{"same collections", Options{Collection: "x", ToolCollection: "x"}},
		{"tools named like meta", Options{Collection: "x", ToolCollection: "x" + MetaSuffix}},
		{"bad address", Options{Addr: "host:port"}},
	}
	for _, tt := range tests {
		if _, err := Open(context.Background(), tt.opts); err == nil {
			t.Errorf("Open(%s) succeeded, want an error", tt.name)
		}
	}
}

// TestPayloadRoundTrip covers strings that are not valid UTF-8, which
// protobuf cannot carry as they are.
func TestPayloadRoundTrip(t *testing.T) {
	tests := []recall.Doc{
		turn("plain", "hello"),
		{ID: "bad\xff", Kind: "tu\xc3rn", Role: "r\xfe", Mode: "m", Channel: "c", Session: "s\xff", Text: "abc\xff\xfedef", TS: t0.Add(123456789 * time.Nanosecond), Salience: 0.25},
		{ID: "zero time"},
	}
	for _, d := range tests {
		got, err := payloadDoc(docPayload(d, 3))
		if err != nil {
			t.Errorf("payloadDoc(%q): %v", d.ID, err)
			continue
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", d.ID, diff)
		}
		for k, v := range docPayload(d, 3) {
			if s, ok := v.GetKind().(*qc.Value_StringValue); ok && !utf8.ValidString(s.StringValue) {
				t.Errorf("payload %s of %q is not valid UTF-8", k, d.ID)
			}
		}
	}
}

func TestClose(t *testing.T) {
	srv := standIn(t, qdranttest.Options{})
	ix, err := Open(context.Background(), Options{Addr: srv.Addr(), Dim: 4, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for range 2 {
		if err := ix.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if _, err := ix.Count(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Count after Close: %v, want ErrClosed", err)
	}
	if err := ix.Upsert(context.Background(), []recall.Doc{turn("a", "x")}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Upsert after Close: %v, want ErrClosed", err)
	}
}
