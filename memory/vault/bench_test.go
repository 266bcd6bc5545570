package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// BenchmarkApply measures one auto-applied write (file, commit, ledger) in a
// vault of n notes, and reports its p50 and p99 and the CPU it costs.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("notes=%d", n), func(b *testing.B) {
			dir := newRoot(b)
			for i := range n {
				p := filepath.Join(dir, "knowledge", "projects", fmt.Sprintf("n%05d.md", i))
				if err := os.WriteFile(p, []byte(noteText("project", Active, 0.9, "", claim)), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			repo, err := git.PlainOpen(dir)
			if err != nil {
				b.Fatal(err)
			}
			wt, _ := repo.Worktree()
			if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
				b.Fatal(err)
			}
			if _, err := wt.Commit("notes", &git.CommitOptions{Author: &object.Signature{Name: "b", When: time.Now()}}); err != nil {
				b.Fatal(err)
			}
			v := New(dir, nil)
			pol := DefaultPolicy()
			var lat []time.Duration
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				p := &Proposal{ID: NewProposalID(), Op: OpCreate, Path: fmt.Sprintf("knowledge/projects/new%06d.md", i),
					Content: noteText("project", Active, 0.9, "", claim), Reason: "r", Sources: src, Author: AuthorAgent}
				start := time.Now()
				if d := Decide(pol, p, nil); d.Verdict != Apply {
					b.Fatal(d)
				}
				if _, err := v.Apply(b.Context(), p); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			// CPU per write (the process's, GC included): wall time
			// on a loaded machine says more about the machine.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
