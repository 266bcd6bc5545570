// Package journal stores the conversation as an append-only journal of JSON
// lines, one file per UTC day (YYYY-MM-DD.jsonl).
//
// The journal is the truth from which every index is rebuilt, so it is built
// to survive crashes and hand edits: an appended record is fsync'd before
// Append returns, and a torn or corrupt line is skipped with a warning (the
// first time it is met; see Options.Reported), never fatal, and never
// rewritten.
package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	shardExt   = ".jsonl"
	dateLayout = "2006-01-02"

	// maxLine is the longest line, without its newline, that Tail and Scan
	// read. Longer lines are skipped, and Append refuses to write them.
	maxLine = 4 << 20
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("journal: closed")

var errTooLarge = fmt.Errorf("journal: record larger than %d bytes", maxLine)

// Record is one stored turn.
type Record struct {
	ID         string    `json:"id"`                   // ULID, assigned by Append, time-ordered
	Role       string    `json:"role"`                 // "user" | "agent" (later also "tool")
	Text       string    `json:"text"`                 // the turn's text
	TS         time.Time `json:"ts"`                   // UTC, assigned by Append when zero
	Mode       string    `json:"mode"`                 // "text" | "voice"
	Incomplete bool      `json:"incomplete,omitempty"` // agent reply cut short
	Model      string    `json:"model,omitempty"`      // the model that wrote an agent reply
	// ToolCalls are the calls an agent turn made beside Text.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Tool is a tool call's outcome, on a record with role "tool"; Text
	// holds the result given to the model.
	Tool *ToolResult `json:"tool,omitempty"`
	// ResponseID is the provider's stored response an agent turn ended
	// with (xAI Responses), to continue from after a restart.
	ResponseID string `json:"response_id,omitempty"`

	// Kind is "" for a turn, KindForget for a tombstone (see forget.go)
	// and KindDecision for a proposal's decision (see decision.go).
	Kind string `json:"kind,omitempty"`
	// Forgets are the ids of the records a tombstone forgets.
	Forgets []string `json:"forgets,omitempty"`
	// By says who asked for a tombstone ("owner", "agent"), or who made
	// a decision ("policy", "owner").
	By string `json:"by,omitempty"`
	// Decision is what a decision record says.
	Decision *Decision `json:"decision,omitempty"`
	// Redacted marks a forgotten record whose content a purge removed.
	Redacted bool `json:"redacted,omitempty"`
	// Conv is the conversation a turn belongs to; "" is the default one
	// (every record written before conversations existed). Tombstones and
	// decisions belong to none. See ValidConversation.
	Conv string `json:"conv,omitempty"`
}

// ToolCall is one call an agent turn made. Arguments have secrets redacted.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	CallID     string          `json:"call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments,omitempty"` // secrets redacted
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"` // the failure, as the model saw it
	DurationMS int64           `json:"duration_ms"`
	// Confirmed is the owner's answer for a confirm tool; nil when none
	// was needed.
	Confirmed *bool `json:"confirmed,omitempty"`
}

// Options configures a Journal.
type Options struct {
	Log *slog.Logger     // nil: slog.New(slog.DiscardHandler)
	Now func() time.Time // nil: time.Now
	// Reported is a file where the journal remembers the damaged lines it
	// has warned of, so that a later start tells of them at debug level
	// only; it is created 0600 (its directory 0700) when first needed.
	// "": they are remembered for the life of the Journal.
	Reported string
}

// Journal is an open journal. Its methods are safe for concurrent use.
//
// One writer goroutine, started by Open and stopped by Close, owns the shard
// file being appended to; readers never see what it has not yet fsync'd.
type Journal struct {
	dir      string
	log      *slog.Logger
	now      func() time.Time
	reported *reported // damage already told of

	wake    chan struct{} // capacity 1: pending has work, or closed changed
	stopped chan struct{} // closed when the writer goroutine has exited

	// Owned by the writer goroutine. closeErr is read by Close after stopped.
	w        writer
	closeErr error

	mu         sync.Mutex
	closed     bool
	failed     error // sticky: set when an fsync failed
	pending    []*request
	purges     []*purgeRequest
	active     string // newest shard name; "" when the journal is empty
	activeSize int64  // bytes of active known to be durable
}

