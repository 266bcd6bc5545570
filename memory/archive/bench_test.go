package archive

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// benchRoot is a root with turns journal lines over 30 shards and notes
// knowledge notes in git.
func benchRoot(b *testing.B, turns, notes int) string {
	b.Helper()
	ctx := b.Context()
	dir := filepath.Join(b.TempDir(), "root")
	if _, err := memory.Open(ctx, dir, data.Defaults(), nil); err != nil {
		b.Fatal(err)
	}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var shards [30]bytes.Buffer
	for i := range turns {
		fmt.Fprintf(&shards[i%30], `{"id":"01KAK3J7Y0Q2V5S8WZ%08d","role":"user","text":"turn %d about something said on a day like any other","ts":"%s","mode":"text"}`+"\n",
			i, i, day.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano))
	}
	for i := range shards {
		p := filepath.Join(dir, "threads", day.AddDate(0, 0, i).Format("2006-01-02")+".jsonl")
		if err := os.WriteFile(p, shards[i].Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	var paths []string
	for i := range notes {
		rel := fmt.Sprintf("knowledge/projects/p%03d/note%05d.md", i%100, i)
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o700)
		body := fmt.Sprintf("---\nid: 01KAK3J7Y0Q2V5S8WZ3C%06d\ntitle: Note %d\n---\nSomething known, number %d.\n", i, i, i)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, rel)
	}
	if _, err := vault.Commit(ctx, dir, paths, "vault: notes", "owner"); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExportImport: 100k turns and 1,000 notes (the issue asks for
// 1M and 10,000; both scale with bytes, see DESIGN.md).
// The root's size: make bench-archive passes the 1M turns and
// 10,000 notes.
var (
	benchTurns = flag.Int("archive.turns", 100_000, "BenchmarkExportImport: journal turns")
	benchNotes = flag.Int("archive.notes", 1_000, "BenchmarkExportImport: knowledge notes")
)

func BenchmarkExportImport(b *testing.B) {
	src := benchRoot(b, *benchTurns, *benchNotes)
	var arc []byte
	b.Run("export", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			if _, err := Export(b.Context(), src, &buf, Options{}); err != nil {
				b.Fatal(err)
			}
			arc = buf.Bytes()
		}
		b.ReportMetric(float64(len(arc))/(1<<20), "archive-MiB")
	})
	b.Run("import", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := filepath.Join(b.TempDir(), "new")
			b.StartTimer()
			rep, err := Import(b.Context(), bytes.NewReader(arc), dst, Options{})
			if err != nil || len(rep.Gaps) > 0 {
				b.Fatal(err, rep.Gaps)
			}
		}
	})
}
