package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Op is what a proposal does to its file.
type Op string

const (
	OpCreate    Op = "create"    // a new file; it must not exist
	OpUpdate    Op = "update"    // replace (Content) or patch (Patch) a file
	OpDeprecate Op = "deprecate" // mark a note deprecated, keeping it
	OpDelete    Op = "delete"    // remove a file: explicit, always reviewed
)

// Proposal is one change to one file of the vault, as the agent, the
// curator, a job or the owner asks for it (seed 003 §4.3, one op per
// proposal: a curator's batch is several proposals). Queued proposals are
// stored as JSON in inbox/proposals/<id>.json.
type Proposal struct {
	ID   string `json:"id"` // prop_<ULID>
	Op   Op     `json:"op"`
	Path string `json:"path"` // slash-separated, relative to the memory root
	// Base is the Hash of the file the proposal was made against; "" for
	// create. A file that no longer has it (the owner edited it) is not
	// written: the proposal must be made again.
	Base    string   `json:"base_sha256,omitempty"`
	Content string   `json:"content,omitempty"` // the whole new file (create, update)
	Patch   *Patch   `json:"patch,omitempty"`   // or a patch of a note (update)
	Reason  string   `json:"reason"`
	Sources []Source `json:"sources,omitempty"`
	Author  string   `json:"author"` // agent, owner, curator, job:<name>, external:<name>
	// Risk is the proposer's own estimate (low, medium, high); Domains the
	// sensitive domains it sees (health, finance, legal…). Policy reads
	// them, but never trusts a low estimate over its own rules.
	Risk    string   `json:"risk,omitempty"`
	Domains []string `json:"domains,omitempty"`
	// Inferred says the claim is the proposer's inference, not something
	// the owner said: it may only be proposed as a draft note.
	Inferred bool `json:"inferred,omitempty"`
	// Supersedes are the paths of notes this one replaces; Contradicts says
	// it contradicts them (they become contradicted, not superseded).
	Supersedes  []string  `json:"supersedes,omitempty"`
	Contradicts bool      `json:"contradicts,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// Patch is a small structured edit of a note.
type Patch struct {
	BodyAppend string   `json:"body_append,omitempty"`
	TagsAdd    []string `json:"tags_add,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	Confirmed  bool     `json:"confirmed,omitempty"` // sets last_confirmed_at
}

// NewProposalID returns a fresh proposal id.
func NewProposalID() string { return "prop_" + ulid.Make().String() }

// checkPath reports whether p names a file of the memory root that a
// proposal may touch: local, clean, not inside .git, threads/, index/, audit/
// or inbox/ (the journal and the governance machinery are written otherwise).
func checkPath(p string) error {
	if p == "" || !fs.ValidPath(p) || p == "." || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q is not a clean relative path in the memory root", p)
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			// .git anywhere, .gitignore, editors' and Apply's temporary files
			return fmt.Errorf("path %q: a proposal cannot write dot files", p)
		}
	}
	top, _, _ := strings.Cut(p, "/")
	switch top {
	case "threads", "index", "audit", "inbox", "hearth.lock":
		return fmt.Errorf("path %q is not writable by a proposal", p)
	}
	return nil
}

// validate checks the proposal's shape.
func (p *Proposal) validate() error {
	if err := checkID(p.ID); err != nil {
		return err
	}
	if !validAuthor(p.Author) {
		return fmt.Errorf("author %q: want agent, owner, curator, forget, job:<name> or external:<name>", p.Author)
	}
	if err := checkPath(p.Path); err != nil {
		return err
	}
	if len(p.Supersedes) > 0 && (p.Op != OpCreate && p.Op != OpUpdate || !isNotePath(p.Path)) {
		return fmt.Errorf("supersedes: only a new or updated note can supersede notes")
	}
	for i, s := range p.Supersedes {
		if err := checkPath(s); err != nil {
			return fmt.Errorf("supersedes: %w", err)
		}
		if s == p.Path {
			return fmt.Errorf("supersedes: a note cannot supersede itself")
		}
		if slices.Index(p.Supersedes, s) != i {
			return fmt.Errorf("supersedes: %s named twice", s)
		}
	}
	switch p.Op {
	case OpCreate:
		if p.Content == "" || p.Patch != nil {
			return fmt.Errorf("create needs content, and no patch")
		}
	case OpUpdate:
		if (p.Content == "") == (p.Patch == nil) {
			return fmt.Errorf("update needs content or a patch, not both")
		}
		if p.Base == "" {
			return fmt.Errorf("update needs the base hash of the file it changes")
		}
	case OpDeprecate, OpDelete:
		if p.Content != "" || p.Patch != nil {
			return fmt.Errorf("%s takes no content", p.Op)
		}
		if p.Base == "" {
			return fmt.Errorf("%s needs the base hash of the file", p.Op)
		}
	default:
		return fmt.Errorf("op %q: want create, update, deprecate or delete", p.Op)
	}
	return nil
}

// checkID reports whether id is prop_<ULID>.
func checkID(id string) error {
	rest, ok := strings.CutPrefix(id, "prop_")
	if _, err := ulid.ParseStrict(rest); !ok || err != nil {
		return fmt.Errorf("proposal id %q: want prop_<ULID>", id)
	}
	return nil
}

// validAuthor reports whether a is agent, owner, curator or job:<name>,
// name in [a-z0-9_-]: it becomes a git author name, where '<', '>' or a
// newline would corrupt the commit.
func validAuthor(a string) bool {
	switch a {
	case AuthorAgent, AuthorOwner, AuthorCurator, AuthorForget:
		return true
	}
	name, ok := strings.CutPrefix(a, "job:")
	if !ok {
		// Another agent writing through a door (MCP): its proposals
		// are under the policy like the companion's.
		name, ok = strings.CutPrefix(a, AuthorExternalPrefix)
	}
	if !ok || name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// SaveProposal stores p as inbox/proposals/<id>.json in the memory root dir,
// atomically.
func SaveProposal(dir string, p *Proposal) error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("proposal %s: %w", p.ID, err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("proposal %s: %w", p.ID, err)
	}
	return writeAtomic(dir, proposalPath(p.ID), append(b, '\n'))
}

func proposalPath(id string) string { return ProposalsDir + "/" + id + ".json" }

// LoadProposal reads the queued proposal id from the memory root dir.
func LoadProposal(dir, id string) (*Proposal, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(proposalPath(id))))
	if err != nil {
		return nil, fmt.Errorf("proposal %s: %w", id, err)
	}
	return decodeProposal(proposalPath(id), b)
}

func decodeProposal(name string, b []byte) (*Proposal, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Proposal
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

// ListProposals returns the queued proposals, oldest id first. A file that
// is not a valid proposal is reported in bad and otherwise skipped.
func ListProposals(dir string) (ps []*Proposal, bad []error, err error) {
	ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(ProposalsDir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("proposals: %w", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		name := ProposalsDir + "/" + e.Name()
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		p, err := decodeProposal(name, b)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		ps = append(ps, p)
	}
	return ps, bad, nil
}
