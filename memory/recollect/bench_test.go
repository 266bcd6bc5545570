package recollect

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
	"github.com/mnemo/mnemo/memory/vault"
)

// The vault's measures (make bench-vault): one auto-applied write as hearth
// makes it (note file, git commit, ledger, then recall reindexing the
// note), and list and search, in a vault of n notes. The journal is empty:
// a write touches none of it, and recall's journal side is measured in
// memory/recall. Embeddings come from recalltest's 64-dimension hash
// embedder, a stand-in for a local model that costs next to nothing, so
// that what is measured is mnemo's own work.

// benchWords make the notes' texts and the searches' queries.
var benchWords = []string{"garden", "tomatoes", "lisbon", "compiler", "guitar", "marathon", "sourdough", "kayak", "piano",
	"chess", "camera", "violin", "orchid", "espresso", "bicycle", "hiking", "poetry", "astronomy", "pottery", "sailing"}

func benchNote(i int) string {
	w := func(k int) string { return benchWords[(i*7+k*3)%len(benchWords)] }
	return fmt.Sprintf("---\nid: %s\ntitle: Note %d about %s\ntype: project\nstatus: active\ntags: [%s]\nconfidence: 0.9\n---\n"+
		"The owner likes %s and %s.\n\n## Details\n\nNote %d: %s on weekends, %s in the evening.\n",
		vault.NewNoteID(), i, w(0), w(1), w(0), w(1), i, w(2), w(3))
}

// benchVault is a memory root holding n notes, committed, with recall
// open over them.
func benchVault(b *testing.B, n int) (*vault.Vault, *Memory, string) {
	b.Helper()
	dir := b.TempDir()
	if _, err := memory.Open(b.Context(), dir, data.Defaults(), nil); err != nil {
		b.Fatal(err)
	}
	v, err := vault.Open(b.Context(), dir, data.Vault(), nil)
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, n)
	for i := range n {
		paths[i] = fmt.Sprintf("knowledge/projects/n%05d.md", i)
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(paths[i])), []byte(benchNote(i)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	t0 := time.Now()
	if _, err := vault.Commit(b.Context(), dir, paths, "notes", vault.AuthorOwner); err != nil {
		b.Fatal(err)
	}
	b.Logf("commit %d notes: %s", n, time.Since(t0))
	j, _ := openJournal(b)
	emb := recalltest.NewHashEmbedder(64)
	ix, err := embedded.Open(filepath.Join(dir, "index", "embedded"), embedded.Options{Dim: emb.Dim()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	m := New(Options{Root: dir, Journal: j, Session: session, Settings: Settings{Embedder: "none"}})
	m.rs = newSystem(ix, emb, "embedded", m.o)
	t0 = time.Now()
	if _, _, err := m.rs.know.reconcile(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Logf("index %d notes: %s", n, time.Since(t0))
	return v, m, dir
}

// percentiles reports the p50, p95 and p99 of lat, in milliseconds.
func percentiles(b *testing.B, lat []time.Duration, which ...int) {
	slices.Sort(lat)
	for _, p := range which {
		i := min(len(lat)*p/100, len(lat)-1)
		b.ReportMetric(float64(lat[i].Microseconds())/1000, fmt.Sprintf("p%d-ms", p))
	}
}

// BenchmarkVaultApply measures one auto-applied write: governance,
// the note written (fsync'd), the commit, the ledger line, and recall
// reindexing the note.
func BenchmarkVaultApply(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("notes=%d", n), func(b *testing.B) {
			v, m, _ := benchVault(b, n)
			pol := vault.DefaultPolicy()
			src := []vault.Source{{Thread: "main", Turn: "01JTURN0000000000000000000"}}
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				p := &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: fmt.Sprintf("knowledge/projects/new%06d.md", i),
					Content: benchNote(n + i), Reason: "the owner said so", Sources: src, Author: vault.AuthorAgent}
				start := time.Now()
				if d := vault.Decide(pol, p, nil); d.Verdict != vault.Apply {
					b.Fatal(d)
				}
				res, err := v.Apply(b.Context(), p)
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Knowledge(b.Context(), res.Paths); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			percentiles(b, lat, 50, 99)
		})
	}
}

// BenchmarkVaultSearch measures a knowledge search (hybrid: lexical and
// vector) among 10,000 notes.
func BenchmarkVaultSearch(b *testing.B) {
	_, m, _ := benchVault(b, 10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	for b.Loop() {
		q := benchWords[rng.IntN(len(benchWords))] + " " + benchWords[rng.IntN(len(benchWords))]
		start := time.Now()
		hits, err := m.Search(b.Context(), memory.SearchRequest{Query: q, K: 10, Kinds: []string{memory.KindKnowledge}})
		if err != nil || len(hits) == 0 {
			b.Fatal(len(hits), err)
		}
		lat = append(lat, time.Since(start))
	}
	percentiles(b, lat, 50, 95)
}

// BenchmarkVaultList measures listing the notes of a vault of 10,000: every
// note's file read and its front matter parsed, which a list that shows
// titles and statuses must do.
func BenchmarkVaultList(b *testing.B) {
	_, _, dir := benchVault(b, 10_000)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		n := 0
		err := filepath.WalkDir(filepath.Join(dir, vault.KnowledgeDir), func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() || filepath.Ext(p) != ".md" || e.Name() == "README.md" {
				return err
			}
			bs, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := vault.ParseNote(p, bs); err == nil {
				n++
			}
			return nil
		})
		if err != nil || n < 10_000 {
			b.Fatal(n, err)
		}
		lat = append(lat, time.Since(start))
	}
	percentiles(b, lat, 50, 95)
}
