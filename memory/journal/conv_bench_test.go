package journal_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
)

// BenchmarkTailOf1M measures one conversation's TailOf(50) on a journal
// of 1,000,000 records over 10 days, main's nearly all of them: "trip"
// started on the last day (every 10th record of it), "sparse" has one
// record a day from the first (its tail reads every shard: the worst
// case, bounded by the conversation's span). Built once, cached in
// os.TempDir.
func BenchmarkTailOf1M(b *testing.B) {
	const records, days = 1_000_000, 10
	dir := filepath.Join(os.TempDir(), "mnemo-bench-tailof1m-v1")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		if err := buildConvJournal(dir, records, days); err != nil {
			b.Fatalf("building the journal: %v", err)
		}
	}
	j, err := journal.Open(filepath.Join(dir, "threads"), journal.Options{})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer j.Close()
	firsts := map[string]string{}
	for _, conv := range []string{"trip", "sparse"} {
		b, err := os.ReadFile(filepath.Join(dir, conv+".first"))
		if err != nil {
			panic(err)
		}
		firsts[conv] = string(b)
	}
	for _, tc := range []struct{ conv, first string }{
		{"", ""}, {"trip", firsts["trip"]}, {"sparse", firsts["sparse"]},
	} {
		b.Run("conv="+tc.conv, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				recs, err := j.TailOf(tc.conv, 50, tc.first)
				if err != nil {
					b.Fatalf("TailOf: %v", err)
				}
				if want := min(50, 10); tc.conv == "sparse" && len(recs) != want || tc.conv != "sparse" && len(recs) != 50 {
					b.Fatalf("TailOf(%q, 50) returned %d records", tc.conv, len(recs))
				}
			}
		})
	}
}

// buildConvJournal is buildJournal with conversations (see
// BenchmarkTailOf1M), and the first record of each in dir/<conv>.first.
func buildConvJournal(dir string, records, days int) error {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	threads := filepath.Join(tmp, "threads")
	if err := os.MkdirAll(threads, 0o700); err != nil {
		return err
	}
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{2}), 0)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	perDay := records / days
	step := 24 * time.Hour / time.Duration(perDay)
	firsts := map[string]string{}
	for d := range days {
		f, err := os.OpenFile(filepath.Join(threads, start.AddDate(0, 0, d).Format("2006-01-02")+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		enc := json.NewEncoder(w)
		for i := range perDay {
			ts := start.AddDate(0, 0, d).Add(time.Duration(i) * step)
			conv := ""
			switch {
			case i == perDay/2:
				conv = "sparse"
			case d == days-1 && i%10 == 0:
				conv = "trip"
			}
			rec := journal.Record{
				ID:   ulid.MustNew(ulid.Timestamp(ts), entropy).String(),
				Role: []string{"user", "agent"}[i%2],
				Text: fmt.Sprintf("turn %d of day %d: a message of ordinary length, the kind people send to a companion", i, d),
				TS:   ts, Mode: "text", Conv: conv,
			}
			if conv != "" && firsts[conv] == "" {
				firsts[conv] = rec.ID
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
	for conv, id := range firsts {
		if err := os.WriteFile(filepath.Join(tmp, conv+".first"), []byte(id), 0o600); err != nil {
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
