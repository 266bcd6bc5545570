package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/oklog/ulid/v2"
)

// Authors of durable writes; a job is "job:<name>".
const (
	AuthorAgent   = "agent"
	AuthorOwner   = "owner"
	AuthorCurator = "curator"
	// AuthorForget is what a forget changes: the notes made from the
	// turns forgotten, and their rewrites.
	AuthorForget = "forget"
	// AuthorExternalPrefix starts the author of an external agent's
	// proposal: "external:<name>", name of [a-z0-9_-].
	AuthorExternalPrefix = "external:"
)

// ExternalAuthor is the author of a proposal by another party named
// name (a device's or agent's subject): external:<name>, folded to
// lower case, letters, digits, - and _, at most 64 of them.
func ExternalAuthor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 64 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return AuthorExternalPrefix + "agent"
	}
	return AuthorExternalPrefix + b.String()
}

// ErrStale is wrapped by Apply's error when the file changed since the
// proposal was made: nothing is written, and the proposal must be made again
// against the file as it is.
var ErrStale = errors.New("file changed since the proposal was made")

// Vault writes to the vault of one memory root. Its writes are serialized;
// it assumes it is the root's only writer in this process (hearth's single
// commit path will own it).
type Vault struct {
	dir string
	log *slog.Logger
	now func() time.Time
	mu  sync.Mutex
	// packMu keeps Maintain to one at a time (pack.go).
	packMu sync.Mutex
	// ledgerGit is, per ledger file, its size when git last took it
	// (ledger.go); nil until the first commit.
	ledgerGit map[string]int64
	// beforeRead, in tests, is called before each object a history
	// read (ReadAt, History, OwnerEdits) reads (gitread.go).
	beforeRead func(plumbing.Hash)
	// packsMax, in tests, replaces PackMergeThreshold (pack.go).
	packsMax int
	// crash, in tests, stops a write at a stage as a crash would
	// (see pending.go): true leaves the write where it is.
	crash func(stage string) bool
	// failWrite, in tests, fails ApplyBatch's i-th file write.
	failWrite func(i int, path string) error
	list      listCache // List's parsed notes (listcache.go)
	git       gitCache  // what commits keep of git between them (gitcache.go)
}

// errCrash is what a write stopped by crash returns.
var errCrash = errors.New("crashed (test)")

func (v *Vault) crashed(stage string) bool { return v.crash != nil && v.crash(stage) }

// New returns the vault of the memory root dir (see Ensure for its layout).
func New(dir string, log *slog.Logger) *Vault {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Vault{dir: dir, log: log, now: time.Now}
}

// Dir returns the memory root.
func (v *Vault) Dir() string { return v.dir }

// Policy reads config/memory.policy.yml; a missing file gives the defaults.
func (v *Vault) Policy() (Policy, error) {
	b, err := os.ReadFile(filepath.Join(v.dir, filepath.FromSlash(PolicyFile)))
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return Policy{}, err
	}
	return ParsePolicy(b)
}

