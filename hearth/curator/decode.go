package curator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// OpNone is the explicit "nothing to keep".
const OpNone = "none"

// maxOps bounds one reply: a curator that proposes more is not curating.
const maxOps = 32

// Input is what a reply is checked against: the records the model was
// shown (the only ones it may cite) and the files as they are now.
type Input struct {
	Thread  string           // the conversation, named in each source
	Records []journal.Record // what the model was shown, oldest first
	// Read returns a file of the memory root, nil when it does not exist.
	Read func(path string) ([]byte, error)
	// Author of the proposals and questions; "" is curator.
	Author string
	// Now stamps new notes and questions; nil is time.Now.
	Now func() time.Time
	// Extraction is the archetype's types the reply's entities and
	// relations must have (see SchemaWith).
	Extraction Extraction
}

// Rejection is an op of the reply refused before it became a proposal.
type Rejection struct {
	Index int    // in the reply's ops
	Op    string // as the reply said it
	Path  string
	Why   string
}

// Result is a decoded reply: proposals for the vault's policy to govern,
// questions for the owner, and what was refused, with why. None is set
// when the reply said explicitly that nothing is to be kept.
type Result struct {
	Proposals []vault.Proposal
	Questions []vault.Question
	Rejected  []Rejection
	None      bool
	// Entities and Relations are what the reply extracted, typed by the
	// archetype (Input.Extraction); a reply without them has none.
	Entities  []Entity
	Relations []Relation
}

// wireOp is one op as the schema has it; pointers tell absent from empty.
type wireOp struct {
	Op          *string    `json:"op"`
	Path        *string    `json:"path"`
	Title       *string    `json:"title"`
	Body        *string    `json:"body"`
	NoteType    *string    `json:"note_type"`
	Tags        []string   `json:"tags"`
	Confidence  *float64   `json:"confidence"`
	Patch       *wirePatch `json:"patch"`
	Reason      *string    `json:"reason"`
	Sources     []string   `json:"sources"`
	Risk        *string    `json:"risk"`
	Domains     []string   `json:"domains"`
	Inferred    *bool      `json:"inferred"`
	Supersedes  []string   `json:"supersedes"`
	Contradicts *bool      `json:"contradicts"`
}

type wirePatch struct {
	BodyAppend *string  `json:"body_append"`
	TagsAdd    []string `json:"tags_add"`
	Confirmed  *bool    `json:"confirmed"`
}

type wireQuestion struct {
	Text    *string  `json:"text"`
	Reason  *string  `json:"reason"`
	Sources []string `json:"sources"`
}

// defaultConfidence is a new note's confidence when the reply gives none.
const defaultConfidence = 0.8

// strict decodes one JSON value into v: unknown fields, trailing data and
// a value that is not an object are errors.
func strict(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}

// Decode checks a curator reply against Schema and in, and makes the
// proposals and questions it asks for. An error means the reply as a
// whole is unusable (not JSON, not the schema's object): nothing of it
// may be used. Otherwise each op stands alone: one that breaks the schema
// or cites what the model was not shown is in Rejected, with why, and the
// others go on. Decode never writes; governance (policy) still decides
// what the proposals become.
func Decode(reply []byte, in Input) (Result, error) {
	var top struct {
		Ops       []json.RawMessage `json:"ops"`
		Questions []json.RawMessage `json:"questions"`
		Entities  []json.RawMessage `json:"entities"`
		Relations []json.RawMessage `json:"relations"`
	}
	if err := strict(reply, &top); err != nil {
		return Result{}, fmt.Errorf("curator reply: %w", err)
	}
	if top.Ops == nil {
		return Result{}, errors.New("curator reply: no ops (an empty list, or a none op, says nothing is to be kept)")
	}
	if len(top.Ops) > maxOps {
		return Result{}, fmt.Errorf("curator reply: %d ops, at most %d", len(top.Ops), maxOps)
	}
	d := decoder{in: in, known: make(map[string]bool, len(in.Records))}
	if d.in.Author == "" {
		d.in.Author = vault.AuthorCurator
	}
	if d.in.Now == nil {
		d.in.Now = time.Now
	}
	for _, r := range in.Records {
		d.known[r.ID] = true
	}
	var res Result
	nones := 0
	for i, raw := range top.Ops {
		var w wireOp
		if err := strict(raw, &w); err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Why: "breaks the schema: " + err.Error()})
			continue
		}
		if w.Op != nil && *w.Op == OpNone {
			nones++
			continue
		}
		p, err := d.op(w)
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Op: deref(w.Op), Path: deref(w.Path), Why: err.Error()})
			continue
		}
		res.Proposals = append(res.Proposals, p)
	}
	for i, raw := range top.Questions {
		var w wireQuestion
		if err := strict(raw, &w); err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: len(top.Ops) + i, Op: "question", Why: "breaks the schema: " + err.Error()})
			continue
		}
		q, err := d.question(w)
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: len(top.Ops) + i, Op: "question", Why: err.Error()})
			continue
		}
		res.Questions = append(res.Questions, q)
	}
	d.entities(top.Entities, top.Relations, len(top.Ops)+len(top.Questions), &res)
	res.None = len(top.Ops) == nones && len(top.Questions) == 0
	return res, nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

