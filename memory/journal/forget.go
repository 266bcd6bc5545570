package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KindForget is the Kind of a tombstone: a record that forgets others.
//
// The journal stays append-only: forgetting a turn appends a tombstone
// naming it (Forgets, who asked in By, when in TS), and from then on the
// live view — Tail, Scan, ScanAfter, Find — leaves the turn out. Its text
// stays on disk until the owner confirms a Purge, which rewrites the
// shards holding forgotten records with their content removed.
const KindForget = "forget"

// RoleSystem is the Role of a tombstone: nobody said it.
const RoleSystem = "system"

// IsTombstone reports whether r forgets other records.
func (r Record) IsTombstone() bool { return r.Kind == KindForget }

// Tombstone is the record that forgets the records ids, asked for by by.
func Tombstone(ids []string, by string) Record {
	return Record{Role: RoleSystem, Kind: KindForget, Forgets: slices.Clone(ids), By: by}
}

// checkKind checks the kind of rec: a turn, or a tombstone naming at
// least one record by a valid id (made canonical, upper case). Its errors
// never quote the record's content.
func checkKind(rec *Record) error {
	switch rec.Kind {
	case "":
		return nil
	case KindForget:
	case KindDecision:
		return checkDecision(rec)
	default:
		return errors.New("unknown record kind")
	}
	if len(rec.Forgets) == 0 {
		return errors.New("tombstone forgets no record")
	}
	ids := make([]string, 0, len(rec.Forgets))
	for _, s := range rec.Forgets {
		id, err := parseID(s)
		if err != nil {
			return errors.New("tombstone names a record id that is not a ULID")
		}
		if c := id.String(); !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	rec.Forgets = ids
	return nil
}

// tombstoneHint is in every line that may be a tombstone: lines without it
// are not parsed when only tombstones are wanted.
var tombstoneHint = []byte(KindForget)

// tombstones returns the ids the tombstones in shards forget.
func (j *Journal) tombstones(ctx context.Context, shards []shard) (map[string]bool, error) {
	forgotten := make(map[string]bool)
	for _, s := range shards {
		err := j.readShard(s, func(f *os.File, _ string, size int64) error {
			return forwardLines(io.NewSectionReader(f, 0, size), func(_ int, line []byte, _ bool) error {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("journal: scan: %w", err)
				}
				for _, id := range forgets(line) {
					forgotten[id] = true
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return forgotten, nil
}

// forgets returns the ids line forgets when it is a valid tombstone.
func forgets(line []byte) []string {
	if !bytes.Contains(line, tombstoneHint) {
		return nil
	}
	rec, err := parseRecord(line)
	if err != nil || !rec.IsTombstone() {
		return nil
	}
	return rec.Forgets
}

// Find returns the live records among ids, by id. An id that is not a
// record's, or a record that is forgotten, is not in the map. It reads
// the journal from the day of the oldest id on.
func (j *Journal) Find(ctx context.Context, ids []string) (map[string]Record, error) {
	want := make(map[string]bool, len(ids))
	oldest := ""
	for _, s := range ids {
		id, err := parseID(s)
		if err != nil {
			continue
		}
		c := id.String()
		want[c] = true
		if oldest == "" || c < oldest {
			oldest = c
		}
	}
	found := make(map[string]Record)
	if len(want) == 0 {
		return found, nil
	}
	err := j.scan(ctx, oldest, "", func(r Record) error {
		if want[r.ID] && r.IsTurn() {
			found[r.ID] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// PurgeReport says what a Purge did.
type PurgeReport struct {
	Records int // records whose content was removed
	Shards  int // shard files rewritten
}

type purgeRequest struct {
	ctx  context.Context
	done chan purgeResult // capacity 1
}

type purgeResult struct {
	report PurgeReport
	err    error
}

// Purge removes the content of every forgotten record from disk: each
// shard holding one is rewritten with the record reduced to its skeleton
// (id, role, ts and "redacted": true, padded with spaces to the line's
// length when it fits, so offsets do not move), every other line byte for
// byte as it was. A shard is replaced atomically: written to a temporary
// file (0600), fsync'd, renamed over the shard, and the directory
// fsync'd; a crash leaves the old shard or the new one. The tombstones
// stay. Purge runs on the writer goroutine, between appends; it is the
// owner's confirmed decision, never automatic.
func (j *Journal) Purge(ctx context.Context) (PurgeReport, error) {
	req := &purgeRequest{ctx: ctx, done: make(chan purgeResult, 1)}
	j.mu.Lock()
	switch {
	case j.closed:
		j.mu.Unlock()
		return PurgeReport{}, ErrClosed
	case j.failed != nil:
		err := j.failed
		j.mu.Unlock()
		return PurgeReport{}, err
	}
	j.purges = append(j.purges, req)
	j.mu.Unlock()
	j.signal()
	res := <-req.done
	return res.report, res.err
}

// purge is Purge on the writer goroutine.
func (j *Journal) purge(ctx context.Context) purgeResult {
	names, err := j.shardNames()
	if err != nil {
		return purgeResult{err: err}
	}
	shards := make([]shard, len(names))
	for i, n := range names {
		shards[i] = shard{name: n, size: -1}
	}
	forgotten, err := j.tombstones(ctx, shards)
	if err != nil {
		return purgeResult{err: err}
	}
	var rep PurgeReport
	if len(forgotten) == 0 {
		return purgeResult{report: rep}
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return purgeResult{report: rep, err: fmt.Errorf("journal: purge: %w", err)}
		}
		n, err := j.purgeShard(name, forgotten)
		if err != nil {
			return purgeResult{report: rep, err: err}
		}
		if n > 0 {
			rep.Records += n
			rep.Shards++
		}
	}
	return purgeResult{report: rep}
}

// purgeShard rewrites shard with the content of the forgotten records it
// holds removed, and returns how many it redacted.
func (j *Journal) purgeShard(name string, forgotten map[string]bool) (int, error) {
	path := filepath.Join(j.dir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("journal: purge: %w", err)
	}
	var (
		out bytes.Buffer
		n   int
	)
	for rest := data; len(rest) > 0; {
		line, after, found := bytes.Cut(rest, []byte{'\n'})
		rest = after
		if red, ok := redact(line, forgotten); ok {
			line = red
			n++
		}
		out.Write(line)
		if found {
			out.WriteByte('\n')
		}
	}
	if n == 0 {
		return 0, nil
	}
	if j.w.name == name {
		// The writer's file is about to be replaced: the next append
		// opens the new one.
		if err := j.closeFile(); err != nil {
			return 0, err
		}
	}
	if err := replaceFile(path, out.Bytes()); err != nil {
		return 0, fmt.Errorf("journal: purge %s: %w", path, err)
	}
	j.mu.Lock()
	if j.active == name {
		j.activeSize = int64(out.Len())
	}
	j.mu.Unlock()
	return n, nil
}

// redacted is what a purged record keeps.
type redacted struct {
	ID       string    `json:"id"`
	Role     string    `json:"role"`
	TS       time.Time `json:"ts"`
	Redacted bool      `json:"redacted"`
	Conv     string    `json:"conv,omitempty"` // the conversation's id is no content
}

// redact returns line reduced to its skeleton when it is a record that
// forgotten names and still has its content.
func redact(line []byte, forgotten map[string]bool) ([]byte, bool) {
	if len(line) > maxLine {
		return nil, false
	}
	rec, err := parseRecord(bytes.TrimSuffix(line, []byte{'\r'}))
	if err != nil || !forgotten[rec.ID] || rec.Redacted || rec.IsTombstone() {
		return nil, false
	}
	b, err := json.Marshal(redacted{ID: rec.ID, Role: rec.Role, TS: rec.TS.UTC(), Redacted: true, Conv: rec.Conv})
	if err != nil {
		return nil, false
	}
	if pad := len(line) - len(b); pad > 0 {
		b = append(b, strings.Repeat(" ", pad)...)
	}
	return b, true
}

// replaceFile atomically replaces path with data: a temporary file in the
// same directory, written, fsync'd, renamed over path, and the directory
// fsync'd.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".purge-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(filePerm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}
