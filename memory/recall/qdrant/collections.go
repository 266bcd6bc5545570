package qdrant

import (
	"context"
	"fmt"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/mnemo/mnemo/memory/recall"
)

// setup makes sure the three collections exist with the right schema and
// loads the lexical statistics.
func (ix *Index) setup(ctx context.Context) error {
	for _, name := range []string{ix.docs, ix.tools, ix.meta} {
		if err := ix.ensure(ctx, name); err != nil {
			return err
		}
	}
	return ix.loadStats(ctx)
}

// ensure creates collection name if it does not exist, and checks its
// schema if it does.
func (ix *Index) ensure(ctx context.Context, name string) error {
	info, err := ix.collectionInfo(ctx, name)
	if isNotFound(err) {
		return ix.create(ctx, name)
	}
	if err != nil {
		return ix.wrap("inspect collection", name, err)
	}
	return ix.check(ctx, name, info)
}

func (ix *Index) collectionInfo(ctx context.Context, name string) (*qc.CollectionInfo, error) {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	return ix.client.GetCollectionInfo(cctx, name)
}

// schema is the creation request of collection name.
func (ix *Index) schema(name string) *qc.CreateCollection {
	dense := map[string]*qc.VectorParams{}
	if name == ix.meta {
		return &qc.CreateCollection{CollectionName: name, VectorsConfig: qc.NewVectorsConfigMap(dense)}
	}
	if ix.dim > 0 {
		dense[denseName] = &qc.VectorParams{Size: uint64(ix.dim), Distance: qc.Distance_Cosine}
	}
	return &qc.CreateCollection{
		CollectionName: name,
		VectorsConfig:  qc.NewVectorsConfigMap(dense),
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			sparseName: {Modifier: qc.Modifier_Idf.Enum()},
		}),
	}
}

func (ix *Index) create(ctx context.Context, name string) error {
	cctx, cancel := ix.callCtx(ctx)
	err := ix.client.CreateCollection(cctx, ix.schema(name))
	cancel()
	if err != nil {
		// Another process may have created it since we looked.
		info, ierr := ix.collectionInfo(ctx, name)
		if ierr != nil {
			return ix.wrap("create collection", name, err)
		}
		return ix.check(ctx, name, info)
	}
	ix.log.Info("qdrant: created collection", "collection", name, "dim", ix.dim)
	return ix.ensureFieldIndexes(ctx, name, nil)
}

// check verifies the schema of an existing collection.
func (ix *Index) check(ctx context.Context, name string, info *qc.CollectionInfo) error {
	if name == ix.meta {
		return nil
	}
	params := info.GetConfig().GetParams()
	vc := params.GetVectorsConfig()
	if vc.GetParams() != nil {
		return fmt.Errorf("qdrant: collection %s has an unnamed vector, not %q: %w", name, denseName, ErrSchema)
	}
	have := 0
	if dense, ok := vc.GetParamsMap().GetMap()[denseName]; ok {
		if dense.GetDistance() != qc.Distance_Cosine {
			return fmt.Errorf("qdrant: collection %s: vector %q uses %v distance, not cosine: %w", name, denseName, dense.GetDistance(), ErrSchema)
		}
		have = int(dense.GetSize())
	}
	if sp := params.GetSparseVectorsConfig().GetMap()[sparseName]; sp == nil || sp.GetModifier() != qc.Modifier_Idf {
		return fmt.Errorf("qdrant: collection %s has no sparse vector %q with the IDF modifier: %w", name, sparseName, ErrSchema)
	}
	if have != ix.dim {
		return fmt.Errorf("qdrant: collection %s holds %d-dimensional vectors, the embedder gives %d (drop the collections and re-embed): %w", name, have, ix.dim, recall.ErrDimension)
	}
	return ix.ensureFieldIndexes(ctx, name, info.GetPayloadSchema())
}

// fieldIndexes are the payload indexes of a document collection.
var fieldIndexes = []struct {
	field string
	typ   qc.FieldType
}{
	{keyKind, qc.FieldType_FieldTypeKeyword},
	{keyRole, qc.FieldType_FieldTypeKeyword},
	{keySession, qc.FieldType_FieldTypeKeyword},
	{keyTSMillis, qc.FieldType_FieldTypeInteger},
}

