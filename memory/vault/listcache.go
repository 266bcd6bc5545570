package vault

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// racyWindow: a file changed this close to when it was last read may
// change again within its timestamps' granularity without its stat
// changing (git's "racily clean" entries); such a file is read again.
const racyWindow = 2 * time.Second

// listCache keeps each note's parsed front matter, as List shows it,
// keyed by its full path and valid while the file's stat (size, mtime,
// and on Unix inode and ctime) is what it was when it was read: a warm
// List stats each note instead of reading and parsing it. An edit in an
// editor changes the stat (an atomic save changes the inode, an in-place
// write mtime and ctime), so the note is read again.
type listCache struct {
	mu    sync.Mutex
	notes map[string]cachedNote
	gen   uint64 // bumped per List: entries not seen by a walk are dropped
	reads int    // files read and parsed (tests)
}

type cachedNote struct {
	stat   statKey
	readAt time.Time
	info   NoteInfo // Path set; Err set when it does not parse
	gen    uint64
}

// statKey is what says a file is unchanged since it was read.
type statKey struct {
	size       int64
	mtime      int64
	ino, ctime int64 // 0 where the platform does not say
	mode       uint32
}

// info returns the note at full (slash path p) as List shows it, from the
// cache when its stat is unchanged, else read and parsed (and cached).
// The caller holds c.mu.
func (c *listCache) info(full, p string, k statKey, now time.Time) (NoteInfo, error) {
	if e, ok := c.notes[full]; ok && e.stat == k && e.readAt.Sub(time.Unix(0, max(k.mtime, k.ctime))) > racyWindow {
		e.gen = c.gen
		c.notes[full] = e
		return e.info, nil
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return NoteInfo{}, err
	}
	c.reads++
	info := NoteInfo{Path: p}
	if n, perr := ParseNote(p, b); perr != nil {
		info.Err = perr.Error()
	} else {
		st := n.Status
		if st == "" {
			st = Active
		}
		info = NoteInfo{Path: p, ID: n.ID, Title: n.Title, Type: n.Type, Status: st, Tags: n.Tags, UpdatedAt: n.UpdatedAt, Sources: n.Sources}
	}
	// The stat taken before the read: a write after it changes the
	// stat, so it is read again next time.
	c.notes[full] = cachedNote{stat: k, readAt: now, info: info, gen: c.gen}
	return info, nil
}

// prune drops the entries under dir (a full path) a walk did not see.
// The caller holds c.mu.
func (c *listCache) prune(dir string) {
	for full, e := range c.notes {
		if e.gen != c.gen && strings.HasPrefix(full, dir) {
			delete(c.notes, full)
		}
	}
}

// clone is info for a caller: its tags are its own.
func (i NoteInfo) clone() NoteInfo {
	i.Tags = slices.Clone(i.Tags)
	i.Sources = slices.Clone(i.Sources)
	return i
}

// walkNotes calls fn for each regular file under base whose name ends
// in ".md", dot files and directories left out, in WalkDir's order, with
// its stat taken relative to its open directory (one short lookup, not
// the full path's).
func walkNotes(ctx context.Context, base string, fn func(full string, k statKey) error) error {
	f, err := os.Open(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		f.Close()
		return err
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var dirs []string
	for _, de := range des {
		if err := ctx.Err(); err != nil {
			f.Close()
			return err
		}
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		full := filepath.Join(base, name)
		if de.IsDir() {
			dirs = append(dirs, full)
			continue
		}
		if !de.Type().IsRegular() || !strings.HasSuffix(name, ".md") {
			continue
		}
		k, err := statAt(f, full, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read
		}
		if err == nil {
			err = fn(full, k)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	f.Close()
	for _, d := range dirs {
		if err := walkNotes(ctx, d, fn); err != nil {
			return err
		}
	}
	return nil
}