type request struct {
	rec  Record
	done chan result // capacity 1
}

type result struct {
	rec Record
	err error
}

// writer is the state of the writer goroutine.
type writer struct {
	ids      idGen
	newest   string        // shard names below this are never written to
	f        *os.File      // open shard, or nil
	name     string        // name of f
	size     int64         // bytes in f, including any not yet fsync'd
	needNL   bool          // f may end in a torn line: write '\n' first
	dirDirty bool          // a shard was created and the directory not yet synced
	buf      bytes.Buffer  // lines to write
	enc      *json.Encoder // writes to buf
}

// Open opens the journal in dir, creating dir if needed. It terminates a torn
// last line left by a crash with a newline, so that the fragment stays a
// line of its own, and starts the writer goroutine; call Close to stop it.
func Open(dir string, opts Options) (*Journal, error) {
	j := &Journal{
		dir:     dir,
		log:     opts.Log,
		now:     opts.Now,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if j.now == nil {
		j.now = time.Now
	}
	j.reported = newReported(opts.Reported, j.log)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	names, err := j.shardNames()
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		newest := names[len(names)-1]
		size, err := j.repairTail(newest)
		if err != nil {
			return nil, err
		}
		j.active, j.activeSize = newest, size
		j.w.newest = newest
		last, err := j.tail(1, false, nil, "")
		if err != nil {
			return nil, err
		}
		if len(last) == 1 {
			j.w.ids.last, _ = parseID(last[0].ID) // Tail only returns valid IDs
		}
	}
	go j.run()
	return j, nil
}

// Append stores rec and returns it with its ID and TS set. It returns only
// after the record is written and fsync'd. Concurrent calls share one write
// and one fsync.
//
// rec.ID is always assigned; rec.TS is set to the current time when zero and
// converted to UTC otherwise. Canceling ctx abandons the append only while
// the record is still waiting to be written; once the writer has taken it,
// Append waits for the outcome. After Close, Append returns ErrClosed.
//
// When a write fails, Append returns the error and the record may or may
// not be in the journal. When an fsync fails, every later Append fails too,
// until the journal is reopened.
func (j *Journal) Append(ctx context.Context, rec Record) (Record, error) {
	if rec.Role == "" {
		return Record{}, errors.New("journal: append: record has no role")
	}
	if err := checkKind(&rec); err != nil {
		return Record{}, fmt.Errorf("journal: append: %w", err)
	}
	if rec.Conv != "" && !ValidConversation(rec.Conv) {
		return Record{}, errors.New("journal: append: record's conv is not a valid conversation id")
	}
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("journal: append: %w", err)
	}
	req := &request{rec: rec, done: make(chan result, 1)}
	j.mu.Lock()
	switch {
	case j.closed:
		j.mu.Unlock()
		return Record{}, ErrClosed
	case j.failed != nil:
		err := j.failed
		j.mu.Unlock()
		return Record{}, err
	}
	j.pending = append(j.pending, req)
	j.mu.Unlock()
	j.signal()

	select {
	case res := <-req.done:
		return res.rec, res.err
	case <-ctx.Done():
	}
	j.mu.Lock()
	if i := slices.Index(j.pending, req); i >= 0 {
		j.pending = slices.Delete(j.pending, i, i+1)
		j.mu.Unlock()
		return Record{}, fmt.Errorf("journal: append: %w", ctx.Err())
	}
	j.mu.Unlock()
	// The writer has taken the record: its outcome is coming.
	res := <-req.done
	return res.rec, res.err
}