type decoder struct {
	in    Input
	known map[string]bool
}

// sources checks that ids name records the model was shown.
func (d *decoder) sources(ids []string) ([]vault.Source, error) {
	if len(ids) == 0 {
		return nil, errors.New("no sources: every proposal names the records it comes from")
	}
	out := make([]vault.Source, 0, len(ids))
	for _, id := range ids {
		id = strings.ToUpper(strings.TrimSpace(id))
		if !d.known[id] {
			return nil, fmt.Errorf("cites record %q, which is not in the conversation it was shown", id)
		}
		if slices.ContainsFunc(out, func(s vault.Source) bool { return s.Turn == id }) {
			continue
		}
		out = append(out, vault.Source{Thread: d.in.Thread, Turn: id})
	}
	return out, nil
}

// notePath checks that p is a note the curator may write: a clean .md
// path under knowledge/ or summaries/.
func notePath(p string) error {
	if p == "" || !fs.ValidPath(p) || path.Clean(p) != p || strings.Contains(p, "\\") || path.Ext(p) != ".md" ||
		!(strings.HasPrefix(p, vault.KnowledgeDir+"/") || strings.HasPrefix(p, vault.SummariesDir+"/")) {
		return fmt.Errorf("path %q: want a .md file under knowledge/ or summaries/", p)
	}
	for part := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("path %q: no dot files", p)
		}
	}
	return nil
}

func (d *decoder) read(p string) ([]byte, error) {
	if d.in.Read == nil {
		return nil, nil
	}
	b, err := d.in.Read(p)
	if err != nil {
		return nil, fmt.Errorf("could not read %s: %w", p, err)
	}
	return b, nil
}

