// Package logtest captures what code logs through log/slog, for tests that
// check what is logged, at which level, and how often.
package logtest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer collects log lines in slog's text format. It is safe for
// concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// New returns a logger that writes every record, debug included, to a new
// Buffer.
func New() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Write appends p; the logger's handler calls it once per record.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything logged so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset forgets what was logged so far.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Lines returns the lines logged at level whose message (or attributes)
// contain substr; substr "" matches every line at level.
func (b *Buffer) Lines(level slog.Level, substr string) []string {
	tag := "level=" + level.String() + " "
	var out []string
	for line := range strings.Lines(b.String()) {
		line = strings.TrimSuffix(line, "\n")
		if strings.Contains(line, tag) && strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}
