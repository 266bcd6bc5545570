package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/oklog/ulid/v2"
)

// A write's commit is pending from before its files change until git holds
// it: each write first saves a pending record (fsync'd) naming the paths
// to commit, the commit's message and author, and the ledger lines to
// append; the record is removed once the commit is made. A commit that
// fails (a held index.lock, a corrupt repository) leaves its record, and
// so does a crash between the file write and the commit: CommitPending
// makes those commits later, as their own authors with their own reasons,
// and never as the owner's edits. The records live in the repository's
// private directory (.git/mnemo-pending/), never committed nor exported.
const pendingDirName = "mnemo-pending"

// pending is one saved write waiting for its git commit.
type pending struct {
	ID      string   `json:"id"` // a ULID: records sort in the order written
	Paths   []string `json:"paths"`
	Message string   `json:"message"`
	Author  string   `json:"author"`
	// Entries are the write's ledger lines. They are appended when the
	// commit is made or fails (LedgerFirst: before the commit, which then
	// holds them); LedgerSize, the ledger's size when the record was
	// saved, tells after a crash whether they were.
	Entries     []Entry   `json:"entries,omitempty"`
	LedgerFirst bool      `json:"ledger_first,omitempty"`
	LedgerSize  int64     `json:"ledger_size"`
	At          time.Time `json:"at"`
	// Batch, for ApplyBatch's record, is every file's new bytes, and
	// Dequeue the queued proposals it takes out of the inbox: a batch a
	// crash cut short is finished, never left in part (batch.go).
	Batch   []batchFile `json:"batch,omitempty"`
	Dequeue []string    `json:"dequeue,omitempty"`
}

// pendingDir is where the memory root dir keeps its pending records:
// inside .git when it is a directory, else (a gitdir link) a dot
// directory of the root that no commit names.
func pendingDir(dir string) string {
	gd := filepath.Join(dir, git.GitDirName)
	if st, err := os.Stat(gd); err == nil && st.IsDir() {
		return filepath.Join(gd, pendingDirName)
	}
	return filepath.Join(dir, "."+pendingDirName)
}

// savePending saves a pending record before a write changes any file.
func savePending(dir string, p *pending) error {
	p.ID = ulid.Make().String()
	p.At = time.Now().UTC()
	p.LedgerSize = ledgerSize(dir)
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("pending commit: %w", err)
	}
	pd := pendingDir(dir)
	if err := os.MkdirAll(pd, dirPerm); err != nil {
		return fmt.Errorf("pending commit: %w", err)
	}
	if err := writeAtomicFile(pd, p.ID+".json", b); err != nil {
		return fmt.Errorf("pending commit: %w", err)
	}
	return nil
}

// dropPending removes a record whose commit is made.
func dropPending(dir string, p *pending) error {
	full := filepath.Join(pendingDir(dir), p.ID+".json")
	if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pending commit: %w", err)
	}
	return syncDir(filepath.Dir(full))
}

// readPending reads the pending records, oldest first. A record that does
// not parse (torn by a crash while it was saved, before any file of its
// write changed) is removed.
func readPending(dir string) ([]*pending, error) {
	pd := pendingDir(dir)
	des, err := os.ReadDir(pd)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending commits: %w", err)
	}
	var out []*pending
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(pd, name))
		if err != nil {
			return nil, fmt.Errorf("pending commits: %w", err)
		}
		p := new(pending)
		if json.Unmarshal(b, p) != nil || p.ID+".json" != name || len(p.Paths) == 0 {
			os.Remove(filepath.Join(pd, name))
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pending) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// settle makes p's commit, ledgers it and drops its record; the vault's
// mutex is held. When the commit fails, the ledger lines say why
// (commit_error), the record stays, and the *CommitError is returned.
func (v *Vault) settle(ctx context.Context, p *pending, message string) (string, error) {
	if p.LedgerFirst {
		if err := appendLedger(v.dir, v.now(), p.Entries...); err != nil {
			return "", err
		}
	}
	commit, cerr := v.commit(ctx, p.Paths, message, p.Author)
	if v.crashed("ledger") {
		return commit, errCrash
	}
	if !p.LedgerFirst && len(p.Entries) > 0 {
		es := slices.Clone(p.Entries)
		for i := range es {
			es[i].Commit = commit
			if cerr != nil {
				es[i].CommitErr = cerr.Error()
			}
		}
		if err := appendLedger(v.dir, v.now(), es...); err != nil {
			return commit, errors.Join(err, cerr)
		}
	}
	if cerr != nil {
		return "", cerr
	}
	if v.crashed("drop") {
		return commit, errCrash
	}
	return commit, dropPending(v.dir, p)
}

// Pending counts the writes saved whose git commit waits (CommitPending).
func (v *Vault) Pending() (int, error) {
	ps, err := readPending(v.dir)
	return len(ps), err
}

// CommitPending makes the commits of the writes saved whose commit failed,
// or was cut short by a crash, oldest first, each as its author with its
// message marked "(committed late)", and ledgers a write that a crash left
// unledgered. It returns the paths committed; at the first commit that
// fails it stops with the *CommitError, leaving the rest waiting. A write
// whose files a crash left untouched commits nothing (git's HEAD holds
// it already) and is dropped; the temporary files a crash left beside
// them are removed.
func (v *Vault) CommitPending(ctx context.Context) (Result, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ps, err := readPending(v.dir)
	if err != nil || len(ps) == 0 {
		return Result{}, err
	}
	size := ledgerSize(v.dir)
	var res Result
	for i, p := range ps {
		removeTemps(v.dir, p.Paths) // a write a kill cut short
		// Only the newest record can be unledgered (a crash cut its
		// write short): every write before it ledgered itself.
		if i < len(ps)-1 || size > p.LedgerSize {
			p.Entries, p.LedgerFirst = nil, false
		}
		if len(p.Batch) > 0 && len(p.Entries) > 0 {
			// A batch cut short: finished, then committed whole.
			if err := v.finishBatch(p); err != nil {
				return res, fmt.Errorf("finish a batch: %w", err)
			}
		}
		if !p.LedgerFirst && len(p.Entries) > 0 && !v.written(p.Entries) {
			// Cut short before any file changed: there is nothing to
			// commit nor to ledger.
			if err := dropPending(v.dir, p); err != nil {
				return res, err
			}
			continue
		}
		commit, err := v.settle(ctx, p, lateMessage(p.Message))
		if err != nil {
			return res, err
		}
		v.log.Info("vault: committed a saved change late", "author", p.Author, "commit", commit)
		res.Paths = append(res.Paths, p.Paths...)
		res.Commit = commit
	}
	return res, nil
}

// written reports whether any of a write's files is as the write left it
// (its after hash, or gone when it was removed).
func (v *Vault) written(es []Entry) bool {
	for _, e := range es {
		if !filepath.IsLocal(filepath.FromSlash(e.Path)) {
			continue
		}
		b, err := v.Read(e.Path)
		if err != nil {
			continue
		}
		if (e.After == "" && b == nil) || (b != nil && Hash(b) == e.After) {
			return true
		}
	}
	return false
}

// lateMessage marks a commit message's subject "(committed late)".
func lateMessage(m string) string {
	subject, rest, _ := strings.Cut(m, "\n")
	return subject + " (committed late)\n" + rest
}

// writeAtomicFile is writeAtomic for a file name in the directory dir.
func writeAtomicFile(dir, name string, data []byte) error {
	return writeAtomic(dir, name, data)
}
