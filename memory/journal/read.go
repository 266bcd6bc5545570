package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"
)

// chunkSize is how much Tail reads at a time, backwards from the end.
const chunkSize = 64 << 10

// Tail returns the last n valid records, oldest first. It reads the shards
// backwards from their end, so its cost depends on n, not on the size of the
// journal. Records appended concurrently may or may not be included.
//
// Tail is the journal's live view: tombstones, the records they forget,
// redacted records and decision records are left out, and a record after a forgotten one among
// those read has no ResponseID (the provider's state holds what was
// forgotten).
func (j *Journal) Tail(n int) ([]Record, error) {
	return j.tail(n, true, nil, "")
}

// TailOf is Tail of one conversation (conv "" is the default one): the
// last n live turns whose Conv is conv. first, when set, is the id of the
// conversation's first record: the shards before its day are not read, so
// that a conversation's tail costs what its span of the journal does, not
// the whole journal (a day of slack covers clocks that stepped back).
// Tombstones of every conversation apply.
func (j *Journal) TailOf(conv string, n int, first string) ([]Record, error) {
	return j.tail(n, true, &conv, first)
}

// tail returns the last n valid records, oldest first; only live ones
// when live is set, else every record, tombstones included; only turns of
// *conv when conv is set, from the shards from first's day on.
func (j *Journal) tail(n int, live bool, conv *string, first string) ([]Record, error) {
	if n <= 0 {
		return nil, nil
	}
	shards, err := j.snapshot()
	if err != nil {
		return nil, err
	}
	if t, ok := idTime(first); ok {
		from := t.UTC().AddDate(0, 0, -1).Format(dateLayout) + shardExt
		i := 0
		for i < len(shards) && shards[i].name < from {
			i++
		}
		shards = shards[i:]
	}
	var skip []byte // a line without these bytes is not conv's
	if conv != nil && *conv != "" {
		skip = []byte(*conv)
	}
	out := make([]Record, 0, min(n, 256)) // newest first
	// A tombstone is newer than the records it forgets: reading backwards,
	// it is met first.
	forgotten := make(map[string]bool)
	gap := "\x7f" // the oldest forgotten record met
	for i := len(shards) - 1; i >= 0 && len(out) < n; i-- {
		err := j.readShard(shards[i], func(f *os.File, path string, size int64) error {
			return reverseLines(f, size, func(off int64, line []byte, tooLong bool) bool {
				if skip != nil && !tooLong && !bytes.Contains(line, skip) && !bytes.Contains(line, tombstoneHint) {
					// Neither this conversation's nor a tombstone: not
					// worth parsing (its id is not even in the line).
					return true
				}
				rec, ok := j.record(path, "offset", off, line, tooLong)
				switch {
				case !ok:
				case !live:
					out = append(out, rec)
				case rec.IsTombstone():
					for _, id := range rec.Forgets {
						forgotten[id] = true
					}
				case !rec.IsTurn():
					// A decision: not a turn.
				case conv != nil && rec.Conv != *conv:
					// Another conversation's.
				case forgotten[rec.ID] || rec.Redacted:
					if rec.ID < gap {
						gap = rec.ID
					}
				default:
					out = append(out, rec)
				}
				return len(out) < n
			})
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	// A provider's stored state (ResponseID) made after a forgotten turn
	// holds it: continuing from it would bring the turn back.
	for i := range out {
		if out[i].ID > gap {
			out[i].ResponseID = ""
		}
	}
	slices.Reverse(out)
	return out, nil
}

// Scan calls fn for every live record, tombstone and decision, oldest first
// (see ScanAfter). It stops at, and
// returns, the first error from fn, or the error of ctx once it is done.
// Records appended concurrently may or may not be included.
func (j *Journal) Scan(ctx context.Context, fn func(Record) error) error {
	return j.ScanAfter(ctx, "", fn)
}

// ScanAfter calls fn, oldest first, for every valid record whose ID sorts
// after id ("" means all), reading only the shards that can hold them: a
// record's shard is the UTC day of its append, which its ULID's time gives
// (a day of slack covers clocks that stepped back). It is how an indexer
// resumes from its cursor without rereading the whole journal.
//
// It is the live view plus the records that are not turns (IsTurn): a
// record that a tombstone among the shards read forgets, or that is
// redacted, is left out; the tombstones themselves are visited
// (IsTombstone), so that what was derived from the records they forget
// can be dropped, and so are decision records (IsDecision). The shards are
// read twice: first for their tombstones, then for their records.
func (j *Journal) ScanAfter(ctx context.Context, id string, fn func(Record) error) error {
	return j.scan(ctx, id, id, fn)
}

// scan is ScanAfter(id) reading the shards that can hold records from
// the time of the id near on.
func (j *Journal) scan(ctx context.Context, near, id string, fn func(Record) error) error {
	all, err := j.snapshot()
	if err != nil {
		return err
	}
	from := ""
	if t, ok := idTime(near); ok {
		from = t.UTC().AddDate(0, 0, -1).Format(dateLayout) + shardExt
	}
	var shards []shard
	for _, s := range all {
		if s.name >= from {
			shards = append(shards, s)
		}
	}
	forgotten, err := j.tombstones(ctx, shards)
	if err != nil {
		return err
	}
	for _, s := range shards {
		err := j.readShard(s, func(f *os.File, path string, size int64) error {
			return forwardLines(io.NewSectionReader(f, 0, size), func(lineNo int, line []byte, tooLong bool) error {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("journal: scan: %w", err)
				}
				if id != "" && !tooLong && idAtMost(line, id) {
					return nil // before the cursor: not worth parsing
				}
				rec, ok := j.record(path, "line", lineNo, line, tooLong)
				if !ok || (id != "" && rec.ID <= id) || forgotten[rec.ID] || rec.Redacted {
					return nil
				}
				return fn(rec)
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// shard is a shard file as a reader sees it.
type shard struct {
	name string
	size int64 // bytes to read; -1: the whole file
}

// snapshot returns the shards to read, oldest first: those that existed at
// the last durable append, with the newest cut at its durable size, so that
// readers never see a line being written.
func (j *Journal) snapshot() ([]shard, error) {
	j.mu.Lock()
	active, activeSize := j.active, j.activeSize
	j.mu.Unlock()
	if active == "" {
		return nil, nil
	}
	names, err := j.shardNames()
	if err != nil {
		return nil, err
	}
	shards := make([]shard, 0, len(names))
	for _, name := range names {
		switch {
		case name < active:
			shards = append(shards, shard{name: name, size: -1})
		case name == active:
			shards = append(shards, shard{name: name, size: activeSize})
		}
	}
	return shards, nil
}

// readShard opens s and calls read with it. A shard removed since the
// snapshot is skipped.
func (j *Journal) readShard(s shard, read func(f *os.File, path string, size int64) error) error {
	path := filepath.Join(j.dir, s.name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		j.log.Warn("journal: shard disappeared while reading", "file", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	size := s.size
	if size < 0 {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		size = st.Size()
	}
	if err := read(f, path, size); err != nil {
		return err
	}
	return nil
}

// record parses one line, logging why it is skipped when it is not a valid
// record (a warning the first time, see reported); where says where the
// line is (key "offset" or "line", and value). Empty lines are skipped
// silently. The line's content is never logged.
func (j *Journal) record(path, whereKey string, where any, line []byte, tooLong bool) (Record, bool) {
	shard := filepath.Base(path)
	if tooLong {
		j.skipped(path, longKey(shard, whereKey, where), whereKey, where, "reason", fmt.Sprintf("longer than %d bytes", maxLine))
		return Record{}, false
	}
	if len(line) == 0 {
		return Record{}, false
	}
	rec, err := parseRecord(line)
	if err != nil {
		j.skipped(path, lineKey(shard, line), whereKey, where, "reason", err.Error())
		return Record{}, false
	}
	return rec, true
}

// parseRecord parses a line into a valid record. Its errors describe what is
// wrong without quoting the line.
func parseRecord(line []byte) (Record, error) {
	if !utf8.Valid(line) {
		return Record{}, errors.New("not valid UTF-8")
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil {
		var (
			syntax *json.SyntaxError
			typ    *json.UnmarshalTypeError
		)
		switch {
		case errors.As(err, &syntax):
			return Record{}, fmt.Errorf("invalid JSON at byte %d", syntax.Offset)
		case errors.As(err, &typ) && typ.Field != "":
			return Record{}, fmt.Errorf("field %q has the wrong type", typ.Field)
		default:
			return Record{}, errors.New("invalid JSON value")
		}
	}
	if rec.ID == "" {
		return Record{}, errors.New("record has no id")
	}
	id, err := parseID(rec.ID)
	if err != nil {
		return Record{}, errors.New("record id is not a ULID")
	}
	rec.ID = id.String() // canonical upper case, so that IDs compare as strings
	if rec.Role == "" {
		return Record{}, errors.New("record has no role")
	}
	if err := checkKind(&rec); err != nil {
		return Record{}, err
	}
	if rec.Conv != "" && !ValidConversation(rec.Conv) {
		return Record{}, errors.New("record's conv is not a valid conversation id")
	}
	return rec, nil
}

// MaxConversationID is the longest conversation id.
const MaxConversationID = 64

// ValidConversation reports whether s may name a conversation: 1 to 64
// of a-z, 0-9, '-' and '_'.
func ValidConversation(s string) bool {
	if s == "" || len(s) > MaxConversationID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// reverseLines calls fn with each line of the first size bytes of r, last
// line first, with the offset where the line starts and without its
// newline, until fn returns false. The lines are those forwardLines finds. A
// line longer than maxLine is passed as nil with tooLong set. The line is
// only valid during the call.
//
// It reads chunkSize bytes at a time from the end; a line that spans chunks
// is read again in one piece, so memory stays bounded by maxLine.
func reverseLines(r io.ReaderAt, size int64, fn func(off int64, line []byte, tooLong bool) bool) error {
	if size <= 0 {
		return nil
	}
	buf := make([]byte, min(chunkSize, size))
	var long []byte
	// emit passes the line [start, end) to fn; chunk holds [pos, pos+len(chunk)).
	emit := func(start, end, pos int64, chunk []byte) (bool, error) {
		n := end - start
		switch {
		case start == size:
			return true, nil // after the final newline: no line
		case n > maxLine:
			return fn(start, nil, true), nil
		case end <= pos+int64(len(chunk)):
			return fn(start, chunk[start-pos:end-pos], false), nil
		}
		if int64(cap(long)) < n {
			long = make([]byte, n)
		}
		long = long[:n]
		if err := readFull(r, long, start); err != nil {
			return false, err
		}
		return fn(start, long, false), nil
	}

	end := size // end of the line being looked for, before its newline
	pos := size // start of chunk in the file
	var chunk []byte
	for pos > 0 {
		n := min(int64(chunkSize), pos)
		pos -= n
		chunk = buf[:n]
		if err := readFull(r, chunk, pos); err != nil {
			return err
		}
		for i := len(chunk); ; {
			i = bytes.LastIndexByte(chunk[:i], '\n')
			if i < 0 {
				break
			}
			more, err := emit(pos+int64(i)+1, end, pos, chunk)
			if err != nil || !more {
				return err
			}
			end = pos + int64(i)
		}
	}
	_, err := emit(0, end, 0, chunk) // the first line of the file
	return err
}

func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("journal: read at %d: %w", off, err)
}

// forwardLines calls fn with each line of r, numbered from 1 and without its
// newline, until fn returns an error, which it returns. A line longer than
// maxLine is passed as nil with tooLong set, having been discarded as it was
// read. The line is only valid during the call.
func forwardLines(r io.Reader, fn func(lineNo int, line []byte, tooLong bool) error) error {
	br := bufio.NewReaderSize(r, chunkSize)
	var (
		long    []byte // the line so far, when it is longer than br's buffer
		tooLong bool
	)
	for lineNo := 1; ; {
		frag, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !tooLong && len(long)+len(frag) > maxLine {
				tooLong, long = true, long[:0]
			}
			if !tooLong {
				long = append(long, frag...)
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("journal: read: %w", err)
		case errors.Is(err, io.EOF) && len(frag) == 0 && len(long) == 0 && !tooLong:
			return nil
		}
		frag = bytes.TrimSuffix(frag, []byte{'\n'})
		line := frag
		if len(long) > 0 || tooLong {
			if !tooLong && len(long)+len(frag) > maxLine {
				tooLong = true
			}
			if !tooLong {
				long = append(long, frag...)
				line = long
			}
		}
		if tooLong {
			line = nil
		}
		if ferr := fn(lineNo, line, tooLong); ferr != nil {
			return ferr
		}
		if err != nil { // io.EOF after a last line without newline
			return nil
		}
		lineNo++
		long, tooLong = long[:0], false
	}
}

// idPrefix starts every line the writer writes: the record's id first.
var idPrefix = []byte(`{"id":"`)

// idAtMost reports whether line, as the writer writes it, holds a record
// whose id sorts at or before id, read without parsing the line. A line
// in another shape (a hand edit) is not judged: false. A lower-case id
// sorts after its canonical upper case, so it is never wrongly judged.
func idAtMost(line []byte, id string) bool {
	const n = 26 // a ULID's length
	if len(id) != n || len(line) < len(idPrefix)+n+1 || !bytes.HasPrefix(line, idPrefix) || line[len(idPrefix)+n] != '"' {
		return false
	}
	return string(line[len(idPrefix):len(idPrefix)+n]) <= id
}