// Close writes any pending appends, stops the writer goroutine and closes
// the shard file. It is safe to call more than once; every call returns the
// same error.
func (j *Journal) Close() error {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.signal()
	<-j.stopped
	return j.closeErr
}

func (j *Journal) signal() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// run is the writer goroutine: it takes every pending request, writes them,
// fsyncs once per shard touched, and acknowledges them, until Close.
func (j *Journal) run() {
	defer close(j.stopped)
	for {
		j.mu.Lock()
		batch := j.pending
		j.pending = nil
		purges := j.purges
		j.purges = nil
		closed := j.closed
		j.mu.Unlock()

		if len(batch) > 0 {
			j.commit(batch)
		}
		for _, p := range purges {
			p.done <- j.purge(p.ctx)
		}
		if len(batch) > 0 || len(purges) > 0 {
			continue
		}
		if closed {
			j.closeErr = j.closeFile()
			return
		}
		<-j.wake
	}
}

// commit writes batch. Records are written in batch order, which is also ID
// order; consecutive records for the same shard share one write and fsync.
func (j *Journal) commit(batch []*request) {
	j.mu.Lock()
	failed := j.failed
	j.mu.Unlock()
	if failed != nil {
		ackAll(batch, failed)
		return
	}

	var (
		seg      []*request
		segShard string
	)
	j.w.buf.Reset()
	for _, req := range batch {
		now := j.now().UTC()
		shard := now.Format(dateLayout) + shardExt
		if shard < j.w.newest {
			// The clock went back across midnight: keep appending to the
			// newest shard, so that file order stays ID order.
			shard = j.w.newest
		}
		if len(seg) > 0 && shard != segShard {
			j.flush(segShard, seg)
			seg = seg[:0]
			j.w.buf.Reset()
		}
		if err := j.encode(&req.rec, now); err != nil {
			req.done <- result{err: err}
			continue
		}
		j.w.newest = shard
		seg = append(seg, req)
		segShard = shard
	}
	if len(seg) > 0 {
		j.flush(segShard, seg)
	}
}

// encode assigns the ID and TS of rec and appends its line to the buffer.
func (j *Journal) encode(rec *Record, now time.Time) error {
	id, err := j.w.ids.next(now)
	if err != nil {
		return fmt.Errorf("journal: append: %w", err)
	}
	rec.ID = id.String()
	if rec.TS.IsZero() {
		rec.TS = now
	}
	rec.TS = rec.TS.UTC()
	if j.w.enc == nil {
		j.w.enc = json.NewEncoder(&j.w.buf)
		j.w.enc.SetEscapeHTML(false) // keep the journal readable by hand
	}
	start := j.w.buf.Len()
	if err := j.w.enc.Encode(rec); err != nil { // writes nothing on error
		return fmt.Errorf("journal: append: encode: %w", err)
	}
	if j.w.buf.Len()-start-1 > maxLine {
		j.w.buf.Truncate(start)
		return errTooLarge
	}
	return nil
}

// flush writes the buffered lines of seg to shard, fsyncs, publishes the new
// durable size to readers and acknowledges seg.
func (j *Journal) flush(shard string, seg []*request) {
	if err := j.openShard(shard); err != nil {
		ackAll(seg, err)
		return
	}
	path := filepath.Join(j.dir, shard)
	if j.w.needNL {
		if err := j.write([]byte{'\n'}); err != nil {
			ackAll(seg, fmt.Errorf("journal: write %s: %w", path, err))
			return
		}
		j.w.needNL = false
	}
	if err := j.write(j.w.buf.Bytes()); err != nil {
		ackAll(seg, fmt.Errorf("journal: write %s: %w", path, err))
		return
	}
	if err := j.w.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// nothing written since the last good fsync can be trusted, so the
		// journal refuses further appends until it is reopened.
		err = fmt.Errorf("journal: sync %s (reopen the journal to continue): %w", path, err)
		j.mu.Lock()
		j.failed = err
		j.mu.Unlock()
		ackAll(seg, err)
		return
	}
	if j.w.dirDirty {
		if err := syncDir(j.dir); err != nil {
			ackAll(seg, fmt.Errorf("journal: sync directory %s: %w", j.dir, err))
			return
		}
		j.w.dirDirty = false
	}
	j.mu.Lock()
	j.active, j.activeSize = shard, j.w.size
	j.mu.Unlock()
	for _, req := range seg {
		req.done <- result{rec: req.rec}
	}
}

