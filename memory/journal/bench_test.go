package journal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
)

func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			j, err := journal.Open(b.TempDir(), journal.Options{})
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			defer j.Close()
			rec := journal.Record{Role: "user", Text: "a turn of ordinary length, about as long as a short chat message", Mode: "text"}

			var (
				next     atomic.Int64
				wg       sync.WaitGroup
				mu       sync.Mutex
				firstErr error
			)
			b.ResetTimer()
			start := time.Now()
			for range writers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := j.Append(context.Background(), rec); err != nil {
							mu.Lock()
							firstErr = errors.Join(firstErr, err)
							mu.Unlock()
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if firstErr != nil {
				b.Fatalf("Append: %v", firstErr)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
		})
	}
}

// tail1MVersion names the cached journal; change it when the format of the
// generated records changes.
const tail1MVersion = "v1"

// BenchmarkTail1M measures Tail(50) on a journal of 1,000,000 records over
// 10 days. The journal is built once and cached in os.TempDir.
func BenchmarkTail1M(b *testing.B) {
	const records, days = 1_000_000, 10
	dir := filepath.Join(os.TempDir(), "mnemo-bench-tail1m-"+tail1MVersion)
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		if err := buildJournal(dir, records, days); err != nil {
			b.Fatalf("building the journal: %v", err)
		}
	}
	j, err := journal.Open(filepath.Join(dir, "threads"), journal.Options{})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer j.Close()

	b.ReportAllocs()
	for b.Loop() {
		recs, err := j.Tail(50)
		if err != nil {
			b.Fatalf("Tail: %v", err)
		}
		if len(recs) != 50 {
			b.Fatalf("Tail(50) returned %d records", len(recs))
		}
	}
}

// buildJournal writes records records over days shards into dir/threads,
// directly rather than through Append, then marks dir complete.
func buildJournal(dir string, records, days int) error {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	threads := filepath.Join(tmp, "threads")
	if err := os.MkdirAll(threads, 0o700); err != nil {
		return err
	}
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	perDay := records / days
	step := 24 * time.Hour / time.Duration(perDay)
	for d := range days {
		f, err := os.OpenFile(filepath.Join(threads, start.AddDate(0, 0, d).Format("2006-01-02")+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		enc := json.NewEncoder(w)
		for i := range perDay {
			ts := start.AddDate(0, 0, d).Add(time.Duration(i) * step)
			role, mode := "user", "text"
			if i%2 == 1 {
				role = "agent"
			}
			if i%7 == 0 {
				mode = "voice"
			}
			rec := journal.Record{
				ID:   ulid.MustNew(ulid.Timestamp(ts), entropy).String(),
				Role: role,
				Text: fmt.Sprintf("turn %d of day %d: a message of ordinary length, the kind people send to a companion", i, d),
				TS:   ts,
				Mode: mode,
			}
			if err := enc.Encode(rec); err != nil {
				f.Close()
				return err
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o600); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
