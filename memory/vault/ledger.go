package vault

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The ledger is split by month, audit/ledger/YYYY-MM.jsonl (UTC), so that
// a commit carries only the current month's file: one ledger file for
// all time made every commit store a new blob of the whole ledger, and
// git's objects grew with the square of the writes (574 KB of ledger, 267
// MB of loose objects after 1,817 notes). A root's audit/ledger.jsonl
// from before the split is kept as it is, read first as the oldest month,
// and never written again: moving it would be a commit and a window for a
// crash, for no reader's gain.

// Entry is one line of the ledger: one durable write to one file.
type Entry struct {
	TS       time.Time `json:"ts"`
	Op       Op        `json:"op"`
	Path     string    `json:"path"`
	Author   string    `json:"author"` // agent, owner, curator, job:<name>
	Reason   string    `json:"reason"`
	Sources  []Source  `json:"sources,omitempty"`
	Proposal string    `json:"proposal,omitempty"`
	Before   string    `json:"before_sha,omitempty"` // "" when the file was new
	After    string    `json:"after_sha,omitempty"`  // "" when the file was deleted
	// Commit is the git commit that holds the write; "" when the commit
	// failed and the write waits for the next one (CommitErr says why).
	Commit    string `json:"commit,omitempty"`
	CommitErr string `json:"commit_error,omitempty"`
}

// ledgerMonth is the name of the ledger file of the month of t; a clock
// beyond the year 9999 (or before 1) counts as its last (or first) month,
// so that the name is always one LedgerFiles reads.
func ledgerMonth(t time.Time) string {
	t = t.UTC()
	if t.Year() > 9999 {
		t = time.Date(9999, 12, 1, 0, 0, 0, 0, time.UTC)
	} else if t.Year() < 1 {
		t = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return t.Format("2006-01") + ".jsonl"
}

// isLedgerMonth reports whether name is a month's ledger file name.
func isLedgerMonth(name string) bool {
	if len(name) != len("2006-01.jsonl") || !strings.HasSuffix(name, ".jsonl") {
		return false
	}
	_, err := time.Parse("2006-01", name[:7])
	return err == nil
}

// LedgerFiles returns the ledger's files in the memory root dir,
// slash-separated and relative to dir, oldest first: the file from before
// the split (LegacyLedgerFile) when there is one, then the months in
// order. Nothing else in audit/ledger/ is the ledger's.
func LedgerFiles(dir string) ([]string, error) {
	var out []string
	if st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(LegacyLedgerFile))); err == nil && st.Mode().IsRegular() {
		out = append(out, LegacyLedgerFile)
	}
	des, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(LedgerDir)))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	for _, de := range des { // ReadDir sorts by name: months in order
		if de.Type().IsRegular() && isLedgerMonth(de.Name()) {
			out = append(out, LedgerDir+"/"+de.Name())
		}
	}
	return out, nil
}

// isLedgerPath reports whether p (slash-separated) names a ledger file.
func isLedgerPath(p string) bool {
	if p == LegacyLedgerFile {
		return true
	}
	dir, name, ok := strings.Cut(p, LedgerDir+"/")
	return ok && dir == "" && isLedgerMonth(name)
}

// ledgerTarget is the file the next lines go to: the month of now, or the
// newest month there is when the clock went back to an earlier one, so
// that the months read in order are the lines in the order written.
func ledgerTarget(files []string, now time.Time) string {
	target := LedgerDir + "/" + ledgerMonth(now)
	if n := len(files); n > 0 && files[n-1] != LegacyLedgerFile && files[n-1] > target {
		return files[n-1]
	}
	return target
}

// appendLedger appends entries to the ledger of the memory root dir, one
// JSON line each, in the month's file of now (ledgerTarget), and fsyncs
// the file, and the folder when the file is new, before returning. A torn
// last line (a crash mid-append) is first terminated, so that it spoils
// only itself.
func appendLedger(dir string, now time.Time, entries ...Entry) error {
	var buf bytes.Buffer
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	files, err := LedgerFiles(dir)
	if err != nil {
		return err
	}
	target := ledgerTarget(files, now)
	path := filepath.Join(dir, filepath.FromSlash(target))
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	isNew := !slices.Contains(files, target)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if last[0] != '\n' {
			buf = *bytes.NewBuffer(append([]byte{'\n'}, buf.Bytes()...))
		}
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if isNew { // the month's file, and audit/ledger/ when it is new too
		for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
			if err := syncDir(d); err != nil {
				return fmt.Errorf("ledger: %w", err)
			}
		}
	}
	return nil
}