// Read returns the file p of the root, nil when it does not exist.
func (v *Vault) Read(p string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(v.dir, filepath.FromSlash(p)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Result is what Apply did.
type Result struct {
	Paths  []string // the files written or removed
	Commit string   // "" when the commit failed (Apply's error says why)
}

// Apply writes an approved proposal: each file it touches atomically
// (temporary file, fsync, rename, directory fsync), then one git commit
// naming the proposal and its reason, then one ledger line per file,
// fsync'd. Governance is the caller's (Decide, or the owner's approval);
// Apply checks only that the files are still what the proposal was made
// against, and refuses with ErrStale when not.
//
// Truth maintenance: a proposal that supersedes notes marks each of them
// superseded (contradicted when p.Contradicts), with superseded_by naming
// the new note, and the new note's supersedes naming them. A deprecate
// keeps the note and marks it deprecated; only a delete removes a file.
//
// A note written by anyone but the owner is stamped (updated_at now,
// created_at kept from the note it replaces) and written in canonical form;
// the owner's text is written byte for byte. The proposal, if queued in
// inbox/proposals/, leaves the inbox in the same commit.
//
// When the commit fails (a held index.lock, a corrupt repository), the
// files are written and ledgered with the error (commit_error), and Apply
// returns a *CommitError: the write is durable, and the next commit of those
// paths takes it in.
func (v *Vault) Apply(ctx context.Context, p *Proposal) (Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := p.validate(); err != nil {
		return Result{}, fmt.Errorf("apply %s: %w", p.ID, err)
	}
	now := v.now().UTC()
	writes, err := v.plan(p, now)
	if err != nil {
		return Result{}, err
	}

	queued := filepath.Join(v.dir, filepath.FromSlash(proposalPath(p.ID)))
	_, qerr := os.Lstat(queued)
	isQueued := qerr == nil
	var paths []string
	entries := ledgerEntries(p, writes, now)
	for _, w := range writes {
		paths = append(paths, w.path)
	}
	if isQueued {
		paths = append(paths, proposalPath(p.ID))
	}
	// The ledger is committed too: the lines of earlier writes (v.commit
	// takes in every ledger file git lacks, whatever the record names).
	paths = append(paths, v.ledgerPath())
	// The commit is pending before any file changes: a crash from here
	// on leaves a record that CommitPending commits as p's.
	pend := &pending{Paths: paths, Message: commitMessage(p), Author: p.Author, Entries: entries}
	if err := savePending(v.dir, pend); err != nil {
		return Result{}, fmt.Errorf("apply %s: %w", p.ID, err)
	}

	if v.crashed("files") {
		return Result{}, errCrash
	}
	res := Result{}
	for _, w := range writes {
		if w.after == nil {
			err = removeDurable(v.dir, w.path)
		} else {
			err = writeAtomic(v.dir, w.path, w.after)
		}
		if err != nil {
			if len(res.Paths) == 0 {
				err = errors.Join(err, dropPending(v.dir, pend)) // nothing changed
			}
			return res, fmt.Errorf("apply %s: %w", p.ID, err)
		}
		res.Paths = append(res.Paths, w.path)
	}
	if isQueued {
		if err := removeDurable(v.dir, proposalPath(p.ID)); err != nil {
			return res, fmt.Errorf("apply %s: %w", p.ID, err)
		}
	}
	if v.crashed("commit") {
		return res, errCrash
	}
	commit, err := v.settle(ctx, pend, pend.Message)
	res.Commit = commit
	var cerr *CommitError
	if errors.As(err, &cerr) {
		v.log.Warn("vault: commit failed; the write is saved and waits for the next commit",
			"proposal", p.ID, "err", err)
	}
	if err != nil {
		return res, fmt.Errorf("apply %s: %w", p.ID, err)
	}
	return res, nil
}

// fileWrite is one file a proposal changes: its bytes before (nil: new) and
// after (nil: removed).
type fileWrite struct {
	path          string
	before, after []byte
}

// plan works out the files p writes, as they are now: p's own file, and
// the notes it supersedes; ErrStale when p's file is no longer the one it
// was made against. Nothing is written.
func (v *Vault) plan(p *Proposal, now time.Time) ([]fileWrite, error) {
	var writes []fileWrite
	current, err := v.Read(p.Path)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", p.ID, err)
	}
	if d, stale := staleness(p, current); stale {
		return nil, fmt.Errorf("apply %s: %w: %s", p.ID, ErrStale, d.Why)
	}
	var newNote *Note
	switch p.Op {
	case OpCreate, OpUpdate:
		after := []byte(p.Content)
		if p.Patch != nil {
			n, err := ParseNote(p.Path, current)
			if err != nil {
				return nil, fmt.Errorf("apply %s: %w", p.ID, err)
			}
			patch(n, p.Patch, now)
			after = n.Format()
		}
		if isNotePath(p.Path) {
			n, err := ParseNote(p.Path, after)
			if err != nil {
				return nil, fmt.Errorf("apply %s: %w", p.ID, err)
			}
			newNote = n
			// The owner's text is written as they wrote it; anyone
			// else's note is stamped and written canonically.
			if p.Author != AuthorOwner && p.Patch == nil {
				stamp(n, current, now)
				after = n.Format()
			}
		}
		writes = append(writes, fileWrite{p.Path, current, after})
	case OpDeprecate:
		n, err := ParseNote(p.Path, current)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", p.ID, err)
		}
		n.Status, n.UpdatedAt = Deprecated, now
		writes = append(writes, fileWrite{p.Path, current, n.Format()})
	case OpDelete:
		writes = append(writes, fileWrite{p.Path, current, nil})
	}
	if len(p.Supersedes) > 0 {
		if newNote == nil {
			return nil, fmt.Errorf("apply %s: only a note can supersede notes", p.ID)
		}
		mark := Superseded
		if p.Contradicts {
			mark = Contradicted
		}
		for _, old := range p.Supersedes {
			b, err := v.Read(old)
			if err != nil {
				return nil, fmt.Errorf("apply %s: %w", p.ID, err)
			}
			if b == nil {
				return nil, fmt.Errorf("apply %s: %w: %s does not exist", p.ID, ErrStale, old)
			}
			on, err := ParseNote(old, b)
			if err != nil {
				return nil, fmt.Errorf("apply %s: %w", p.ID, err)
			}
			on.Status, on.UpdatedAt = mark, now
			if !slices.Contains(on.SupersededBy, newNote.ID) {
				on.SupersededBy = append(on.SupersededBy, newNote.ID)
			}
			if !slices.Contains(newNote.Supersedes, on.ID) {
				newNote.Supersedes = append(newNote.Supersedes, on.ID)
			}
			writes = append(writes, fileWrite{old, b, on.Format()})
		}
		writes[0].after = newNote.Format()
	}

	return writes, nil
}

