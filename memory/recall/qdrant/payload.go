package qdrant

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/mnemo/mnemo/memory/recall"
)

// Payload keys of a document point.
const (
	keyID       = "id"       // Doc.ID
	keyKind     = "kind"     // Doc.Kind (indexed, keyword)
	keyRole     = "role"     // Doc.Role (indexed, keyword)
	keyMode     = "mode"     // Doc.Mode
	keyChannel  = "channel"  // Doc.Channel
	keySession  = "session"  // Doc.Session (indexed, keyword)
	keyText     = "text"     // Doc.Text
	keyContext  = "context"  // Doc.Context (absent when empty)
	keyTS       = "ts"       // Doc.TS, RFC 3339 with nanoseconds, UTC
	keyTSMillis = "ts_ms"    // Doc.TS in unix milliseconds (indexed, integer): range filters
	keySalience = "salience" // Doc.Salience
	keyLen      = "len"      // number of recall.IndexTokens, for the average document length

	// rawSuffix marks the base64 of a string field's exact bytes, stored
	// next to the field only when those bytes are not valid UTF-8 (protobuf
	// strings must be; the field itself then holds a repaired copy).
	rawSuffix = "_raw"
)

// Payload keys of meta and stats points in the meta collection.
const (
	keyMetaKey     = "key"
	keyMetaValue   = "value"
	keyStatsOf     = "stats_of"
	keyStatsDocs   = "docs"
	keyStatsTokens = "tokens"
)

// validUTF8 repairs s for a protobuf string field.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// putString stores s under key, with its exact bytes under key+rawSuffix
// when s is not valid UTF-8.
func putString(p map[string]*qc.Value, key, s string) {
	if utf8.ValidString(s) {
		p[key] = qc.NewValueString(s)
		return
	}
	p[key] = qc.NewValueString(validUTF8(s))
	p[key+rawSuffix] = qc.NewValueString(base64.StdEncoding.EncodeToString([]byte(s)))
}

// getString reads what putString stored.
func getString(p map[string]*qc.Value, key string) string {
	if raw, ok := p[key+rawSuffix]; ok {
		if b, err := base64.StdEncoding.DecodeString(raw.GetStringValue()); err == nil {
			return string(b)
		}
	}
	return p[key].GetStringValue()
}

// docPayload is the payload of d's point; n is its length in tokens.
func docPayload(d recall.Doc, n int) map[string]*qc.Value {
	p := make(map[string]*qc.Value, 12)
	putString(p, keyID, d.ID)
	putString(p, keyKind, d.Kind)
	putString(p, keyRole, d.Role)
	putString(p, keyMode, d.Mode)
	putString(p, keyChannel, d.Channel)
	putString(p, keySession, d.Session)
	putString(p, keyText, d.Text)
	if d.Context != "" {
		putString(p, keyContext, d.Context)
	}
	p[keyTS] = qc.NewValueString(d.TS.UTC().Format(time.RFC3339Nano))
	p[keyTSMillis] = qc.NewValueInt(d.TS.UnixMilli())
	p[keySalience] = qc.NewValueDouble(float64(d.Salience))
	p[keyLen] = qc.NewValueInt(int64(n))
	return p
}

// payloadDoc reads a document back from its payload.
func payloadDoc(p map[string]*qc.Value) (recall.Doc, error) {
	d := recall.Doc{
		ID:       getString(p, keyID),
		Kind:     getString(p, keyKind),
		Role:     getString(p, keyRole),
		Mode:     getString(p, keyMode),
		Channel:  getString(p, keyChannel),
		Session:  getString(p, keySession),
		Text:     getString(p, keyText),
		Context:  getString(p, keyContext),
		Salience: float32(numberValue(p[keySalience])),
	}
	if s := p[keyTS].GetStringValue(); s != "" {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return recall.Doc{}, fmt.Errorf("payload of %q: ts: %w", d.ID, err)
		}
		d.TS = ts
	} else if v, ok := p[keyTSMillis]; ok {
		d.TS = time.UnixMilli(int64(numberValue(v))).UTC()
	}
	return d, nil
}

// numberValue reads an integer or double payload value.
func numberValue(v *qc.Value) float64 {
	switch k := v.GetKind().(type) {
	case *qc.Value_IntegerValue:
		return float64(k.IntegerValue)
	case *qc.Value_DoubleValue:
		return k.DoubleValue
	}
	return 0
}

// collectionFilter is the Qdrant filter for f within one collection.
// Kinds select collections (see Index.targets) and also filter by kind,
// since any kind other than recall.KindTool shares the documents
// collection.
func collectionFilter(f recall.Filter) *qc.Filter {
	var must []*qc.Condition
	if len(f.Kinds) > 0 {
		must = append(must, qc.NewMatchKeywords(keyKind, validAll(f.Kinds)...))
	}
	if len(f.Roles) > 0 {
		must = append(must, qc.NewMatchKeywords(keyRole, validAll(f.Roles)...))
	}
	if f.Session != "" {
		must = append(must, qc.NewMatchKeyword(keySession, validUTF8(f.Session)))
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		r := &qc.Range{}
		if !f.Since.IsZero() {
			r.Gte = qc.PtrOf(float64(f.Since.UnixMilli()))
		}
		if !f.Until.IsZero() {
			r.Lt = qc.PtrOf(float64(f.Until.UnixMilli()))
		}
		must = append(must, qc.NewRange(keyTSMillis, r))
	}
	if len(must) == 0 {
		return nil
	}
	return &qc.Filter{Must: must}
}

func validAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = validUTF8(s)
	}
	return out
}