// ledgerSize is the size in bytes of all the ledger's files: appends only
// grow it, so a pending record's copy says whether its lines were written.
func ledgerSize(dir string) int64 {
	files, _ := LedgerFiles(dir)
	var n int64
	for _, p := range files {
		if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			n += st.Size()
		}
	}
	return n
}

// ReadLedger reads the ledger of the memory root dir, oldest first: its
// files in order (LedgerFiles). Lines that are not a valid entry (a torn
// last line after a crash, a hand edit) are skipped and counted in
// skipped. A missing ledger is empty.
func ReadLedger(dir string) (entries []Entry, skipped int, err error) {
	files, err := LedgerFiles(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, p := range files {
		es, n, err := readLedgerFile(filepath.Join(dir, filepath.FromSlash(p)))
		entries, skipped = append(entries, es...), skipped+n
		if err != nil {
			return entries, skipped, err
		}
	}
	return entries, skipped, nil
}

// readLedgerFile reads one ledger file; a missing one is empty.
func readLedgerFile(path string) (entries []Entry, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e Entry
			if json.Unmarshal(line, &e) == nil && e.Path != "" {
				entries = append(entries, e)
			} else {
				skipped++
			}
		}
		if errors.Is(err, io.EOF) {
			return entries, skipped, nil
		}
		if err != nil {
			return entries, skipped, fmt.Errorf("ledger: %w", err)
		}
	}
}

// ledgerPath is the ledger file the next lines go to, for a pending
// record's paths (the commit takes in whichever ledger files changed).
func (v *Vault) ledgerPath() string {
	files, _ := LedgerFiles(v.dir)
	return ledgerTarget(files, v.now())
}

// commit commits paths with message as author, and with them the ledger's
// files that hold lines git lacks: the lines of earlier writes (a write's
// line names its commit, so it is written after it and is taken in by the
// next). A ledger file is committed only when it changed since git last
// took it, so that a month's file, once its month is over, is never
// hashed or stored again. The vault's mutex is held.
func (v *Vault) commit(ctx context.Context, paths []string, message, author string) (string, error) {
	paths = slices.DeleteFunc(slices.Clone(paths), isLedgerPath)
	files, err := LedgerFiles(v.dir)
	if err != nil {
		return "", &CommitError{Dir: v.dir, Err: err}
	}
	if v.ledgerGit == nil {
		v.ledgerGit = ledgerInHead(v.dir, files)
	}
	sizes := make(map[string]int64)
	for _, p := range files {
		st, err := os.Stat(filepath.Join(v.dir, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		if n, ok := v.ledgerGit[p]; ok && n == st.Size() {
			continue
		}
		paths = append(paths, p)
		sizes[p] = st.Size()
	}
	h, err := v.git.commit(ctx, v.dir, paths, message, author)
	if err == nil {
		maps.Copy(v.ledgerGit, sizes)
	}
	return h, err
}

// ledgerInHead returns the sizes of the ledger files (of files) whose
// content is HEAD's: what a new Vault's first commit need not take in.
// Any error leaves a file out (committed once more, harmlessly).
func ledgerInHead(dir string, files []string) map[string]int64 {
	out := make(map[string]int64)
	repo, err := openRepository(dir, nil)
	if err != nil {
		return out
	}
	head, err := repo.Head()
	if err != nil {
		return out
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return out
	}
	tree, err := c.Tree()
	if err != nil {
		return out
	}
	for _, p := range files {
		e, err := tree.FindEntry(p)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err == nil && plumbing.ComputeHash(plumbing.BlobObject, b) == e.Hash {
			out[p] = int64(len(b))
		}
	}
	return out
}
