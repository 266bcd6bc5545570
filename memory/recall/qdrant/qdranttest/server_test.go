package qdranttest_test

import (
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
)

// start runs a stand-in and returns a real client connected to it.
func start(t *testing.T, opts qdranttest.Options, apiKey string) (*qdranttest.Server, *qc.Client) {
	t.Helper()
	srv, err := qdranttest.Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Close)
	host, portStr, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatalf("SplitHostPort: %v", err)
	}
	port, _ := strconv.Atoi(portStr)
	// The compatibility check runs the health check: exercise it.
	c, err := qc.NewClient(&qc.Config{Host: host, Port: port, APIKey: apiKey, PoolSize: 1})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

var ctx = context.Background()

// hybrid creates a collection with a 3-dim cosine vector "d" and a sparse
// vector "s" with the IDF modifier.
func hybrid(t *testing.T, c *qc.Client, name string) {
	t.Helper()
	err := c.CreateCollection(ctx, &qc.CreateCollection{
		CollectionName: name,
		VectorsConfig:  qc.NewVectorsConfigMap(map[string]*qc.VectorParams{"d": {Size: 3, Distance: qc.Distance_Cosine}}),
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			"s": {Modifier: qc.Modifier_Idf.Enum()},
		}),
	})
	if err != nil {
		t.Fatalf("CreateCollection(%s): %v", name, err)
	}
}

func upsert(t *testing.T, c *qc.Client, coll string, pts ...*qc.PointStruct) {
	t.Helper()
	res, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: coll, Wait: qc.PtrOf(true), Points: pts})
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if res.GetStatus() != qc.UpdateStatus_Completed {
		t.Fatalf("Upsert status = %v, want Completed", res.GetStatus())
	}
}

func pt(id uint64, payload map[string]any, vecs map[string]*qc.Vector) *qc.PointStruct {
	if vecs == nil {
		vecs = map[string]*qc.Vector{}
	}
	return &qc.PointStruct{Id: qc.NewIDNum(id), Payload: qc.NewValueMap(payload), Vectors: qc.NewVectorsMap(vecs)}
}

func ids(pts []*qc.ScoredPoint) []uint64 {
	out := make([]uint64, len(pts))
	for i, p := range pts {
		out[i] = p.GetId().GetNum()
	}
	return out
}

func TestStatusCodes(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	hybrid(t, c, "h")
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"get missing collection", func() error { _, err := c.GetCollectionInfo(ctx, "nope"); return err }, codes.NotFound},
		{"upsert into missing collection", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "nope", Points: []*qc.PointStruct{pt(1, nil, nil)}})
			return err
		}, codes.NotFound},
		{"query missing collection", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "nope", Query: qc.NewQueryDense([]float32{1, 0, 0})})
			return err
		}, codes.NotFound},
		{"count missing collection", func() error { _, err := c.Count(ctx, &qc.CountPoints{CollectionName: "nope"}); return err }, codes.NotFound},
		{"create existing collection", func() error {
			return c.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "h", VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: 3, Distance: qc.Distance_Dot})})
		}, codes.AlreadyExists},
		{"bad collection name", func() error { return c.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "a/b"}) }, codes.InvalidArgument},
		{"zero-size vector", func() error {
			return c.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "z", VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: 0, Distance: qc.Distance_Dot})})
		}, codes.InvalidArgument},
		{"upsert wrong dimension", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{pt(1, nil, map[string]*qc.Vector{"d": qc.NewVectorDense([]float32{1, 2})})}})
			return err
		}, codes.InvalidArgument},
		{"query wrong dimension", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "h", Query: qc.NewQueryDense([]float32{1, 0, 0, 0}), Using: qc.PtrOf("d")})
			return err
		}, codes.InvalidArgument},
		{"upsert without vectors", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{{Id: qc.NewIDNum(1)}}})
			return err
		}, codes.InvalidArgument},
		{"upsert without id", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{{Vectors: qc.NewVectorsMap(nil)}}})
			return err
		}, codes.InvalidArgument},
		{"upsert bad uuid", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{{Id: qc.NewID("not-a-uuid"), Vectors: qc.NewVectorsMap(nil)}}})
			return err
		}, codes.InvalidArgument},
		{"unknown vector name", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{pt(1, nil, map[string]*qc.Vector{"x": qc.NewVectorDense([]float32{1, 2, 3})})}})
			return err
		}, codes.InvalidArgument},
		{"unnamed vector in a named collection", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{{Id: qc.NewIDNum(1), Vectors: qc.NewVectors(1, 2, 3)}}})
			return err
		}, codes.InvalidArgument},
		{"duplicate sparse indices", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{pt(1, nil, map[string]*qc.Vector{"s": qc.NewVectorSparse([]uint32{4, 4}, []float32{1, 1})})}})
			return err
		}, codes.InvalidArgument},
		{"sparse lengths differ", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "h", Points: []*qc.PointStruct{pt(1, nil, map[string]*qc.Vector{"s": qc.NewVectorSparse([]uint32{4, 5}, []float32{1})})}})
			return err
		}, codes.InvalidArgument},
		{"dense query on a sparse vector", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "h", Query: qc.NewQueryDense([]float32{1, 0, 0}), Using: qc.PtrOf("s")})
			return err
		}, codes.InvalidArgument},
		{"fusion query", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "h", Query: qc.NewQueryFusion(qc.Fusion_RRF)})
			return err
		}, codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(tt.call()); got != tt.want {
				t.Errorf("code = %v, want %v", got, tt.want)
			}
		})
	}
	// A rejected batch stores nothing.
	if n, err := c.Count(ctx, &qc.CountPoints{CollectionName: "h", Exact: qc.PtrOf(true)}); err != nil || n != 0 {
		t.Errorf("Count after rejected upserts = %d, %v; want 0", n, err)
	}
}

