package qdranttest

import (
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// collection is one collection's configuration and points.
type collection struct {
	name          string
	unnamed       bool                              // a single unnamed dense vector, stored under ""
	dense         map[string]*qc.VectorParams       // by vector name
	sparse        map[string]*qc.SparseVectorParams // by vector name
	vectorsConfig *qc.VectorsConfig                 // as created, for Get
	sparseConfig  *qc.SparseVectorConfig            // as created, for Get
	points        map[string]*point                 // by idKey
	indexes       map[string]*qc.PayloadSchemaInfo  // payload indexes, by key
}

// point is a stored point. Dense vectors of cosine collections are kept
// normalised, as Qdrant keeps them.
type point struct {
	key     string
	id      *qc.PointId
	payload map[string]*qc.Value
	dense   map[string][]float32
	sparse  map[string]sparseVec
}

type sparseVec struct {
	indices []uint32
	values  []float32
}

// idKey is a point id's canonical form: numbers sort before UUIDs, UUIDs
// by value, as in Qdrant. It returns the id as Qdrant reports it back.
func idKey(id *qc.PointId) (string, *qc.PointId, error) {
	switch v := id.GetPointIdOptions().(type) {
	case *qc.PointId_Num:
		return fmt.Sprintf("n:%020d", v.Num), qc.NewIDNum(v.Num), nil
	case *qc.PointId_Uuid:
		u, err := canonicalUUID(v.Uuid)
		if err != nil {
			return "", nil, status.Errorf(codes.InvalidArgument, "Unable to parse UUID: %s", v.Uuid)
		}
		return "u:" + u, qc.NewIDUUID(u), nil
	}
	return "", nil, status.Error(codes.InvalidArgument, errNoID.Error())
}

// canonicalUUID accepts the forms Rust's uuid crate parses (simple,
// hyphenated, braced, urn) and returns the hyphenated lower-case form.
func canonicalUUID(s string) (string, error) {
	s = strings.TrimPrefix(strings.ToLower(s), "urn:uuid:")
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	if len(s) == 36 {
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", fmt.Errorf("bad uuid %q", s)
		}
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	if len(s) != 32 {
		return "", fmt.Errorf("bad uuid %q", s)
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", err
	}
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:], nil
}

// parseVectors validates a point's vectors against the collection.
func (c *collection) parseVectors(v *qc.Vectors) (map[string][]float32, map[string]sparseVec, error) {
	if v == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "Expected some vectors")
	}
	named := map[string]*qc.Vector{}
	switch o := v.GetVectorsOptions().(type) {
	case *qc.Vectors_Vector:
		named[""] = o.Vector
	case *qc.Vectors_Vectors:
		maps.Copy(named, o.Vectors.GetVectors())
	default:
		return nil, nil, status.Error(codes.InvalidArgument, "Expected some vectors")
	}
	dense := map[string][]float32{}
	sparse := map[string]sparseVec{}
	for name, vec := range named {
		d, s, err := decodeVector(vec)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case c.dense[name] != nil:
			if s != nil {
				return nil, nil, invalid("Conversion between sparse and regular vectors failed")
			}
			params := c.dense[name]
			if uint64(len(d)) != params.GetSize() {
				return nil, nil, invalid("Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(d))
			}
			d = slices.Clone(d)
			if params.GetDistance() == qc.Distance_Cosine {
				normalize(d)
			}
			dense[name] = d
		case c.sparse[name] != nil:
			if s == nil {
				return nil, nil, invalid("Conversion between sparse and regular vectors failed")
			}
			if err := validSparse(*s); err != nil {
				return nil, nil, err
			}
			sparse[name] = sortedSparse(*s)
		default:
			return nil, nil, invalid("Not existing vector name error: %s", name)
		}
	}
	return dense, sparse, nil
}

