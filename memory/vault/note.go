package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.yaml.in/yaml/v3"
)

// Status is where a note stands in truth maintenance.
type Status string

const (
	Active       Status = "active"
	Superseded   Status = "superseded"
	Contradicted Status = "contradicted"
	Deprecated   Status = "deprecated"
	Draft        Status = "draft"
	// NeedsRewrite is a note some of whose sources the owner forgot: it
	// stays out of context and recall until it is rewritten without them.
	NeedsRewrite Status = "needs_rewrite"
)

var statuses = []Status{Active, Superseded, Contradicted, Deprecated, Draft, NeedsRewrite}

// Source is where a note's claim comes from: a turn of a thread of the
// journal, and the SHA-256 (hex) of the excerpt that supports it.
type Source struct {
	Thread        string `json:"thread,omitempty" yaml:"thread,omitempty"`
	Turn          string `json:"turn,omitempty" yaml:"turn,omitempty"`
	ExcerptSHA256 string `json:"excerpt_sha256,omitempty" yaml:"excerpt_sha256,omitempty"`
}

// Note is a knowledge note (or a summary): YAML front matter and a Markdown
// body. Keys of the front matter it does not know are kept, in their order,
// and written back after the known ones.
type Note struct {
	ID              string
	Title           string
	Type            string // note (the default), preference, person, project…
	Status          Status // active when absent
	Tags            []string
	Confidence      float64 // 0..1
	CreatedAt       time.Time
	UpdatedAt       time.Time
	LastConfirmedAt time.Time // zero when never confirmed
	Sources         []Source
	Supersedes      []string // ids of the notes this one replaces
	SupersededBy    []string // ids of the notes that replace this one
	Body            []byte   // everything after the closing "---" line

	extra []*yaml.Node // unknown keys and their values, in pairs
}

// ParseError is a malformed note: the file and the 1-based line of the
// file where the problem is, in the form editors and compilers use.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

const (
	fence   = "---"
	keyID   = "id"
	typNote = "note"
)

// knownKeys are the front matter keys in the order Format writes them.
var knownKeys = []string{"id", "title", "type", "status", "tags", "confidence",
	"created_at", "updated_at", "last_confirmed_at", "sources", "supersedes", "superseded_by"}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// ParseNote parses a note. name is used only in errors. It is strict: the
// file must open with a "---" line and close its front matter with another;
// id (a ULID) and title are required; known keys must have the right kind
// of value; anchors, aliases and duplicate keys are refused. Every error is
// a *ParseError naming the line of the file.
func ParseNote(name string, b []byte) (*Note, error) {
	fail := func(line int, format string, args ...any) (*Note, error) {
		return nil, &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	first, rest, ok := cutLine(b)
	if !ok && len(first) == 0 || strings.TrimRight(string(first), " \t\r") != fence {
		return fail(1, "a note starts with a line %q and its front matter", fence)
	}
	// Find the closing fence; front matter lines are file lines 2…
	var fm []byte
	var body []byte
	closed := false
	for off := 0; off < len(rest); {
		line, _, _ := cutLine(rest[off:])
		next := off + len(line)
		if next < len(rest) {
			next++ // the '\n'
		}
		if t := strings.TrimRight(string(line), " \t\r"); t == fence || t == "..." {
			fm, body, closed = rest[:off], rest[next:], true
			break
		}
		off = next
	}
	if !closed {
		return fail(1, "front matter is not closed: add a line %q after it", fence)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(fm, &doc); err != nil {
		return fail(1+errorLine(fm, err), "front matter: %s", yamlMessage(err))
	}
	if len(doc.Content) == 0 {
		return fail(2, "front matter is empty: it needs at least id and title")
	}
	m := doc.Content[0]
	fl := func(n *yaml.Node) int { return n.Line + 1 } // file line of a node
	if err := noAliases(m); err != nil {
		return fail(fl(err), "front matter: anchors and aliases are not allowed")
	}
	if m.Kind != yaml.MappingNode {
		return fail(fl(m), "front matter must be a mapping of keys to values")
	}
	n := &Note{Body: body}
	seen := make(map[string]int)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fail(fl(k), "front matter: a key must be a plain word")
		}
		if prev, dup := seen[k.Value]; dup {
			return fail(fl(k), "front matter: %q given twice (first on line %d)", k.Value, prev)
		}
		seen[k.Value] = fl(k)
		var err error
		switch k.Value {
		case "id":
			n.ID, err = str(v)
			if err == nil {
				if _, perr := ulid.ParseStrict(n.ID); perr != nil {
					err = fmt.Errorf("not a ULID (26 characters of Crockford base32): %q", n.ID)
				}
			}
		case "title":
			n.Title, err = str(v)
		case "type":
			n.Type, err = str(v)
		case "status":
			var s string
			s, err = str(v)
			n.Status = Status(s)
			if err == nil && !slices.Contains(statuses, n.Status) {
				err = fmt.Errorf("%q is not one of active, superseded, contradicted, deprecated, draft, needs_rewrite", s)
			}
		case "tags":
			n.Tags, err = strs(v)
		case "confidence":
			n.Confidence, err = confidence(v)
		case "created_at":
			n.CreatedAt, err = timestamp(v)
		case "updated_at":
			n.UpdatedAt, err = timestamp(v)
		case "last_confirmed_at":
			n.LastConfirmedAt, err = timestamp(v)
		case "sources":
			n.Sources, err = sources(v)
		case "supersedes":
			n.Supersedes, err = strs(v)
		case "superseded_by":
			n.SupersededBy, err = strs(v)
		default:
			n.extra = append(n.extra, k, v)
		}
		if err != nil {
			line := fl(v)
			var le *lineError
			if asLineError(err, &le) {
				line = fl(le.node)
			}
			return fail(line, "%s: %v", k.Value, err)
		}
	}
	if n.ID == "" {
		return fail(2, "front matter: id is missing (a ULID, for example %s)", ulid.Make())
	}
	if n.Title == "" {
		return fail(2, "front matter: title is missing")
	}
	if n.Type == "" {
		n.Type = typNote
	}
	if n.Status == "" {
		n.Status = Active
	}
	return n, nil
}

