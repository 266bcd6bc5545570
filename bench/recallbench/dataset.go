// Package recallbench measures how well mnemo's recall finds the turns a
// question is about: datasets in a neutral JSONL form (and LoCoMo, converted
// to it in memory), a runner that indexes each group through the real
// indexing path and queries it, ranking metrics, a Markdown report, and a
// synthetic journal for the scale benchmark.
package recallbench

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dataset is a benchmark: groups of documents, each with the queries asked
// of it. Every group is indexed on its own.
type Dataset struct {
	Name   string
	Groups []*Group
	// Separate lists categories scored on their own and left out of the
	// overall row (LoCoMo: "5", adversarial questions).
	Separate []string
	// Categories names categories for the report ("1" → "multi-hop").
	Categories map[string]string
	// References are published figures printed beside the results.
	References []Reference
}

// Reference is a published recall@k to compare with.
type Reference struct {
	Label string
	// All is recall@k over every scored query, separate categories included.
	All map[int]float64
	// Recall10 is recall@10 by category.
	Recall10 map[string]float64
}

// Group is one conversation (one index) and the queries asked of it.
type Group struct {
	ID      string
	Docs    []Doc
	Queries []Query
}

// Doc is one document of a group.
type Doc struct {
	ID      string
	Text    string
	TS      time.Time // zero when unknown
	Speaker string
	// Session groups documents for session-level scoring; empty means
	// the document is its own session.
	Session string
}

// Query is one question with the ids of the documents that answer it.
type Query struct {
	ID       string
	Text     string
	Date     time.Time // the "now" of the question; zero when unknown
	Relevant []string
	Category string
}

// Counts returns the number of documents and queries.
func (d *Dataset) Counts() (docs, queries int) {
	for _, g := range d.Groups {
		docs += len(g.Docs)
		queries += len(g.Queries)
	}
	return docs, queries
}

// DefaultMaxLine is the default longest line ReadJSONL accepts.
const DefaultMaxLine = 1 << 20

// ReadOptions configure ReadJSONL.
type ReadOptions struct {
	// MaxLine is the longest line accepted, in bytes (default
	// DefaultMaxLine). A longer line is an error, not a truncation.
	MaxLine int
}

// line is one record of the neutral JSONL form; see bench/README.md.
type line struct {
	Type string `json:"type"`
	// doc and query
	Group string `json:"group"`
	ID    string `json:"id"`
	Text  string `json:"text"`
	// doc
	TS      string `json:"ts"`
	Speaker string `json:"speaker"`
	Session string `json:"session"`
	// query
	Date     string   `json:"date"`
	Relevant []string `json:"relevant"`
	Category string   `json:"category"`
	// meta
	Name       string            `json:"name"`
	Separate   []string          `json:"separate"`
	Categories map[string]string `json:"categories"`
}

// LineError is an error in one line of a JSONL file.
type LineError struct {
	File string // empty for a bare reader
	Line int    // 1-based
	Err  error
}

func (e *LineError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrLineTooLong is wrapped by the error for a line over ReadOptions.MaxLine.
var ErrLineTooLong = errors.New("line too long")

// builder accumulates records from one or more files into a Dataset.
// Queries are checked against their group's documents once everything is
// read, so documents and queries may come in any order.
type builder struct {
	ds      *Dataset
	groups  map[string]*Group
	docIDs  map[string]map[string]bool // group → doc ids
	qIDs    map[string]map[string]bool // group → query ids
	queries []pendingQuery
}

type pendingQuery struct {
	group string
	q     Query
	at    LineError // where it was read, Err unset
}

func newBuilder() *builder {
	return &builder{
		ds:     &Dataset{},
		groups: map[string]*Group{},
		docIDs: map[string]map[string]bool{},
		qIDs:   map[string]map[string]bool{},
	}
}

func (b *builder) group(id string) *Group {
	g, ok := b.groups[id]
	if !ok {
		g = &Group{ID: id}
		b.groups[id] = g
		b.ds.Groups = append(b.ds.Groups, g)
		b.docIDs[id] = map[string]bool{}
		b.qIDs[id] = map[string]bool{}
	}
	return g
}

// ReadJSONL reads a dataset in the neutral JSONL form from r.
func ReadJSONL(r io.Reader, o ReadOptions) (*Dataset, error) {
	b := newBuilder()
	if err := b.read(r, "", o); err != nil {
		return nil, err
	}
	return b.finish()
}

// ReadPath reads a neutral JSONL file, or every *.jsonl file of a
// directory in name order, as one dataset.
func ReadPath(path string, o ReadOptions) (*Dataset, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("read dataset %s: %w", path, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("read dataset %s: no *.jsonl files", path)
		}
		slices.Sort(files)
	}
	b := newBuilder()
	for _, name := range files {
		if err := b.readFile(name, o); err != nil {
			return nil, err
		}
	}
	ds, err := b.finish()
	if err != nil {
		return nil, err
	}
	if ds.Name == "" {
		ds.Name = strings.TrimSuffix(filepath.Base(filepath.Clean(path)), ".jsonl")
	}
	return ds, nil
}

