package qdranttest

import (
	"context"
	"maps"
	"slices"
	"strings"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// collectionsService is the qdrant.Collections service.
type collectionsService struct {
	qc.UnimplementedCollectionsServer
	s *Server
}

func (cs *collectionsService) Create(_ context.Context, req *qc.CreateCollection) (*qc.CollectionOperationResponse, error) {
	name := req.GetCollectionName()
	if err := validName(name); err != nil {
		return nil, err
	}
	c := &collection{
		name:    name,
		dense:   map[string]*qc.VectorParams{},
		sparse:  map[string]*qc.SparseVectorParams{},
		points:  map[string]*point{},
		indexes: map[string]*qc.PayloadSchemaInfo{},
	}
	vc := req.GetVectorsConfig()
	switch {
	case vc.GetParams() != nil:
		c.unnamed = true
		c.dense[""] = vc.GetParams()
	case vc.GetParamsMap() != nil:
		for n, p := range vc.GetParamsMap().GetMap() {
			c.dense[n] = p
		}
	}
	for n, p := range c.dense {
		if p.GetSize() < 1 || p.GetSize() > 65536 {
			return nil, status.Errorf(codes.InvalidArgument, "Validation error in JSON body: [vectors.%s.size: value %d invalid, must be from 1 to 65536]", n, p.GetSize())
		}
		if p.GetDistance() == qc.Distance_UnknownDistance {
			return nil, invalid("vector %q: unknown distance", n)
		}
		if p.GetMultivectorConfig() != nil {
			return nil, unsupported("multivector config")
		}
	}
	for n, p := range req.GetSparseVectorsConfig().GetMap() {
		if _, dup := c.dense[n]; dup {
			return nil, invalid("Vector name %q is used for both dense and sparse vectors", n)
		}
		c.sparse[n] = p
	}
	// Keep the configuration as created, for Get.
	c.vectorsConfig = proto.Clone(orEmptyVectorsConfig(vc)).(*qc.VectorsConfig)
	c.sparseConfig = &qc.SparseVectorConfig{Map: map[string]*qc.SparseVectorParams{}}
	for n, p := range c.sparse {
		c.sparseConfig.Map[n] = proto.Clone(p).(*qc.SparseVectorParams)
	}

	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	if _, ok := cs.s.collections[name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", name)
	}
	cs.s.collections[name] = c
	return &qc.CollectionOperationResponse{Result: true}, nil
}

func orEmptyVectorsConfig(vc *qc.VectorsConfig) *qc.VectorsConfig {
	if vc == nil || vc.GetConfig() == nil {
		return qc.NewVectorsConfigMap(map[string]*qc.VectorParams{})
	}
	return vc
}

// validName applies Qdrant's collection name rules.
func validName(name string) error {
	if name == "" || len(name) > 255 {
		return status.Error(codes.InvalidArgument, "Validation error in JSON body: [collection_name: length must be between 1 and 255]")
	}
	if i := strings.IndexAny(name, "<>:\"/\\|?*\x00"); i >= 0 {
		return status.Errorf(codes.InvalidArgument, "Validation error in JSON body: [collection_name: collection name cannot contain %q char]", name[i])
	}
	return nil
}

func (cs *collectionsService) Get(_ context.Context, req *qc.GetCollectionInfoRequest) (*qc.GetCollectionInfoResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	c, err := cs.s.collectionLocked(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	schema := make(map[string]*qc.PayloadSchemaInfo, len(c.indexes))
	for k, v := range c.indexes {
		info := proto.Clone(v).(*qc.PayloadSchemaInfo)
		info.Points = qc.PtrOf(uint64(c.countWithKey(k)))
		schema[k] = info
	}
	return &qc.GetCollectionInfoResponse{Result: &qc.CollectionInfo{
		Status:          qc.CollectionStatus_Green,
		OptimizerStatus: &qc.OptimizerStatus{Ok: true},
		SegmentsCount:   1,
		Config: &qc.CollectionConfig{
			Params: &qc.CollectionParams{
				ShardNumber:         1,
				OnDiskPayload:       true,
				VectorsConfig:       proto.Clone(c.vectorsConfig).(*qc.VectorsConfig),
				ReplicationFactor:   qc.PtrOf(uint32(1)),
				SparseVectorsConfig: proto.Clone(c.sparseConfig).(*qc.SparseVectorConfig),
			},
			HnswConfig:      &qc.HnswConfigDiff{M: qc.PtrOf(uint64(16)), EfConstruct: qc.PtrOf(uint64(100))},
			OptimizerConfig: &qc.OptimizersConfigDiff{},
			WalConfig:       &qc.WalConfigDiff{},
		},
		PayloadSchema:       schema,
		PointsCount:         qc.PtrOf(uint64(len(c.points))),
		IndexedVectorsCount: qc.PtrOf(uint64(0)),
	}}, nil
}

func (cs *collectionsService) List(context.Context, *qc.ListCollectionsRequest) (*qc.ListCollectionsResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	resp := &qc.ListCollectionsResponse{}
	for _, name := range slices.Sorted(maps.Keys(cs.s.collections)) {
		resp.Collections = append(resp.Collections, &qc.CollectionDescription{Name: name})
	}
	return resp, nil
}

// Delete answers false, not an error, for a missing collection, as Qdrant
// does.
func (cs *collectionsService) Delete(_ context.Context, req *qc.DeleteCollection) (*qc.CollectionOperationResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	_, ok := cs.s.collections[req.GetCollectionName()]
	delete(cs.s.collections, req.GetCollectionName())
	return &qc.CollectionOperationResponse{Result: ok}, nil
}

func (cs *collectionsService) CollectionExists(_ context.Context, req *qc.CollectionExistsRequest) (*qc.CollectionExistsResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	_, ok := cs.s.collections[req.GetCollectionName()]
	return &qc.CollectionExistsResponse{Result: &qc.CollectionExists{Exists: ok}}, nil
}