func TestCollections(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	hybrid(t, c, "b")
	hybrid(t, c, "a")
	if ok, err := c.CollectionExists(ctx, "a"); err != nil || !ok {
		t.Errorf("CollectionExists(a) = %v, %v; want true", ok, err)
	}
	if ok, err := c.CollectionExists(ctx, "c"); err != nil || ok {
		t.Errorf("CollectionExists(c) = %v, %v; want false", ok, err)
	}
	if got, err := c.ListCollections(ctx); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ListCollections = %v, %v; want [a b]", got, err)
	}
	if _, err := c.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{CollectionName: "a", FieldName: "role", FieldType: qc.FieldType_FieldTypeKeyword.Enum(), Wait: qc.PtrOf(true)}); err != nil {
		t.Fatalf("CreateFieldIndex: %v", err)
	}
	upsert(t, c, "a", pt(1, map[string]any{"role": "user"}, nil), pt(2, map[string]any{"other": 1}, nil))
	info, err := c.GetCollectionInfo(ctx, "a")
	if err != nil {
		t.Fatalf("GetCollectionInfo: %v", err)
	}
	params := info.GetConfig().GetParams()
	if d := params.GetVectorsConfig().GetParamsMap().GetMap()["d"]; d.GetSize() != 3 || d.GetDistance() != qc.Distance_Cosine {
		t.Errorf("dense config = %v, want 3-dim cosine", d)
	}
	if s := params.GetSparseVectorsConfig().GetMap()["s"]; s.GetModifier() != qc.Modifier_Idf {
		t.Errorf("sparse config = %v, want IDF", s)
	}
	if info.GetPointsCount() != 2 {
		t.Errorf("points count = %d, want 2", info.GetPointsCount())
	}
	if r := info.GetPayloadSchema()["role"]; r.GetDataType() != qc.PayloadSchemaType_Keyword || r.GetPoints() != 1 {
		t.Errorf("payload schema of role = %v, want keyword over 1 point", r)
	}
	if err := c.DeleteCollection(ctx, "a"); err != nil {
		t.Errorf("DeleteCollection(a): %v", err)
	}
	// Deleting a missing collection is not a gRPC error; the result is
	// false, which the client reports.
	if _, err := c.GetCollectionsClient().Delete(ctx, &qc.DeleteCollection{CollectionName: "a"}); err != nil {
		t.Errorf("Delete(missing) gRPC error: %v", err)
	}
	if err := c.DeleteCollection(ctx, "a"); err == nil {
		t.Errorf("DeleteCollection(missing) succeeded, want the client's error")
	}
}