func (b *builder) readFile(name string, o ReadOptions) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read dataset: %w", err)
	}
	defer f.Close()
	return b.read(f, name, o)
}

func (b *builder) read(r io.Reader, file string, o ReadOptions) error {
	limit := o.MaxLine
	if limit <= 0 {
		limit = DefaultMaxLine
	}
	sc := bufio.NewScanner(r)
	// A token is a line without its newline; allow one byte over the
	// limit so that "too long" is told apart from "exactly the limit".
	sc.Buffer(make([]byte, 0, min(limit+1, 64<<10)), limit+1)
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Bytes()
		if len(raw) > limit {
			return &LineError{File: file, Line: n, Err: fmt.Errorf("%w: over %d bytes", ErrLineTooLong, limit)}
		}
		text := bytes.TrimSpace(raw)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		if err := b.add(text, LineError{File: file, Line: n}); err != nil {
			return &LineError{File: file, Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%w: over %d bytes", ErrLineTooLong, limit)
		}
		return &LineError{File: file, Line: n + 1, Err: err}
	}
	return nil
}

// add decodes one non-empty line.
func (b *builder) add(text []byte, at LineError) error {
	var l line
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return errors.New("bad JSON: more than one value on the line")
	}
	switch l.Type {
	case "meta":
		if l.Group != "" || l.ID != "" || l.Text != "" || l.TS != "" || l.Speaker != "" || l.Session != "" ||
			l.Date != "" || l.Relevant != nil || l.Category != "" {
			return errors.New("meta line has doc or query fields")
		}
		if l.Name != "" {
			b.ds.Name = l.Name
		}
		for _, c := range l.Separate {
			if !slices.Contains(b.ds.Separate, c) {
				b.ds.Separate = append(b.ds.Separate, c)
			}
		}
		for k, v := range l.Categories {
			if b.ds.Categories == nil {
				b.ds.Categories = map[string]string{}
			}
			b.ds.Categories[k] = v
		}
		return nil
	case "doc":
		if err := checkRecord(l, "doc"); err != nil {
			return err
		}
		if l.Date != "" || l.Relevant != nil || l.Category != "" {
			return errors.New("doc has query fields (date, relevant, category)")
		}
		d := Doc{ID: l.ID, Text: l.Text, Speaker: l.Speaker, Session: l.Session}
		if l.TS != "" {
			ts, err := parseTime(l.TS)
			if err != nil {
				return fmt.Errorf("doc %q: ts: %w", l.ID, err)
			}
			d.TS = ts
		}
		g := b.group(l.Group)
		if b.docIDs[l.Group][l.ID] {
			return fmt.Errorf("doc %q: duplicate id in group %q", l.ID, l.Group)
		}
		b.docIDs[l.Group][l.ID] = true
		g.Docs = append(g.Docs, d)
		return nil
	case "query":
		if err := checkRecord(l, "query"); err != nil {
			return err
		}
		if l.TS != "" || l.Speaker != "" || l.Session != "" {
			return errors.New("query has doc fields (ts, speaker, session)")
		}
		q := Query{ID: l.ID, Text: l.Text, Category: l.Category}
		if l.Date != "" {
			ts, err := parseTime(l.Date)
			if err != nil {
				return fmt.Errorf("query %q: date: %w", l.ID, err)
			}
			q.Date = ts
		}
		seen := map[string]bool{}
		for _, id := range l.Relevant {
			if id == "" {
				return fmt.Errorf("query %q: empty relevant id", l.ID)
			}
			if !seen[id] {
				seen[id] = true
				q.Relevant = append(q.Relevant, id)
			}
		}
		if len(q.Relevant) == 0 {
			return fmt.Errorf("query %q: no relevant ids", l.ID)
		}
		b.group(l.Group)
		if b.qIDs[l.Group][l.ID] {
			return fmt.Errorf("query %q: duplicate id in group %q", l.ID, l.Group)
		}
		b.qIDs[l.Group][l.ID] = true
		b.queries = append(b.queries, pendingQuery{group: l.Group, q: q, at: at})
		return nil
	case "":
		return errors.New(`missing "type" (doc, query or meta)`)
	default:
		return fmt.Errorf("unknown type %q (want doc, query or meta)", l.Type)
	}
}