// ledgerEntries are p's ledger lines, one per file it writes.
func ledgerEntries(p *Proposal, writes []fileWrite, now time.Time) []Entry {
	entries := make([]Entry, 0, len(writes))
	for _, w := range writes {
		e := Entry{TS: now, Op: p.Op, Path: w.path, Author: p.Author, Reason: p.Reason,
			Sources: p.Sources, Proposal: p.ID}
		if w.before != nil {
			e.Before = Hash(w.before)
		}
		if w.after != nil {
			e.After = Hash(w.after)
		}
		if w.path != p.Path {
			e.Op = "mark_" + Op(newStatus(w.after))
		}
		entries = append(entries, e)
	}
	return entries
}

// newStatus is the status of a note's bytes, for the ledger.
func newStatus(b []byte) Status {
	n, err := ParseNote("", b)
	if err != nil {
		return ""
	}
	return n.Status
}

// stamp sets n's updated_at to now and its created_at to that of the note
// it replaces (old), or now for a new note.
func stamp(n *Note, old []byte, now time.Time) {
	n.UpdatedAt = now
	if o, err := ParseNote("", old); old != nil && err == nil && !o.CreatedAt.IsZero() {
		n.CreatedAt = o.CreatedAt
	} else if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
}

func patch(n *Note, pt *Patch, now time.Time) {
	if pt.BodyAppend != "" {
		if len(n.Body) > 0 && n.Body[len(n.Body)-1] != '\n' {
			n.Body = append(n.Body, '\n')
		}
		n.Body = append(n.Body, pt.BodyAppend...)
		if !strings.HasSuffix(pt.BodyAppend, "\n") {
			n.Body = append(n.Body, '\n')
		}
	}
	for _, t := range pt.TagsAdd {
		if !slices.Contains(n.Tags, t) {
			n.Tags = append(n.Tags, t)
		}
	}
	if pt.Confidence != nil {
		n.Confidence = min(max(*pt.Confidence, 0), 1)
	}
	if pt.Confirmed {
		n.LastConfirmedAt = now
	}
	n.UpdatedAt = now
}

// commitMessage names the change, its reason, the proposal and the sources.
func commitMessage(p *Proposal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vault: %s %s\n\n%s\n\nProposal: %s\nAuthor: %s\n", p.Op, p.Path, strings.TrimSpace(p.Reason), p.ID, p.Author)
	for _, s := range p.Sources {
		fmt.Fprintf(&b, "Source: thread %s turn %s", s.Thread, s.Turn)
		if s.ExcerptSHA256 != "" {
			fmt.Fprintf(&b, " excerpt %s", s.ExcerptSHA256)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// NewNoteID returns a fresh note id.
func NewNoteID() string { return ulid.Make().String() }

// writeAtomic replaces the file p of the root dir with data: a temporary
// file in the same directory, fsync'd, renamed over p, and the directory
// fsync'd, so that a crash leaves the old file or the new one, whole.
func writeAtomic(dir, p string, data []byte) (err error) {
	full := filepath.Join(dir, filepath.FromSlash(p))
	parent := filepath.Dir(full)
	if err := os.MkdirAll(parent, dirPerm); err != nil {
		return err
	}
	f, err := os.CreateTemp(parent, "."+filepath.Base(full)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), full); err != nil {
		return err
	}
	return syncDir(parent)
}

// removeDurable removes the file p and fsyncs its directory.
func removeDurable(dir, p string) error {
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(full))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