// ensureFieldIndexes creates the payload indexes not in have.
func (ix *Index) ensureFieldIndexes(ctx context.Context, name string, have map[string]*qc.PayloadSchemaInfo) error {
	for _, fi := range fieldIndexes {
		if _, ok := have[fi.field]; ok {
			continue
		}
		cctx, cancel := ix.callCtx(ctx)
		_, err := ix.client.CreateFieldIndex(cctx, &qc.CreateFieldIndexCollection{
			CollectionName: name,
			Wait:           qc.PtrOf(true),
			FieldName:      fi.field,
			FieldType:      qc.PtrOf(fi.typ),
		})
		cancel()
		if err != nil {
			return ix.wrap("index field "+fi.field+" of", name, err)
		}
	}
	return nil
}

// dropCollection deletes a collection; a missing one is not an error.
func (ix *Index) dropCollection(ctx context.Context, name string) error {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	// The low-level call: the client's DeleteCollection turns "did not
	// exist" (result false) into an error.
	_, err := ix.client.GetCollectionsClient().Delete(cctx, &qc.DeleteCollection{CollectionName: name})
	if err != nil && !isNotFound(err) {
		return ix.wrap("drop collection", name, err)
	}
	return nil
}

// saveStatsLocked writes the lexical statistics to the meta collection.
func (ix *Index) saveStatsLocked(ctx context.Context) error {
	pts := make([]*qc.PointStruct, 0, 2)
	for _, coll := range ix.docColls() {
		s := ix.stats[coll]
		p := map[string]*qc.Value{
			keyStatsDocs:   qc.NewValueInt(s.Docs),
			keyStatsTokens: qc.NewValueInt(s.Tokens),
		}
		putString(p, keyStatsOf, coll)
		pts = append(pts, metaPoint(uuid5(statsIDPrefix+coll), p))
	}
	return ix.upsertPoints(ctx, ix.meta, pts)
}

// loadStats reads the lexical statistics, or recounts them from the
// points when they were never saved (collections made by hand, or an
// interrupted write).
func (ix *Index) loadStats(ctx context.Context) error {
	pids := []string{uuid5(statsIDPrefix + ix.docs), uuid5(statsIDPrefix + ix.tools)}
	pts, err := ix.getPoints(ctx, ix.meta, pids, qc.NewWithPayload(true))
	if err != nil {
		return err
	}
	saved := map[string]lexStats{}
	for _, p := range pts {
		pl := p.GetPayload()
		saved[getString(pl, keyStatsOf)] = lexStats{Docs: int64(numberValue(pl[keyStatsDocs])), Tokens: int64(numberValue(pl[keyStatsTokens]))}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, coll := range ix.docColls() {
		s, ok := saved[coll]
		if !ok {
			if s, err = ix.scanStats(ctx, coll); err != nil {
				return err
			}
		}
		ix.stats[coll] = s
	}
	return nil
}

// scanStats recounts a collection's statistics from its points.
func (ix *Index) scanStats(ctx context.Context, coll string) (lexStats, error) {
	var s lexStats
	var offset *qc.PointId
	for {
		cctx, cancel := ix.callCtx(ctx)
		pts, next, err := ix.client.ScrollAndOffset(cctx, &qc.ScrollPoints{
			CollectionName: coll,
			Offset:         offset,
			Limit:          qc.PtrOf(uint32(scrollPage)),
			WithPayload:    qc.NewWithPayloadInclude(keyLen),
			WithVectors:    qc.NewWithVectors(false),
		})
		cancel()
		if isNotFound(err) {
			return lexStats{}, nil
		}
		if err != nil {
			return lexStats{}, ix.wrap("scan", coll, err)
		}
		for _, p := range pts {
			s.add(int(numberValue(p.GetPayload()[keyLen])))
		}
		if next == nil || len(pts) == 0 {
			return s, nil
		}
		offset = next
	}
}