// write appends b to the open shard. After a short or failed write the file
// may end in a fragment, so the next write starts with a newline.
func (j *Journal) write(b []byte) error {
	n, err := j.w.f.Write(b)
	j.w.size += int64(n)
	if err != nil {
		j.w.needNL = true
	}
	return err
}

// openShard makes shard the open file, creating it if needed.
func (j *Journal) openShard(shard string) error {
	if j.w.f != nil && j.w.name == shard {
		return nil
	}
	if err := j.closeFile(); err != nil {
		return err
	}
	path := filepath.Join(j.dir, shard)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, filePerm)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	}
	if err != nil {
		return fmt.Errorf("journal: open shard: %w", err)
	}
	size, endsNL, err := fileEnd(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("journal: open shard: %w", err)
	}
	j.w.f, j.w.name, j.w.size = f, shard, size
	j.w.needNL = !endsNL
	if created {
		j.w.dirDirty = true
	}
	return nil
}

func (j *Journal) closeFile() error {
	if j.w.f == nil {
		return nil
	}
	err := j.w.f.Close()
	j.w.f, j.w.name = nil, ""
	if err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return nil
}

// repairTail terminates a torn last line of shard with a newline, and
// returns the size of the shard afterwards. It never truncates. Once
// terminated, the line is not torn at the next start: it is warned of once.
func (j *Journal) repairTail(shard string) (int64, error) {
	path := filepath.Join(j.dir, shard)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	size, endsNL, err := fileEnd(f)
	if err != nil {
		return 0, fmt.Errorf("journal: %s: %w", path, err)
	}
	if endsNL {
		return size, nil
	}
	// Readers will skip the fragment as a damaged line: this warning is
	// the one it gets (see reported).
	err = reverseLines(f, size, func(off int64, line []byte, tooLong bool) bool {
		key := lineKey(shard, line)
		if tooLong {
			key = longKey(shard, "offset", off)
		}
		j.reported.first(key)
		j.log.Warn("journal: torn last line, terminating it", "file", path, "offset", off)
		return false
	})
	if err != nil {
		return 0, fmt.Errorf("journal: %s: %w", path, err)
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return 0, fmt.Errorf("journal: repair %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("journal: repair %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("journal: repair %s: %w", path, err)
	}
	return size + 1, nil
}

// fileEnd returns the size of f and whether it is empty or ends in '\n'.
func fileEnd(f *os.File) (size int64, endsNL bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	size = st.Size()
	if size == 0 {
		return 0, true, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, false, err
	}
	return size, last[0] == '\n', nil
}

func ackAll(reqs []*request, err error) {
	for _, req := range reqs {
		req.done <- result{err: err}
	}
}

// syncDir makes the creation of a file in dir durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsync'd there
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// shardNames returns the names of the shard files in the journal, oldest
// first.
func (j *Journal) shardNames() ([]string, error) {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !isShardName(e.Name()) {
			continue
		}
		if !e.Type().IsRegular() {
			j.log.Warn("journal: skipping shard that is not a regular file", "file", filepath.Join(j.dir, e.Name()))
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil // os.ReadDir sorts by name, and names sort by date
}

func isShardName(name string) bool {
	date, ok := strings.CutSuffix(name, shardExt)
	if !ok || len(date) != len(dateLayout) {
		return false
	}
	_, err := time.Parse(dateLayout, date)
	return err == nil
}