// decodeVector reads a Vector in its current (oneof) or deprecated
// (data + indices) encoding: a dense vector or a sparse one.
func decodeVector(v *qc.Vector) ([]float32, *sparseVec, error) {
	switch o := v.GetVector().(type) {
	case *qc.Vector_Dense:
		return o.Dense.GetData(), nil, nil
	case *qc.Vector_Sparse:
		return nil, &sparseVec{indices: o.Sparse.GetIndices(), values: o.Sparse.GetValues()}, nil
	case nil:
	default:
		return nil, nil, unsupported(fmt.Sprintf("vector type %T", o))
	}
	// The deprecated encoding, which Qdrant still accepts.
	if ind := v.GetIndices(); ind != nil {
		return nil, &sparseVec{indices: ind.GetData(), values: v.GetData()}, nil
	}
	if v.GetVectorsCount() > 1 {
		return nil, nil, unsupported("multi-vectors")
	}
	return v.GetData(), nil, nil
}

func validSparse(s sparseVec) error {
	if len(s.indices) != len(s.values) {
		return status.Errorf(codes.InvalidArgument, "Validation error in JSON body: [indices: must be the same length as values array]")
	}
	seen := make(map[uint32]bool, len(s.indices))
	for _, i := range s.indices {
		if seen[i] {
			return status.Errorf(codes.InvalidArgument, "Validation error in JSON body: [indices: must be unique]")
		}
		seen[i] = true
	}
	return nil
}

// sortedSparse copies s with its indices ascending.
func sortedSparse(s sparseVec) sparseVec {
	order := make([]int, len(s.indices))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(int64(s.indices[a]) - int64(s.indices[b])) })
	out := sparseVec{indices: make([]uint32, len(order)), values: make([]float32, len(order))}
	for i, j := range order {
		out.indices[i], out.values[i] = s.indices[j], s.values[j]
	}
	return out
}

func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	n := math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
}

// countWithKey counts points whose payload has key.
func (c *collection) countWithKey(key string) int {
	n := 0
	for _, p := range c.points {
		if len(payloadValues(p.payload, key)) > 0 {
			n++
		}
	}
	return n
}

// sortedPoints returns the points in id order.
func (c *collection) sortedPoints() []*point {
	keys := slices.Sorted(maps.Keys(c.points))
	out := make([]*point, len(keys))
	for i, k := range keys {
		out[i] = c.points[k]
	}
	return out
}

// payloadValues returns the values at a key, following dots into
// objects and flattening arrays, as Qdrant's filters see them.
func payloadValues(payload map[string]*qc.Value, key string) []*qc.Value {
	first, rest, nested := strings.Cut(key, ".")
	v, ok := payload[first]
	if !ok {
		return nil
	}
	vals := flatten(v)
	if !nested {
		return vals
	}
	var out []*qc.Value
	for _, v := range vals {
		if s := v.GetStructValue(); s != nil {
			out = append(out, payloadValues(s.GetFields(), rest)...)
		}
	}
	return out
}