func (d *decoder) op(w wireOp) (vault.Proposal, error) {
	var p vault.Proposal
	if w.Op == nil {
		return p, errors.New("breaks the schema: no op")
	}
	p.Op = vault.Op(*w.Op)
	switch p.Op {
	case vault.OpCreate, vault.OpUpdate, vault.OpDeprecate, vault.OpDelete:
	default:
		return p, fmt.Errorf("breaks the schema: op %q: want create, update, deprecate, delete or none", *w.Op)
	}
	p.Path = strings.TrimSpace(deref(w.Path))
	if err := notePath(p.Path); err != nil {
		return p, err
	}
	p.Reason = strings.TrimSpace(deref(w.Reason))
	if p.Reason == "" {
		return p, errors.New("no reason")
	}
	src, err := d.sources(w.Sources)
	if err != nil {
		return p, err
	}
	p.Sources = src
	p.Author = d.in.Author
	p.CreatedAt = d.in.Now().UTC()
	switch r := deref(w.Risk); r {
	case "", "low", "medium", "high":
		p.Risk = r
	default:
		return p, fmt.Errorf("breaks the schema: risk %q: want low, medium or high", r)
	}
	for _, dm := range w.Domains {
		if dm = strings.ToLower(strings.TrimSpace(dm)); dm != "" && !slices.Contains(p.Domains, dm) {
			p.Domains = append(p.Domains, dm)
		}
	}
	p.Inferred = deref(w.Inferred)
	p.Contradicts = deref(w.Contradicts)
	for _, s := range w.Supersedes {
		s = strings.TrimSpace(s)
		if err := notePath(s); err != nil {
			return p, fmt.Errorf("supersedes: %w", err)
		}
		if s == p.Path {
			return p, errors.New("supersedes: a note cannot supersede itself")
		}
		old, err := d.read(s)
		if err != nil {
			return p, err
		}
		if old == nil {
			return p, fmt.Errorf("supersedes %s, which does not exist", s)
		}
		if !slices.Contains(p.Supersedes, s) {
			p.Supersedes = append(p.Supersedes, s)
		}
	}
	if p.Contradicts && len(p.Supersedes) == 0 {
		return p, errors.New("contradicts: name the notes it contradicts in supersedes")
	}
	current, err := d.read(p.Path)
	if err != nil {
		return p, err
	}
	if current != nil {
		p.Base = vault.Hash(current)
	}
	title, body := strings.TrimSpace(deref(w.Title)), strings.TrimSpace(deref(w.Body))
	switch p.Op {
	case vault.OpCreate:
		if current != nil {
			return p, fmt.Errorf("%s exists: update it", p.Path)
		}
		if w.Patch != nil {
			return p, errors.New("create takes a title and a body, not a patch")
		}
		return p, d.note(&p, w, title, body, nil)
	case vault.OpUpdate:
		if current == nil {
			return p, fmt.Errorf("%s does not exist: create it", p.Path)
		}
		if w.Patch != nil {
			if title != "" || body != "" {
				return p, errors.New("update takes a patch, or a title and a body, not both")
			}
			pt := &vault.Patch{BodyAppend: strings.TrimSpace(deref(w.Patch.BodyAppend)), TagsAdd: w.Patch.TagsAdd, Confirmed: deref(w.Patch.Confirmed)}
			if w.Confidence != nil {
				c := *w.Confidence
				if c < 0 || c > 1 || c != c {
					return p, errors.New("breaks the schema: confidence is from 0 to 1")
				}
				pt.Confidence = &c
			}
			if pt.BodyAppend == "" && len(pt.TagsAdd) == 0 && !pt.Confirmed && pt.Confidence == nil {
				return p, errors.New("the patch changes nothing")
			}
			p.Patch = pt
			return p, nil
		}
		old, err := vault.ParseNote(p.Path, current)
		if err != nil {
			return p, fmt.Errorf("%s does not parse, so it is left to the owner: %v", p.Path, err)
		}
		return p, d.note(&p, w, title, body, old)
	default: // deprecate, delete
		if current == nil {
			return p, fmt.Errorf("%s does not exist", p.Path)
		}
		if title != "" || body != "" || w.Patch != nil {
			return p, fmt.Errorf("%s takes no content", p.Op)
		}
		return p, nil
	}
}

// note renders the note a create or a whole update writes; old is the
// note an update replaces (its id and history stay).
func (d *decoder) note(p *vault.Proposal, w wireOp, title, body string, old *vault.Note) error {
	if title == "" || body == "" {
		return fmt.Errorf("%s needs a title and a body", p.Op)
	}
	n := &vault.Note{ID: vault.NewNoteID(), Title: title, Type: strings.TrimSpace(deref(w.NoteType)), Tags: w.Tags, Confidence: defaultConfidence, Sources: p.Sources}
	if w.Confidence != nil {
		c := *w.Confidence
		if c < 0 || c > 1 || c != c {
			return errors.New("breaks the schema: confidence is from 0 to 1")
		}
		n.Confidence = c
	}
	if p.Inferred {
		n.Status = vault.Draft
	}
	if old != nil {
		n.ID, n.CreatedAt = old.ID, old.CreatedAt
		n.Sources = append(slices.Clone(old.Sources), p.Sources...)
		if n.Type == "" {
			n.Type = old.Type
		}
	}
	n.Body = []byte(body + "\n")
	p.Content = string(n.Format())
	return nil
}

func (d *decoder) question(w wireQuestion) (vault.Question, error) {
	q := vault.Question{Text: strings.TrimSpace(deref(w.Text)), Reason: strings.TrimSpace(deref(w.Reason)), Author: d.in.Author, CreatedAt: d.in.Now().UTC()}
	if q.Text == "" {
		return q, errors.New("a question without text")
	}
	src, err := d.sources(w.Sources)
	if err != nil {
		return q, err
	}
	q.Sources = src
	return q, nil
}
