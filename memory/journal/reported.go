package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// maxReportedFile bounds how much of the reported file is read: it holds a
// short line per damaged journal line ever seen, and anything beyond this is
// not what the journal wrote.
const maxReportedFile = 1 << 20

// reported remembers the damage the journal has told of — a torn line it
// terminated, a line it skips — so that each damaged line is a warning the
// first time and a debug line after: on every later read, and, when the
// journal has a reported file (Options.Reported), on every later start.
//
// A damaged line is known by its shard and a hash of its bytes, so that a
// line the owner repairs by hand stops being skipped, and one damaged anew
// is told of again. A line too long to read is known by its place instead,
// as its bytes are never held. The file is one such key a line, appended
// to and never fsync'd: it is a record of what was said, not of the
// journal, and losing it costs one repeated warning.
type reported struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	seen   map[string]bool
	failed bool // the file could not be written: said once
}

func newReported(path string, log *slog.Logger) *reported {
	r := &reported{path: path, log: log, seen: make(map[string]bool)}
	if path == "" {
		return r
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r
	}
	if err != nil {
		log.Warn("journal: cannot read what was reported before: damage is told of again", "file", path, "err", err)
		return r
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReportedFile))
	if err != nil {
		log.Warn("journal: cannot read what was reported before: damage is told of again", "file", path, "err", err)
		return r
	}
	for line := range bytes.Lines(b) {
		if key := bytes.TrimSuffix(line, []byte{'\n'}); len(key) > 0 {
			r.seen[string(key)] = true
		}
	}
	return r
}

// first records key and reports whether it is new.
func (r *reported) first(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] {
		return false
	}
	r.seen[key] = true
	if r.path == "" || r.failed {
		return true
	}
	if err := r.append(key); err != nil {
		r.failed = true
		r.log.Warn("journal: cannot record what was reported: damage will be told of again at the next start", "file", r.path, "err", err)
	}
	return true
}

func (r *reported) append(key string) error {
	if err := os.MkdirAll(filepath.Dir(r.path), dirPerm); err != nil {
		return err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lineKey is how reported knows the damaged line of shard.
func lineKey(shard string, line []byte) string {
	sum := sha256.Sum256(line)
	return shard + " sha256:" + hex.EncodeToString(sum[:12])
}

// longKey is how reported knows a line of shard too long to read, at where.
func longKey(shard, whereKey string, where any) string {
	return fmt.Sprintf("%s long:%s=%v", shard, whereKey, where)
}

// skipped tells of a line readers skip: a warning the first time, a debug
// line after.
func (j *Journal) skipped(path, key string, attrs ...any) {
	level := slog.LevelDebug
	if j.reported.first(key) {
		level = slog.LevelWarn
	}
	j.log.Log(context.Background(), level, "journal: skipping line", append([]any{"file", path}, attrs...)...)
}
