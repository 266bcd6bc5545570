package qdranttest

import (
	"context"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// pointsService is the qdrant.Points service.
type pointsService struct {
	qc.UnimplementedPointsServer
	s *Server
}

// Upsert validates every point before storing any, as Qdrant rejects a
// batch with one bad point as a whole.
func (ps *pointsService) Upsert(_ context.Context, req *qc.UpsertPoints) (*qc.PointsOperationResponse, error) {
	if req.UpdateFilter != nil || req.ShardKeySelector != nil {
		return nil, unsupported("conditional and sharded upserts")
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	ps.s.upserts = append(ps.s.upserts, Upsert{Collection: req.GetCollectionName(), Points: len(req.GetPoints()), Wait: req.GetWait()})
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	batch := make([]*point, 0, len(req.GetPoints()))
	for _, in := range req.GetPoints() {
		key, id, err := idKey(in.GetId())
		if err != nil {
			return nil, err
		}
		dense, sparse, err := c.parseVectors(in.GetVectors())
		if err != nil {
			return nil, err
		}
		payload := make(map[string]*qc.Value, len(in.GetPayload()))
		for k, v := range in.GetPayload() {
			payload[k] = proto.Clone(v).(*qc.Value)
		}
		batch = append(batch, &point{key: key, id: id, payload: payload, dense: dense, sparse: sparse})
	}
	for _, p := range batch {
		c.points[p.key] = p
	}
	return &qc.PointsOperationResponse{Result: ps.s.updateResultLocked(req.GetWait())}, nil
}

func (ps *pointsService) Delete(_ context.Context, req *qc.DeletePoints) (*qc.PointsOperationResponse, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	switch sel := req.GetPoints().GetPointsSelectorOneOf().(type) {
	case *qc.PointsSelector_Points:
		for _, id := range sel.Points.GetIds() {
			key, _, err := idKey(id)
			if err != nil {
				return nil, err
			}
			delete(c.points, key)
		}
	case *qc.PointsSelector_Filter:
		for key, p := range c.points {
			ok, err := matchFilter(sel.Filter, p)
			if err != nil {
				return nil, err
			}
			if ok {
				delete(c.points, key)
			}
		}
	default:
		return nil, status.Error(codes.InvalidArgument, "Validation error: points selector is required")
	}
	return &qc.PointsOperationResponse{Result: ps.s.updateResultLocked(req.GetWait())}, nil
}

// Get returns the stored points among the ids, once each, in request order.
func (ps *pointsService) Get(_ context.Context, req *qc.GetPoints) (*qc.GetResponse, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	resp := &qc.GetResponse{}
	seen := map[string]bool{}
	for _, id := range req.GetIds() {
		key, _, err := idKey(id)
		if err != nil {
			return nil, err
		}
		p, ok := c.points[key]
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		resp.Result = append(resp.Result, c.retrieved(p, req.GetWithPayload(), req.GetWithVectors()))
	}
	return resp, nil
}

func (c *collection) retrieved(p *point, wp *qc.WithPayloadSelector, wv *qc.WithVectorsSelector) *qc.RetrievedPoint {
	return &qc.RetrievedPoint{Id: proto.Clone(p.id).(*qc.PointId), Payload: selectPayload(wp, p.payload), Vectors: c.selectVectors(wv, p)}
}

func (ps *pointsService) Count(_ context.Context, req *qc.CountPoints) (*qc.CountResponse, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	n := uint64(0)
	for _, p := range c.points {
		ok, err := matchFilter(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if ok {
			n++
		}
	}
	return &qc.CountResponse{Result: &qc.CountResult{Count: n}}, nil
}

// Scroll pages through the points in id order, from Offset (inclusive).
func (ps *pointsService) Scroll(_ context.Context, req *qc.ScrollPoints) (*qc.ScrollResponse, error) {
	if req.OrderBy != nil {
		return nil, unsupported("scroll order_by")
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	limit := 10
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	from := ""
	if req.Offset != nil {
		if from, _, err = idKey(req.GetOffset()); err != nil {
			return nil, err
		}
	}
	resp := &qc.ScrollResponse{}
	for _, p := range c.sortedPoints() {
		if p.key < from {
			continue
		}
		ok, err := matchFilter(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if len(resp.Result) == limit {
			resp.NextPageOffset = proto.Clone(p.id).(*qc.PointId)
			break
		}
		resp.Result = append(resp.Result, c.retrieved(p, req.GetWithPayload(), req.GetWithVectors()))
	}
	return resp, nil
}

// CreateFieldIndex records the index; searches are exhaustive anyway.
func (ps *pointsService) CreateFieldIndex(_ context.Context, req *qc.CreateFieldIndexCollection) (*qc.PointsOperationResponse, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if req.GetFieldName() == "" {
		return nil, status.Error(codes.InvalidArgument, "Validation error in JSON body: [field_name: must not be empty]")
	}
	types := map[qc.FieldType]qc.PayloadSchemaType{
		qc.FieldType_FieldTypeKeyword:  qc.PayloadSchemaType_Keyword,
		qc.FieldType_FieldTypeInteger:  qc.PayloadSchemaType_Integer,
		qc.FieldType_FieldTypeFloat:    qc.PayloadSchemaType_Float,
		qc.FieldType_FieldTypeGeo:      qc.PayloadSchemaType_Geo,
		qc.FieldType_FieldTypeText:     qc.PayloadSchemaType_Text,
		qc.FieldType_FieldTypeBool:     qc.PayloadSchemaType_Bool,
		qc.FieldType_FieldTypeDatetime: qc.PayloadSchemaType_Datetime,
		qc.FieldType_FieldTypeUuid:     qc.PayloadSchemaType_Uuid,
	}
	info := &qc.PayloadSchemaInfo{DataType: types[req.GetFieldType()]}
	if req.FieldIndexParams != nil {
		info.Params = proto.Clone(req.GetFieldIndexParams()).(*qc.PayloadIndexParams)
	}
	c.indexes[req.GetFieldName()] = info
	return &qc.PointsOperationResponse{Result: ps.s.updateResultLocked(req.GetWait())}, nil
}

func (ps *pointsService) DeleteFieldIndex(_ context.Context, req *qc.DeleteFieldIndexCollection) (*qc.PointsOperationResponse, error) {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	delete(c.indexes, req.GetFieldName())
	return &qc.PointsOperationResponse{Result: ps.s.updateResultLocked(req.GetWait())}, nil
}

// Query supports a nearest query by dense or sparse vector (or by the
// vector of a stored point), and no query at all (points in id order).
func (ps *pointsService) Query(_ context.Context, req *qc.QueryPoints) (*qc.QueryResponse, error) {
	if len(req.GetPrefetch()) > 0 || req.LookupFrom != nil || req.ShardKeySelector != nil {
		return nil, unsupported("prefetch, lookup_from and shard keys")
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	limit, offset := uint64(10), req.GetOffset()
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	var hits []scored
	if req.Query == nil {
		for _, p := range c.sortedPoints() {
			ok, err := matchFilter(req.GetFilter(), p)
			if err != nil {
				return nil, err
			}
			if ok {
				hits = append(hits, scored{p: p, score: 1})
			}
		}
	} else {
		nearest, ok := req.GetQuery().GetVariant().(*qc.Query_Nearest)
		if !ok {
			return nil, unsupported("query variant other than nearest")
		}
		q := nearestQuery{using: req.GetUsing()}
		switch in := nearest.Nearest.GetVariant().(type) {
		case *qc.VectorInput_Dense:
			q.dense = in.Dense.GetData()
		case *qc.VectorInput_Sparse:
			q.sparse = &sparseVec{indices: in.Sparse.GetIndices(), values: in.Sparse.GetValues()}
		case *qc.VectorInput_Id:
			key, _, err := idKey(in.Id)
			if err != nil {
				return nil, err
			}
			p, ok := c.points[key]
			if !ok {
				return nil, status.Errorf(codes.NotFound, "Not found: No point with id %v found", in.Id)
			}
			if d, ok := p.dense[q.using]; ok {
				q.dense = d
			} else if s, ok := p.sparse[q.using]; ok {
				q.sparse = &s
			} else {
				return nil, invalid("Not existing vector name error: %s", q.using)
			}
		default:
			return nil, unsupported("vector input other than dense, sparse or id")
		}
		if hits, err = c.search(q, req.GetFilter(), req.ScoreThreshold); err != nil {
			return nil, err
		}
	}
	return &qc.QueryResponse{Result: c.page(hits, offset, limit, req.GetWithPayload(), req.GetWithVectors())}, nil
}

// Search is the older search API: a dense vector, or a sparse one when
// SparseIndices is set, in the space VectorName.
func (ps *pointsService) Search(_ context.Context, req *qc.SearchPoints) (*qc.SearchResponse, error) {
	if req.ShardKeySelector != nil {
		return nil, unsupported("shard keys")
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	q := nearestQuery{using: req.GetVectorName()}
	if req.SparseIndices != nil {
		q.sparse = &sparseVec{indices: req.GetSparseIndices().GetData(), values: req.GetVector()}
	} else {
		q.dense = req.GetVector()
	}
	hits, err := c.search(q, req.GetFilter(), req.ScoreThreshold)
	if err != nil {
		return nil, err
	}
	return &qc.SearchResponse{Result: c.page(hits, req.GetOffset(), req.GetLimit(), req.GetWithPayload(), req.GetWithVectors())}, nil
}

// page cuts hits to [offset, offset+limit) and renders them.
func (c *collection) page(hits []scored, offset, limit uint64, wp *qc.WithPayloadSelector, wv *qc.WithVectorsSelector) []*qc.ScoredPoint {
	if offset >= uint64(len(hits)) {
		return nil
	}
	hits = hits[offset:]
	if limit < uint64(len(hits)) {
		hits = hits[:limit]
	}
	out := make([]*qc.ScoredPoint, len(hits))
	for i, h := range hits {
		out[i] = &qc.ScoredPoint{
			Id:      proto.Clone(h.p.id).(*qc.PointId),
			Payload: selectPayload(wp, h.p.payload),
			Score:   h.score,
			Vectors: c.selectVectors(wv, h.p),
		}
	}
	return out
}
