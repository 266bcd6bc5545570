package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ShardStat is a shard file as stat sees it.
type ShardStat struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// ShardContent is a shard file read whole: its size, its SHA-256 (and
// that of the prefix asked for), and its live records in order
// (tombstones and what they forget left out).
type ShardContent struct {
	ShardStat
	SHA256 string
	// PrefixSHA256 is the SHA-256 of the first bytes asked for; "" when
	// the file is shorter.
	PrefixSHA256 string
	Records      []Record
}

// Stats returns the shard files, oldest first, as stat sees them: the
// cheap check of whether a shard changed since it was last read.
func (j *Journal) Stats() ([]ShardStat, error) {
	names, err := j.shardNames()
	if err != nil {
		return nil, err
	}
	out := make([]ShardStat, 0, len(names))
	for _, n := range names {
		st, err := os.Stat(filepath.Join(j.dir, n))
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, ShardStat{Name: n, Size: st.Size(), ModTime: st.ModTime()})
	}
	return out, nil
}

// ReadShards reads the shards named by prefixes whole: hashes and live
// records; prefixes gives, per shard, how many of its first bytes to hash
// apart (what was seen of it before). The tombstones of every shard apply.
// A shard that no longer exists is missing from the result.
func (j *Journal) ReadShards(ctx context.Context, prefixes map[string]int64) (map[string]ShardContent, error) {
	all, err := j.shardNames()
	if err != nil {
		return nil, err
	}
	shards := make([]shard, len(all))
	for i, n := range all {
		shards[i] = shard{name: n, size: -1}
	}
	forgotten, err := j.tombstones(ctx, shards)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ShardContent, len(prefixes))
	for name, prefix := range prefixes {
		err := j.readShard(shard{name: name, size: -1}, func(f *os.File, path string, size int64) error {
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			c := ShardContent{ShardStat: ShardStat{Name: name, Size: size, ModTime: st.ModTime()}}
			h := sha256.New()
			prefix = max(prefix, 0)
			if prefix <= size {
				if _, err := io.Copy(h, io.NewSectionReader(f, 0, prefix)); err != nil {
					return fmt.Errorf("journal: read %s: %w", path, err)
				}
				c.PrefixSHA256 = hex.EncodeToString(h.Sum(nil))
			} else {
				prefix = 0
			}
			if _, err := io.Copy(h, io.NewSectionReader(f, prefix, size-prefix)); err != nil {
				return fmt.Errorf("journal: read %s: %w", path, err)
			}
			c.SHA256 = hex.EncodeToString(h.Sum(nil))
			err = forwardLines(io.NewSectionReader(f, 0, size), func(lineNo int, line []byte, tooLong bool) error {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("journal: read: %w", err)
				}
				rec, ok := j.record(path, "line", lineNo, line, tooLong)
				if ok && rec.IsTurn() && !rec.Redacted && !forgotten[rec.ID] {
					c.Records = append(c.Records, rec)
				}
				return nil
			})
			if err != nil {
				return err
			}
			out[name] = c
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