// errorLine returns the line of fm (1-based) where err, the error of
// parsing fm, is. go-yaml's own line numbers are 0- or 1-based depending on
// which stage failed, and name the start of the enclosing construct, so
// instead this is the first line at which a prefix of fm stops parsing: the
// error is there, or in a construct that opens there. Long front matter
// falls back on go-yaml's number.
func errorLine(fm []byte, err error) int {
	const maxLines = 500
	var v yaml.Node
	end, line := 0, 0
	for end < len(fm) && line < maxLines {
		i := bytes.IndexByte(fm[end:], '\n')
		if i < 0 {
			end = len(fm)
		} else {
			end += i + 1
		}
		line++
		if yaml.Unmarshal(fm[:end], &v) != nil {
			return line
		}
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return line
}

// yamlMessage is go-yaml's message without its prefix and line number.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = yamlLine.ReplaceAllString(msg, "")
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(msg), ":"))
}

// cutLine returns the first line of b without its '\n', the rest after it,
// and whether a '\n' was found.
func cutLine(b []byte) (line, rest []byte, found bool) {
	return bytes.Cut(b, []byte{'\n'})
}

// lineError is an error about a node nested in a value.
type lineError struct {
	node *yaml.Node
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

func asLineError(err error, target **lineError) bool {
	le, ok := err.(*lineError)
	if ok {
		*target = le
	}
	return ok
}

func noAliases(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return n
	}
	for _, c := range n.Content {
		if bad := noAliases(c); bad != nil {
			return bad
		}
	}
	return nil
}

func str(v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", fmt.Errorf("want text")
	}
	return v.Value, nil
}

func strs(v *yaml.Node) ([]string, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list, such as [a, b]")
	}
	out := make([]string, 0, len(v.Content))
	for _, c := range v.Content {
		s, err := str(c)
		if err != nil {
			return nil, &lineError{c, fmt.Errorf("want a list of text")}
		}
		out = append(out, s)
	}
	return out, nil
}

func confidence(v *yaml.Node) (float64, error) {
	s, err := str(v)
	if err != nil {
		return 0, fmt.Errorf("want a number from 0 to 1")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return 0, fmt.Errorf("want a number from 0 to 1, not %q", s)
	}
	return f, nil
}