// TestSparseIDF checks scores against Qdrant's formula by hand.
func TestSparseIDF(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	hybrid(t, c, "h")
	sp := func(ind []uint32, val []float32) map[string]*qc.Vector {
		return map[string]*qc.Vector{"s": qc.NewVectorSparse(ind, val)}
	}
	upsert(t, c, "h",
		pt(1, nil, sp([]uint32{10, 20}, []float32{1, 2})),
		pt(2, nil, sp([]uint32{10}, []float32{0.5})),
		pt(3, nil, sp([]uint32{30}, []float32{1})),
		pt(4, nil, map[string]*qc.Vector{"d": qc.NewVectorDense([]float32{1, 0, 0})}), // no sparse vector: not in N
	)
	res, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "h", Query: qc.NewQuerySparse([]uint32{20, 10}, []float32{1, 2}), Using: qc.PtrOf("s")})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	idf := func(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	idf10, idf20 := idf(3, 2), idf(3, 1)
	want := map[uint64]float64{
		1: 2*idf10*1 + 1*idf20*2,
		2: 2 * idf10 * 0.5,
	} // point 3 shares no dimension and is not a candidate
	if got := ids(res); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("Query ids = %v, want [1 2]", got)
	}
	for _, p := range res {
		if w := want[p.GetId().GetNum()]; math.Abs(float64(p.GetScore())-w) > 1e-5 {
			t.Errorf("score of %d = %v, want %v", p.GetId().GetNum(), p.GetScore(), w)
		}
	}
	// The older Search API with sparse indices gives the same.
	sres, err := c.GetPointsClient().Search(ctx, &qc.SearchPoints{
		CollectionName: "h", Vector: []float32{1, 2}, SparseIndices: &qc.SparseIndices{Data: []uint32{20, 10}},
		VectorName: qc.PtrOf("s"), Limit: 10,
	})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if diff := cmp.Diff(ids(res), ids(sres.GetResult())); diff != "" {
		t.Errorf("Search ids (-query +search):\n%s", diff)
	}
}

func TestDense(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	err := c.CreateCollection(ctx, &qc.CreateCollection{
		CollectionName: "m",
		VectorsConfig: qc.NewVectorsConfigMap(map[string]*qc.VectorParams{
			"cos": {Size: 2, Distance: qc.Distance_Cosine},
			"dot": {Size: 2, Distance: qc.Distance_Dot},
			"euc": {Size: 2, Distance: qc.Distance_Euclid},
		}),
	})
	if err != nil {
		t.Fatalf("CreateCollection: %v", err)
	}
	vs := func(x, y float32) map[string]*qc.Vector {
		return map[string]*qc.Vector{"cos": qc.NewVectorDense([]float32{x, y}), "dot": qc.NewVectorDense([]float32{x, y}), "euc": qc.NewVectorDense([]float32{x, y})}
	}
	upsert(t, c, "m", pt(1, nil, vs(1, 0.1)), pt(2, nil, vs(10, 10)), pt(3, nil, vs(-1, 0)), pt(4, nil, vs(2.5, 0)))
	tests := []struct {
		using string
		want  []uint64
	}{
		{"cos", []uint64{4, 1, 2, 3}},
		{"dot", []uint64{2, 4, 1, 3}},
		{"euc", []uint64{4, 1, 3, 2}}, // a distance: nearest first
	}
	for _, tt := range tests {
		res, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "m", Query: qc.NewQueryDense([]float32{3, 0}), Using: qc.PtrOf(tt.using)})
		if err != nil {
			t.Fatalf("Query(%s): %v", tt.using, err)
		}
		if got := ids(res); !slices.Equal(got, tt.want) {
			t.Errorf("Query(%s) = %v, want %v", tt.using, got, tt.want)
		}
	}
	// Cosine vectors are stored normalised, as Qdrant stores them.
	got, err := c.Get(ctx, &qc.GetPoints{CollectionName: "m", Ids: []*qc.PointId{qc.NewIDNum(2)}, WithVectors: qc.NewWithVectorsInclude("cos")})
	if err != nil || len(got) != 1 {
		t.Fatalf("Get = %v, %v", got, err)
	}
	v := got[0].GetVectors().GetVectors().GetVectors()["cos"].GetDenseVector().GetData()
	if len(v) != 2 || math.Abs(float64(v[0])-math.Sqrt2/2) > 1e-6 {
		t.Errorf("stored cosine vector = %v, want normalised", v)
	}
	// Limit, offset and score threshold.
	res, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "m", Query: qc.NewQueryDense([]float32{3, 0}), Using: qc.PtrOf("cos"), Limit: qc.PtrOf(uint64(2)), Offset: qc.PtrOf(uint64(1)), ScoreThreshold: qc.PtrOf(float32(0.5))})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if got := ids(res); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("Query(limit 2, offset 1, threshold 0.5) = %v, want [1 2]", got)
	}
}

