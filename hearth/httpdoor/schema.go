package httpdoor

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// The JSON Schemas of every payload the door takes and gives (ARCH-4):
// schema/<name>.json. Requests are validated against them before they are
// decoded; tests check every response against its own.
//
//go:embed schema/*.json
var schemaFiles embed.FS

// Schema is one payload's schema, parsed and resolved.
type Schema struct {
	raw *jsonschema.Schema
	res *jsonschema.Resolved
}

var schemas = sync.OnceValues(func() (map[string]*Schema, error) {
	ents, err := schemaFiles.ReadDir("schema")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Schema, len(ents))
	for _, e := range ents {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("schema %s: %w", e.Name(), err)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", e.Name(), err)
		}
		out[strings.TrimSuffix(e.Name(), path.Ext(e.Name()))] = &Schema{raw: &s, res: res}
	}
	return out, nil
})

// SchemaNames lists the payload schemas, sorted.
func SchemaNames() []string {
	m, _ := schemas()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks a JSON payload against the schema called name (e.g.
// "chat_completion_request").
func Validate(name string, payload []byte) error {
	s, err := lookup(name)
	if err != nil {
		return err
	}
	v, err := decodeAny(payload)
	if err != nil {
		return err
	}
	return s.res.Validate(v)
}

func lookup(name string) (*Schema, error) {
	m, err := schemas()
	if err != nil {
		return nil, err
	}
	s, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("httpdoor: no schema %q", name)
	}
	return s, nil
}

func decodeAny(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns json.Numbers into int64 when integral, else
// float64, as the validator expects.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}

// readJSON reads a request body of at most limit bytes as JSON, checks it
// against the schema name, and decodes it into dst. Its errors are the
// door's answers: 415 for another content type, 413 for too large a body,
// 408 for too slow a one, 400 for malformed JSON, 422 with clarify for
// fields missing, unknown, of the wrong type or out of range.
func readJSON(c *call, limit int64, name string, dst any) error {
	ct := c.r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &apiError{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error", code: "unsupported_media_type",
			msg: "send the body as application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, limit))
	var tooBig *http.MaxBytesError
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &tooBig):
		return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "body_too_large",
			msg: fmt.Sprintf("the body is larger than %d bytes", limit)}
	case errors.As(err, &ne) && ne.Timeout():
		return &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "body_too_slow",
			msg: "the body did not arrive in time", cause: err}
	case err != nil:
		return badRequest("the body could not be read")
	}
	return decodeChecked(body, name, dst)
}

// decodeChecked is readJSON past the transport: what the fuzz targets run.
func decodeChecked(body []byte, name string, dst any) error {
	s, err := lookup(name)
	if err != nil {
		return err
	}
	v, err := decodeAny(body)
	if err != nil {
		return badRequest("the body is not valid JSON")
	}
	cl := &clarify{MissingFields: []string{}, BadTypes: []string{}, OutOfRange: []string{}}
	check(s.raw, v, "", cl)
	if cl.empty() {
		if err := s.res.Validate(v); err != nil {
			cl.BadTypes = append(cl.BadTypes, "(body)")
		}
	}
	if !cl.empty() {
		return unprocessable(clarifyMessage(cl), cl)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		cl.BadTypes = append(cl.BadTypes, "(body)")
		return unprocessable("the body does not match its schema", cl)
	}
	return nil
}

func clarifyMessage(c *clarify) string {
	var parts []string
	add := func(what string, f []string) {
		if len(f) > 0 {
			parts = append(parts, what+": "+strings.Join(f, ", "))
		}
	}
	add("missing", c.MissingFields)
	add("wrong type", c.BadTypes)
	add("out of range", c.OutOfRange)
	add("unknown", c.UnknownFields)
	return "the request's fields are not right (" + strings.Join(parts, "; ") + ")"
}

// check walks v against s, naming each field that is missing, unknown,
// of the wrong type or out of range: the clarify object seed 002 asks
// for. It understands the keywords the door's schemas use; the resolved
// schema's Validate backs it up.
func check(s *jsonschema.Schema, v any, at string, cl *clarify) {
	if s == nil {
		return
	}
	name := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		alts := append(slices.Clone(s.AnyOf), s.OneOf...)
		for _, a := range alts {
			sub := &clarify{}
			check(a, v, at, sub)
			if sub.empty() {
				return
			}
		}
		cl.BadTypes = append(cl.BadTypes, nameOr(at))
		return
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return isType(v, t) }) {
		cl.BadTypes = append(cl.BadTypes, nameOr(at))
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return equalJSON(e, v) }) {
		cl.OutOfRange = append(cl.OutOfRange, nameOr(at))
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				cl.MissingFields = append(cl.MissingFields, name(r))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		closed := s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				check(p, x[k], name(k), cl)
			} else if closed {
				cl.UnknownFields = append(cl.UnknownFields, name(k))
			}
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems || s.MaxItems != nil && len(x) > *s.MaxItems {
			cl.OutOfRange = append(cl.OutOfRange, nameOr(at))
		}
		for i, e := range x {
			check(s.Items, e, fmt.Sprintf("%s[%d]", at, i), cl)
		}
	case string:
		n := len([]rune(x))
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			cl.OutOfRange = append(cl.OutOfRange, nameOr(at))
		} else if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(x) {
				cl.BadTypes = append(cl.BadTypes, nameOr(at))
			}
		}
	case int64, float64:
		f := toFloat(x)
		if s.Minimum != nil && f < *s.Minimum || s.Maximum != nil && f > *s.Maximum {
			cl.OutOfRange = append(cl.OutOfRange, nameOr(at))
		}
	}
}

func nameOr(at string) string {
	if at == "" {
		return "(body)"
	}
	return at
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "integer":
		switch x := v.(type) {
		case int64:
			return true
		case float64:
			return x == math.Trunc(x)
		}
		return false
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
	}
	return false
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