func timestamp(v *yaml.Node) (time.Time, error) {
	s, err := str(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("want a time such as 2026-01-30T10:12:00Z")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-01-30T10:12:00Z, not %q", s)
}

func sources(v *yaml.Node) ([]Source, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list of {thread, turn, excerpt_sha256}")
	}
	var out []Source
	for _, c := range v.Content {
		if c.Kind != yaml.MappingNode {
			return nil, &lineError{c, fmt.Errorf("want {thread, turn, excerpt_sha256}")}
		}
		var s Source
		for i := 0; i+1 < len(c.Content); i += 2 {
			k, val := c.Content[i], c.Content[i+1]
			t, err := str(val)
			if err != nil {
				return nil, &lineError{val, fmt.Errorf("%s: want text", k.Value)}
			}
			switch k.Value {
			case "thread":
				s.Thread = t
			case "turn":
				s.Turn = t
			case "excerpt_sha256":
				s.ExcerptSHA256 = t
			default:
				return nil, &lineError{k, fmt.Errorf("unknown key %q (want thread, turn, excerpt_sha256)", k.Value)}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Format writes n as a note: canonical front matter (the known keys in a
// fixed order, times in UTC RFC 3339, then the unknown keys as they were)
// and the body as it is. ParseNote(Format(n)) gives n back.
func (n *Note) Format() []byte {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	text := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	}
	list := func(ss []string) *yaml.Node {
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range ss {
			l.Content = append(l.Content, text(s))
		}
		return l
	}
	when := func(t time.Time) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.UTC().Format(time.RFC3339Nano)}
	}
	typ, status := n.Type, n.Status
	if typ == "" {
		typ = typNote
	}
	if status == "" {
		status = Active
	}
	add("id", text(n.ID))
	add("title", text(n.Title))
	add("type", text(typ))
	add("status", text(string(status)))
	add("tags", list(n.Tags))
	add("confidence", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(n.Confidence, 'g', -1, 64)})
	if !n.CreatedAt.IsZero() {
		add("created_at", when(n.CreatedAt))
	}
	if !n.UpdatedAt.IsZero() {
		add("updated_at", when(n.UpdatedAt))
	}
	if !n.LastConfirmedAt.IsZero() {
		add("last_confirmed_at", when(n.LastConfirmedAt))
	}
	srcs := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range n.Sources {
		e := &yaml.Node{Kind: yaml.MappingNode}
		for _, kv := range [][2]string{{"thread", s.Thread}, {"turn", s.Turn}, {"excerpt_sha256", s.ExcerptSHA256}} {
			if kv[1] != "" {
				e.Content = append(e.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[0]}, text(kv[1]))
			}
		}
		if len(e.Content) == 0 {
			e.Style = yaml.FlowStyle
		}
		srcs.Content = append(srcs.Content, e)
	}
	if len(srcs.Content) == 0 {
		srcs.Style = yaml.FlowStyle
	}
	add("sources", srcs)
	add("supersedes", list(n.Supersedes))
	if len(n.SupersededBy) > 0 {
		add("superseded_by", list(n.SupersededBy))
	}
	m.Content = append(m.Content, n.extra...)

	var buf bytes.Buffer
	buf.WriteString(fence + "\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		// Only nodes parsed from YAML or built above reach the encoder.
		panic(fmt.Sprintf("vault: format note: %v", err))
	}
	enc.Close()
	buf.WriteString(fence + "\n")
	buf.Write(n.Body)
	return buf.Bytes()
}

// Hash is the content hash of a file's bytes as the vault records it
// (ledger before_sha/after_sha, a proposal's base): lowercase hex SHA-256.
// The hash of a missing file is "".
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Extra returns the value of a front matter key Note does not know (kept
// as written), and whether it is there as text.
func (n *Note) Extra(key string) (string, bool) {
	for i := 0; i+1 < len(n.extra); i += 2 {
		if n.extra[i].Value == key {
			v, err := str(n.extra[i+1])
			return v, err == nil
		}
	}
	return "", false
}

// SetExtra sets a front matter key Note does not know to the text val,
// after the others; "" removes it. A known key is refused.
func (n *Note) SetExtra(key, val string) {
	if slices.Contains(knownKeys, key) {
		return
	}
	for i := 0; i+1 < len(n.extra); i += 2 {
		if n.extra[i].Value == key {
			if val == "" {
				n.extra = slices.Delete(n.extra, i, i+2)
			} else {
				n.extra[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
			}
			return
		}
	}
	if val != "" {
		n.extra = append(n.extra, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val})
	}
}
