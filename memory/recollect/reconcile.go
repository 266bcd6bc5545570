package recollect

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

	"github.com/mnemo/mnemo/memory/journal"
)

// SeenFile, in <root>/index, records what recall has seen of each journal
// shard: its size, modification time and SHA-256; the shard's record ids
// are in seenDir/<shard>.ids, read only when the shard changed. At start a
// shard that shrank, or whose first bytes hash otherwise than what was
// seen, was edited while hearth was stopped: it is read again and the
// index reconciled with it, without a full reindex. Keeping the ids apart
// keeps a start cheap however long the journal is: only the small
// SeenFile is read and written when nothing changed.
const SeenFile = "journal-seen.json"

// seenDir, in <root>/index, holds each shard's record ids, one per line.
const seenDir = "journal-seen"

// seenVersion is SeenFile's format; a file of another version counts as
// none (the next start compares with what this one records).
const seenVersion = 2

type seenState struct {
	Version int                  `json:"version"`
	Shards  map[string]seenShard `json:"shards"`
}

type seenShard struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	SHA256  string    `json:"sha256"`
}

func (m *Memory) seenPath() string {
	if m.o.Root == "" {
		return ""
	}
	return filepath.Join(m.o.Root, "index", SeenFile)
}

func loadSeen(path string) (seenState, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return seenState{}, false, nil
	}
	if err != nil {
		return seenState{}, false, err
	}
	var s seenState
	if err := json.Unmarshal(b, &s); err != nil || s.Version != seenVersion {
		return seenState{}, false, nil // unreadable: start over, as on a first start
	}
	return s, true, nil
}

// syncSeen compares the journal's shards with what was seen of them; with
// reconcile set, the index is brought in line with the shards changed
// other than by appending, and with shards removed. It then records the
// journal as it is now. Reading is limited to shards whose size or time
// changed.
func (m *Memory) syncSeen(ctx context.Context, rs *system, reconcile bool) error {
	path := m.seenPath()
	if path == "" || m.o.Journal == nil {
		return nil
	}
	old, had, err := loadSeen(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	stats, err := m.o.Journal.Stats()
	if err != nil {
		return err
	}
	now := seenState{Version: seenVersion, Shards: make(map[string]seenShard, len(stats))}
	idsDir := filepath.Join(filepath.Dir(path), seenDir)
	seenIDs := make(map[string][]string) // to record, once the index agrees
	changed := make(map[string]int64)
	for _, st := range stats {
		prev, ok := old.Shards[st.Name]
		if ok && prev.Size == st.Size && prev.ModTime.Equal(st.ModTime) {
			now.Shards[st.Name] = prev
			continue
		}
		changed[st.Name] = prev.Size
	}
	read, err := m.o.Journal.ReadShards(ctx, changed)
	if err != nil {
		return err
	}
	var (
		gone []string
		redo []journal.Record
	)
	for name, c := range read {
		ids := make([]string, len(c.Records))
		present := make(map[string]bool, len(ids))
		for i, r := range c.Records {
			ids[i] = r.ID
			present[r.ID] = true
		}
		now.Shards[name] = seenShard{Size: c.Size, ModTime: c.ModTime, SHA256: c.SHA256}
		seenIDs[name] = ids
		prev, ok := old.Shards[name]
		switch {
		case !had:
			// First start with this file: nothing to compare with.
		case !ok:
			// A shard begun since the file was written: at a stop, by
			// this run; at a start, by a run that crashed before it
			// could record it. Indexing its records again is harmless.
			if reconcile {
				redo = append(redo, c.Records...)
			}
		case c.PrefixSHA256 == prev.SHA256:
			// Only appended to: the indexer's cursor covers it.
		case !reconcile:
			// Rewritten by this run (a purge): recorded as it is now.
		default:
			m.log.Warn("journal shard changed while hearth was stopped: reconciling the index with it", "shard", name)
			prevIDs, err := readIDs(idsDir, name)
			if err != nil {
				return err
			}
			for _, id := range prevIDs {
				if !present[id] {
					gone = append(gone, id)
				}
			}
			redo = append(redo, c.Records...)
		}
	}
	var removed []string
	for name := range old.Shards {
		if _, ok := now.Shards[name]; !ok && reconcile {
			m.log.Warn("journal shard removed while hearth was stopped: its turns leave the index", "shard", name)
			ids, err := readIDs(idsDir, name)
			if err != nil {
				return err
			}
			gone = append(gone, ids...)
			removed = append(removed, name)
		}
	}
	if reconcile && rs != nil && (len(gone) > 0 || len(redo) > 0) {
		slicesSortRecords(redo)
		if err := rs.indexer.Reconcile(ctx, gone, redo); err != nil {
			return fmt.Errorf("reconcile the index: %w", err)
		}
		m.log.Info("index reconciled with the journal", "removed", len(gone), "reindexed", len(redo))
	}
	for name, ids := range seenIDs {
		if err := writeIDs(idsDir, name, ids); err != nil {
			return err
		}
	}
	for _, name := range removed {
		os.Remove(idsPath(idsDir, name))
	}
	return writeSeen(path, now)
}

// writeSeen replaces path with s (0600, written whole, then renamed).
func writeSeen(path string, s seenState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func idsPath(dir, shard string) string { return filepath.Join(dir, shard+".ids") }

// readIDs is the record ids last seen in shard; none when never recorded.
func readIDs(dir, shard string) ([]string, error) {
	b, err := os.ReadFile(idsPath(dir, shard))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// writeIDs replaces shard's record ids (0600, written whole, then renamed).
func writeIDs(dir, shard string, ids []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := idsPath(dir, shard)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(ids, "\n")), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// slicesSortRecords orders records by id: journal order.
func slicesSortRecords(recs []journal.Record) {
	slices.SortFunc(recs, func(a, b journal.Record) int { return strings.Compare(a.ID, b.ID) })
}