func flatten(v *qc.Value) []*qc.Value {
	if l := v.GetListValue(); l != nil {
		var out []*qc.Value
		for _, e := range l.GetValues() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []*qc.Value{v}
}

// matchFilter evaluates a filter on a point; a nil filter matches.
func matchFilter(f *qc.Filter, p *point) (bool, error) {
	if f == nil {
		return true, nil
	}
	for _, c := range f.GetMust() {
		ok, err := matchCondition(c, p)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, c := range f.GetMustNot() {
		ok, err := matchCondition(c, p)
		if err != nil || ok {
			return false, err
		}
	}
	if should := f.GetShould(); len(should) > 0 {
		matched := false
		for _, c := range should {
			ok, err := matchCondition(c, p)
			if err != nil {
				return false, err
			}
			if ok {
				matched = true
				break
			}
		}
		if !matched {
			return false, nil
		}
	}
	if ms := f.GetMinShould(); ms != nil {
		n := uint64(0)
		for _, c := range ms.GetConditions() {
			ok, err := matchCondition(c, p)
			if err != nil {
				return false, err
			}
			if ok {
				n++
			}
		}
		if n < ms.GetMinCount() {
			return false, nil
		}
	}
	return true, nil
}

func matchCondition(c *qc.Condition, p *point) (bool, error) {
	switch o := c.GetConditionOneOf().(type) {
	case *qc.Condition_Field:
		return matchField(o.Field, p)
	case *qc.Condition_Filter:
		return matchFilter(o.Filter, p)
	case *qc.Condition_HasId:
		for _, id := range o.HasId.GetHasId() {
			k, _, err := idKey(id)
			if err != nil {
				return false, err
			}
			if k == p.key {
				return true, nil
			}
		}
		return false, nil
	case *qc.Condition_IsEmpty:
		return isEmpty(p.payload, o.IsEmpty.GetKey()), nil
	case *qc.Condition_IsNull:
		return isNull(p.payload, o.IsNull.GetKey()), nil
	case *qc.Condition_HasVector:
		name := o.HasVector.GetHasVector()
		_, d := p.dense[name]
		_, s := p.sparse[name]
		return d || s, nil
	case *qc.Condition_Nested:
		return false, unsupported("nested conditions")
	}
	return false, status.Error(codes.InvalidArgument, "Validation error: empty condition")
}

func isEmpty(payload map[string]*qc.Value, key string) bool {
	for _, v := range payloadValues(payload, key) {
		if _, null := v.GetKind().(*qc.Value_NullValue); !null {
			return false
		}
	}
	return true
}

func isNull(payload map[string]*qc.Value, key string) bool {
	first, _, _ := strings.Cut(key, ".")
	v, ok := payload[first]
	if !ok {
		return false
	}
	_, null := v.GetKind().(*qc.Value_NullValue)
	return null
}

func matchField(fc *qc.FieldCondition, p *point) (bool, error) {
	vals := payloadValues(p.payload, fc.GetKey())
	tested := false
	if m := fc.GetMatch(); m != nil {
		tested = true
		ok, err := matchValue(m, vals)
		if err != nil || !ok {
			return false, err
		}
	}
	if r := fc.GetRange(); r != nil {
		tested = true
		if !slices.ContainsFunc(vals, func(v *qc.Value) bool { return inRange(r, v) }) {
			return false, nil
		}
	}
	if fc.IsEmpty != nil {
		tested = true
		if isEmpty(p.payload, fc.GetKey()) != fc.GetIsEmpty() {
			return false, nil
		}
	}
	if fc.IsNull != nil {
		tested = true
		if isNull(p.payload, fc.GetKey()) != fc.GetIsNull() {
			return false, nil
		}
	}
	if fc.GetGeoBoundingBox() != nil || fc.GetGeoRadius() != nil || fc.GetGeoPolygon() != nil || fc.GetValuesCount() != nil || fc.GetDatetimeRange() != nil {
		return false, unsupported("geo, values_count and datetime_range conditions")
	}
	if !tested {
		return false, status.Errorf(codes.InvalidArgument, "Validation error: condition on %q has nothing to match", fc.GetKey())
	}
	return true, nil
}

// matchValue reports whether any of vals matches m (for the except forms:
// whether any value is outside the list).
func matchValue(m *qc.Match, vals []*qc.Value) (bool, error) {
	anyOf := func(f func(*qc.Value) bool) bool { return slices.ContainsFunc(vals, f) }
	str := func(v *qc.Value) (string, bool) {
		s, ok := v.GetKind().(*qc.Value_StringValue)
		if !ok {
			return "", false
		}
		return s.StringValue, true
	}
	num := func(v *qc.Value) (int64, bool) {
		n, ok := v.GetKind().(*qc.Value_IntegerValue)
		if !ok {
			return 0, false
		}
		return n.IntegerValue, true
	}
	switch o := m.GetMatchValue().(type) {
	case *qc.Match_Keyword:
		return anyOf(func(v *qc.Value) bool { s, ok := str(v); return ok && s == o.Keyword }), nil
	case *qc.Match_Keywords:
		return anyOf(func(v *qc.Value) bool { s, ok := str(v); return ok && slices.Contains(o.Keywords.GetStrings(), s) }), nil
	case *qc.Match_ExceptKeywords:
		return anyOf(func(v *qc.Value) bool {
			s, ok := str(v)
			return ok && !slices.Contains(o.ExceptKeywords.GetStrings(), s)
		}), nil
	case *qc.Match_Integer:
		return anyOf(func(v *qc.Value) bool { n, ok := num(v); return ok && n == o.Integer }), nil
	case *qc.Match_Integers:
		return anyOf(func(v *qc.Value) bool { n, ok := num(v); return ok && slices.Contains(o.Integers.GetIntegers(), n) }), nil
	case *qc.Match_ExceptIntegers:
		return anyOf(func(v *qc.Value) bool {
			n, ok := num(v)
			return ok && !slices.Contains(o.ExceptIntegers.GetIntegers(), n)
		}), nil
	case *qc.Match_Boolean:
		return anyOf(func(v *qc.Value) bool {
			b, ok := v.GetKind().(*qc.Value_BoolValue)
			return ok && b.BoolValue == o.Boolean
		}), nil
	case *qc.Match_Text:
		return anyOf(func(v *qc.Value) bool { s, ok := str(v); return ok && strings.Contains(s, o.Text) }), nil
	case *qc.Match_Phrase:
		return anyOf(func(v *qc.Value) bool { s, ok := str(v); return ok && strings.Contains(s, o.Phrase) }), nil
	case *qc.Match_TextAny:
		words := strings.Fields(o.TextAny)
		return anyOf(func(v *qc.Value) bool {
			s, ok := str(v)
			return ok && slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
		}), nil
	}
	return false, status.Error(codes.InvalidArgument, "Validation error: empty match")
}

// inRange applies a range to a number; other values never match.
func inRange(r *qc.Range, v *qc.Value) bool {
	var x float64
	switch k := v.GetKind().(type) {
	case *qc.Value_IntegerValue:
		x = float64(k.IntegerValue)
	case *qc.Value_DoubleValue:
		x = k.DoubleValue
	default:
		return false
	}
	return (r.Lt == nil || x < r.GetLt()) &&
		(r.Lte == nil || x <= r.GetLte()) &&
		(r.Gt == nil || x > r.GetGt()) &&
		(r.Gte == nil || x >= r.GetGte())
}

// selectPayload applies a with_payload selector; nil returns nothing.
func selectPayload(sel *qc.WithPayloadSelector, payload map[string]*qc.Value) map[string]*qc.Value {
	out := map[string]*qc.Value{}
	switch o := sel.GetSelectorOptions().(type) {
	case *qc.WithPayloadSelector_Enable:
		if o.Enable {
			for k, v := range payload {
				out[k] = proto.Clone(v).(*qc.Value)
			}
		}
	case *qc.WithPayloadSelector_Include:
		for _, k := range o.Include.GetFields() {
			if v, ok := payload[k]; ok {
				out[k] = proto.Clone(v).(*qc.Value)
			}
		}
	case *qc.WithPayloadSelector_Exclude:
		for k, v := range payload {
			if !slices.Contains(o.Exclude.GetFields(), k) {
				out[k] = proto.Clone(v).(*qc.Value)
			}
		}
	}
	return out
}

// selectVectors applies a with_vectors selector; nil returns nothing.
func (c *collection) selectVectors(sel *qc.WithVectorsSelector, p *point) *qc.VectorsOutput {
	var names []string
	switch o := sel.GetSelectorOptions().(type) {
	case *qc.WithVectorsSelector_Enable:
		if !o.Enable {
			return nil
		}
		names = append(slices.Collect(maps.Keys(p.dense)), slices.Collect(maps.Keys(p.sparse))...)
	case *qc.WithVectorsSelector_Include:
		names = o.Include.GetNames()
	default:
		return nil
	}
	out := map[string]*qc.VectorOutput{}
	for _, n := range names {
		if d, ok := p.dense[n]; ok {
			out[n] = &qc.VectorOutput{Vector: &qc.VectorOutput_Dense{Dense: &qc.DenseVector{Data: slices.Clone(d)}}}
		} else if s, ok := p.sparse[n]; ok {
			out[n] = &qc.VectorOutput{Vector: &qc.VectorOutput_Sparse{Sparse: &qc.SparseVector{Indices: slices.Clone(s.indices), Values: slices.Clone(s.values)}}}
		}
	}
	if c.unnamed {
		if v, ok := out[""]; ok {
			return &qc.VectorsOutput{VectorsOptions: &qc.VectorsOutput_Vector{Vector: v}}
		}
	}
	return &qc.VectorsOutput{VectorsOptions: &qc.VectorsOutput_Vectors{Vectors: &qc.NamedVectorsOutput{Vectors: out}}}
}

// idf is Qdrant's IDF of a sparse dimension: n is the number of points
// with the sparse vector, df the number of those with the dimension.
func idf(n, df float64) float64 {
	return math.Log((n-df+0.5)/(df+0.5) + 1)
}

// scored is a point with its score during a search.
type scored struct {
	p     *point
	score float32
}

// nearestQuery is a query for the points nearest to a dense or sparse
// vector, in vector space using.
type nearestQuery struct {
	using  string
	dense  []float32
	sparse *sparseVec
}

// search scores the points matching filter against q, best first.
func (c *collection) search(q nearestQuery, filter *qc.Filter, threshold *float32) ([]scored, error) {
	var out []scored
	higherBetter := true
	switch {
	case q.dense != nil:
		params := c.dense[q.using]
		if params == nil {
			if c.sparse[q.using] != nil {
				return nil, invalid("Conversion between sparse and regular vectors failed")
			}
			return nil, invalid("Not existing vector name error: %s", q.using)
		}
		if uint64(len(q.dense)) != params.GetSize() {
			return nil, invalid("Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(q.dense))
		}
		query := slices.Clone(q.dense)
		dist := params.GetDistance()
		if dist == qc.Distance_Cosine {
			normalize(query)
		}
		higherBetter = dist == qc.Distance_Cosine || dist == qc.Distance_Dot
		for _, p := range c.sortedPoints() {
			v, ok := p.dense[q.using]
			if !ok {
				continue
			}
			if ok, err := matchFilter(filter, p); err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			out = append(out, scored{p, distanceScore(dist, query, v)})
		}
	case q.sparse != nil:
		params := c.sparse[q.using]
		if params == nil {
			if c.dense[q.using] != nil {
				return nil, invalid("Conversion between sparse and regular vectors failed")
			}
			return nil, invalid("Not existing vector name error: %s", q.using)
		}
		if err := validSparse(*q.sparse); err != nil {
			return nil, err
		}
		weights := map[uint32]float64{}
		for i, ind := range q.sparse.indices {
			weights[ind] = float64(q.sparse.values[i])
		}
		if params.GetModifier() == qc.Modifier_Idf {
			n, df := 0, map[uint32]int{}
			for _, p := range c.points {
				s, ok := p.sparse[q.using]
				if !ok {
					continue
				}
				n++
				for _, ind := range s.indices {
					if _, asked := weights[ind]; asked {
						df[ind]++
					}
				}
			}
			for ind := range weights {
				weights[ind] *= idf(float64(n), float64(df[ind]))
			}
		}
		for _, p := range c.sortedPoints() {
			s, ok := p.sparse[q.using]
			if !ok {
				continue
			}
			var score float64
			overlap := false
			for i, ind := range s.indices {
				if w, ok := weights[ind]; ok {
					overlap = true
					score += w * float64(s.values[i])
				}
			}
			if !overlap {
				continue // only points sharing a dimension are candidates
			}
			if ok, err := matchFilter(filter, p); err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			out = append(out, scored{p, float32(score)})
		}
	default:
		return nil, status.Error(codes.InvalidArgument, "Validation error: empty query vector")
	}
	if threshold != nil {
		out = slices.DeleteFunc(out, func(s scored) bool {
			if higherBetter {
				return s.score < *threshold
			}
			return s.score > *threshold
		})
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		switch {
		case a.score == b.score:
			return strings.Compare(a.p.key, b.p.key)
		case (a.score > b.score) == higherBetter:
			return -1
		}
		return 1
	})
	return out, nil
}

// distanceScore is Qdrant's score for a distance: a similarity for cosine
// and dot, a distance for euclid and manhattan.
func distanceScore(d qc.Distance, q, v []float32) float32 {
	var s float64
	switch d {
	case qc.Distance_Euclid:
		for i := range q {
			x := float64(q[i]) - float64(v[i])
			s += x * x
		}
		return float32(math.Sqrt(s))
	case qc.Distance_Manhattan:
		for i := range q {
			s += math.Abs(float64(q[i]) - float64(v[i]))
		}
		return float32(s)
	}
	for i := range q {
		s += float64(q[i]) * float64(v[i])
	}
	return float32(s)
}