func TestFilters(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	hybrid(t, c, "f")
	upsert(t, c, "f",
		pt(1, map[string]any{"role": "user", "ts": 100, "tags": []any{"a", "b"}, "meta": map[string]any{"lang": "en"}}, nil),
		pt(2, map[string]any{"role": "agent", "ts": 200.5, "tags": []any{"b"}, "flag": true}, nil),
		pt(3, map[string]any{"role": "tool", "ts": 300, "empty": nil}, nil),
		pt(4, map[string]any{"role": "user", "ts": 400, "text": "the quick brown fox"}, nil),
	)
	rng := func(gte, lt float64) *qc.Condition {
		return qc.NewRange("ts", &qc.Range{Gte: qc.PtrOf(gte), Lt: qc.PtrOf(lt)})
	}
	tests := []struct {
		name   string
		filter *qc.Filter
		want   []uint64
	}{
		{"none", nil, []uint64{1, 2, 3, 4}},
		{"keyword", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("role", "user")}}, []uint64{1, 4}},
		{"keywords", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeywords("role", "agent", "tool")}}, []uint64{2, 3}},
		{"except", &qc.Filter{Must: []*qc.Condition{qc.NewMatchExcept("role", "user")}}, []uint64{2, 3}},
		{"array element", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("tags", "a")}}, []uint64{1}},
		{"nested key", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("meta.lang", "en")}}, []uint64{1}},
		{"bool", &qc.Filter{Must: []*qc.Condition{qc.NewMatchBool("flag", true)}}, []uint64{2}},
		{"integer", &qc.Filter{Must: []*qc.Condition{qc.NewMatchInt("ts", 300)}}, []uint64{3}},
		{"text", &qc.Filter{Must: []*qc.Condition{qc.NewMatchText("text", "brown")}}, []uint64{4}},
		{"range ints and doubles", &qc.Filter{Must: []*qc.Condition{rng(200, 400)}}, []uint64{2, 3}},
		{"range bounds", &qc.Filter{Must: []*qc.Condition{qc.NewRange("ts", &qc.Range{Gt: qc.PtrOf(100.0), Lte: qc.PtrOf(300.0)})}}, []uint64{2, 3}},
		{"must not", &qc.Filter{MustNot: []*qc.Condition{qc.NewMatchKeyword("role", "user")}}, []uint64{2, 3}},
		{"should", &qc.Filter{Should: []*qc.Condition{qc.NewMatchKeyword("role", "tool"), qc.NewMatchBool("flag", true)}}, []uint64{2, 3}},
		{"min should", &qc.Filter{MinShould: &qc.MinShould{MinCount: 2, Conditions: []*qc.Condition{qc.NewMatchKeyword("role", "user"), rng(0, 150), qc.NewMatchKeyword("tags", "a")}}}, []uint64{1}},
		{"has id", &qc.Filter{Must: []*qc.Condition{qc.NewHasID(qc.NewIDNum(2), qc.NewIDNum(4))}}, []uint64{2, 4}},
		{"is empty", &qc.Filter{Must: []*qc.Condition{qc.NewIsEmpty("tags")}}, []uint64{3, 4}},
		{"is null", &qc.Filter{Must: []*qc.Condition{qc.NewIsNull("empty")}}, []uint64{3}},
		{"nested filter", &qc.Filter{Must: []*qc.Condition{qc.NewFilterAsCondition(&qc.Filter{Should: []*qc.Condition{qc.NewMatchKeyword("role", "agent"), qc.NewMatchInt("ts", 400)}})}}, []uint64{2, 4}},
		{"missing key", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("nope", "x")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := c.Scroll(ctx, &qc.ScrollPoints{CollectionName: "f", Filter: tt.filter, Limit: qc.PtrOf(uint32(100))})
			if err != nil {
				t.Fatalf("Scroll: %v", err)
			}
			var got []uint64
			for _, p := range pts {
				got = append(got, p.GetId().GetNum())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Scroll = %v, want %v", got, tt.want)
			}
			n, err := c.Count(ctx, &qc.CountPoints{CollectionName: "f", Filter: tt.filter})
			if err != nil || n != uint64(len(tt.want)) {
				t.Errorf("Count = %d, %v; want %d", n, err, len(tt.want))
			}
		})
	}
}