func checkRecord(l line, kind string) error {
	switch {
	case l.Group == "":
		return fmt.Errorf("%s has no group", kind)
	case l.ID == "":
		return fmt.Errorf("%s has no id", kind)
	case strings.TrimSpace(l.Text) == "":
		return fmt.Errorf("%s %q has no text", kind, l.ID)
	case l.Name != "" || l.Separate != nil || l.Categories != nil:
		return fmt.Errorf("%s %q has meta fields (name, separate, categories)", kind, l.ID)
	}
	return nil
}

// parseTime accepts RFC 3339 or a bare date (2006-01-02, read as UTC).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor YYYY-MM-DD", s)
	}
	return t, nil
}

// finish checks every query's relevant ids against its group's documents.
func (b *builder) finish() (*Dataset, error) {
	for _, p := range b.queries {
		for _, id := range p.q.Relevant {
			if !b.docIDs[p.group][id] {
				e := p.at
				e.Err = fmt.Errorf("query %q: relevant id %q matches no doc of group %q", p.q.ID, id, p.group)
				return nil, &e
			}
		}
		g := b.groups[p.group]
		g.Queries = append(g.Queries, p.q)
	}
	for _, g := range b.ds.Groups {
		if len(g.Docs) == 0 {
			return nil, fmt.Errorf("group %q has queries but no docs", g.ID)
		}
	}
	if len(b.ds.Groups) == 0 {
		return nil, errors.New("dataset has no docs")
	}
	return b.ds, nil
}

// WriteJSONL writes ds in the neutral JSONL form that ReadJSONL reads: a
// meta line, then each group's docs and queries.
func WriteJSONL(w io.Writer, ds *Dataset) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	type meta struct {
		Type       string            `json:"type"`
		Name       string            `json:"name,omitempty"`
		Separate   []string          `json:"separate,omitempty"`
		Categories map[string]string `json:"categories,omitempty"`
	}
	type doc struct {
		Type    string `json:"type"`
		Group   string `json:"group"`
		ID      string `json:"id"`
		Text    string `json:"text"`
		TS      string `json:"ts,omitempty"`
		Speaker string `json:"speaker,omitempty"`
		Session string `json:"session,omitempty"`
	}
	type query struct {
		Type     string   `json:"type"`
		Group    string   `json:"group"`
		ID       string   `json:"id"`
		Text     string   `json:"text"`
		Date     string   `json:"date,omitempty"`
		Relevant []string `json:"relevant"`
		Category string   `json:"category,omitempty"`
	}
	if err := enc.Encode(meta{"meta", ds.Name, ds.Separate, ds.Categories}); err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	for _, g := range ds.Groups {
		for _, d := range g.Docs {
			rec := doc{"doc", g.ID, d.ID, d.Text, "", d.Speaker, d.Session}
			if !d.TS.IsZero() {
				rec.TS = d.TS.Format(time.RFC3339Nano)
			}
			if err := enc.Encode(rec); err != nil {
				return fmt.Errorf("write dataset: %w", err)
			}
		}
		for _, q := range g.Queries {
			rec := query{"query", g.ID, q.ID, q.Text, "", q.Relevant, q.Category}
			if !q.Date.IsZero() {
				rec.Date = q.Date.Format(time.RFC3339Nano)
			}
			if err := enc.Encode(rec); err != nil {
				return fmt.Errorf("write dataset: %w", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	return nil
}

// categoryLess orders categories numerically when both are integers,
// otherwise as strings, with numbers first.
func categoryLess(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmp.Compare(ai, bi)
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}
