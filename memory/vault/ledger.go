package vault

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Entry is one line of audit/ledger.jsonl: one durable write to one file.
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

// appendLedger appends entries to the ledger in dir, one JSON line each, and
// fsyncs before returning. A torn last line (a crash mid-append) is first
// terminated, so that it spoils only itself.
func appendLedger(dir string, entries ...Entry) error {
	var buf bytes.Buffer
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	path := filepath.Join(dir, filepath.FromSlash(LedgerFile))
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
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
	return f.Close()
}

// ReadLedger reads the ledger of the memory root dir, oldest first. Lines
// that are not a valid entry (a torn last line after a crash, a hand edit)
// are skipped and counted in skipped. A missing ledger is empty.
func ReadLedger(dir string) (entries []Entry, skipped int, err error) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(LedgerFile)))
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