func TestPointsLifecycle(t *testing.T) {
	_, c := start(t, qdranttest.Options{}, "")
	hybrid(t, c, "p")
	const u = "8E3D1A70-5F1B-4C4C-9F4B-6A1B2C3D4E5F"
	upsert(t, c, "p",
		&qc.PointStruct{Id: qc.NewID("{" + u + "}"), Payload: qc.NewValueMap(map[string]any{"k": "v", "x": 1}), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{})},
		pt(7, map[string]any{"k": "w"}, map[string]*qc.Vector{
			// The deprecated sparse encoding: data plus indices.
			"s": {Data: []float32{1}, Indices: &qc.SparseIndices{Data: []uint32{3}}},
		}),
	)
	got, err := c.Get(ctx, &qc.GetPoints{
		CollectionName: "p",
		Ids:            []*qc.PointId{qc.NewID("8e3d1a705f1b4c4c9f4b6a1b2c3d4e5f"), qc.NewIDNum(99), qc.NewIDNum(7)},
		WithPayload:    qc.NewWithPayloadInclude("k"),
		WithVectors:    qc.NewWithVectors(true),
	})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("Get returned %d points, want 2", len(got))
	}
	if id := got[0].GetId().GetUuid(); id != "8e3d1a70-5f1b-4c4c-9f4b-6a1b2c3d4e5f" {
		t.Errorf("uuid = %q, want the canonical form", id)
	}
	if p := got[0].GetPayload(); len(p) != 1 || p["k"].GetStringValue() != "v" {
		t.Errorf("payload = %v, want only k", p)
	}
	if sv := got[1].GetVectors().GetVectors().GetVectors()["s"].GetSparseVector(); !slices.Equal(sv.GetIndices(), []uint32{3}) {
		t.Errorf("sparse vector = %v, want index 3", sv)
	}
	ex, err := c.Get(ctx, &qc.GetPoints{CollectionName: "p", Ids: []*qc.PointId{qc.NewIDNum(7)}, WithPayload: qc.NewWithPayloadExclude("k")})
	if err != nil || len(ex) != 1 || len(ex[0].GetPayload()) != 0 {
		t.Errorf("Get(exclude k) = %v, %v; want an empty payload", ex, err)
	}

	// Scroll pages in id order: numbers before UUIDs.
	upsert(t, c, "p", pt(1, nil, nil), pt(3, nil, nil))
	var pages [][]string
	var offset *qc.PointId
	for {
		pts, next, err := c.ScrollAndOffset(ctx, &qc.ScrollPoints{CollectionName: "p", Limit: qc.PtrOf(uint32(2)), Offset: offset})
		if err != nil {
			t.Fatalf("Scroll: %v", err)
		}
		var page []string
		for _, p := range pts {
			page = append(page, p.GetId().String())
		}
		pages = append(pages, page)
		if next == nil {
			break
		}
		offset = next
	}
	want := [][]string{{qc.NewIDNum(1).String(), qc.NewIDNum(3).String()}, {qc.NewIDNum(7).String(), qc.NewID("8e3d1a70-5f1b-4c4c-9f4b-6a1b2c3d4e5f").String()}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("scroll pages (-want +got):\n%s", diff)
	}

	// Delete by id and by filter.
	if _, err := c.Delete(ctx, &qc.DeletePoints{CollectionName: "p", Wait: qc.PtrOf(true), Points: qc.NewPointsSelector(qc.NewIDNum(1))}); err != nil {
		t.Fatalf("Delete(ids): %v", err)
	}
	if _, err := c.Delete(ctx, &qc.DeletePoints{CollectionName: "p", Wait: qc.PtrOf(true), Points: qc.NewPointsSelectorFilter(&qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("k", "w")}})}); err != nil {
		t.Fatalf("Delete(filter): %v", err)
	}
	if n, err := c.Count(ctx, &qc.CountPoints{CollectionName: "p"}); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
}

func TestAPIKey(t *testing.T) {
	srv, c := start(t, qdranttest.Options{APIKey: "k3y", Version: "1.16.0"}, "")
	// The health check needs no key, as in Qdrant.
	h, err := c.HealthCheck(ctx)
	if err != nil {
		t.Fatalf("HealthCheck without a key: %v", err)
	}
	if h.GetVersion() != "1.16.0" {
		t.Errorf("version = %q, want 1.16.0", h.GetVersion())
	}
	if _, err := c.ListCollections(ctx); status.Code(err) != codes.PermissionDenied {
		t.Errorf("ListCollections without a key: %v, want PermissionDenied", err)
	}
	host, portStr, _ := net.SplitHostPort(srv.Addr())
	port, _ := strconv.Atoi(portStr)
	tests := []struct {
		key  string
		want codes.Code
	}{
		{"wrong", codes.PermissionDenied},
		{"k3y", codes.OK},
	}
	for _, tt := range tests {
		kc, err := qc.NewClient(&qc.Config{Host: host, Port: port, APIKey: tt.key, SkipCompatibilityCheck: true, PoolSize: 1})
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		_, err = kc.ListCollections(ctx)
		kc.Close()
		if got := status.Code(err); got != tt.want {
			t.Errorf("ListCollections with key %q: %v, want %v", tt.key, err, tt.want)
		}
	}
	if got := srv.Calls("/qdrant.Collections/List"); got != 3 {
		t.Errorf("Calls(List) = %d, want 3", got)
	}
}
