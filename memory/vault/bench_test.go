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

// BenchmarkList measures List over a vault of 10,000 notes: warm (the
// notes unchanged since the last List) and after the owner edited one
// note; it reports p50 and p95.
func BenchmarkList(b *testing.B) {
	const n = 10_000
	dir := newRoot(b)
	for i := range n {
		p := filepath.Join(dir, "knowledge", "projects", fmt.Sprintf("n%05d.md", i))
		if err := os.WriteFile(p, []byte(noteText("project", Active, 0.9, "mnemo", claim)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	v := New(dir, nil)
	cold := time.Now()
	if got, err := v.List(b.Context(), ListFilter{}); err != nil || len(got) != n {
		b.Fatalf("List = %d notes, %v", len(got), err)
	}
	b.ReportMetric(float64(time.Since(cold).Microseconds())/1000, "cold-ms")
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		got, err := v.List(b.Context(), ListFilter{Tag: "mnemo"})
		if err != nil || len(got) != n {
			b.Fatalf("List = %d notes, %v", len(got), err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkForgetScan is what a forget pays to find the notes made from
// the turns it forgets, without an index: List over 10,000 notes, each
// citing two turns (warm: List's cache holds their sources), checking
// each note's sources against the forgotten ids. It reports p50 and p95.
func BenchmarkForgetScan(b *testing.B) {
	const n = 10_000
	dir := newRoot(b)
	turns := make([]string, 2*n)
	for i := range turns {
		turns[i] = NewNoteID()
	}
	for i := range n {
		note := &Note{ID: NewNoteID(), Title: "A note", Type: "project", Confidence: 0.9, Body: []byte(claim + "\n"),
			Sources: []Source{{Thread: "main", Turn: turns[2*i]}, {Thread: "main", Turn: turns[2*i+1]}}}
		p := filepath.Join(dir, "knowledge", "projects", fmt.Sprintf("n%05d.md", i))
		if err := os.WriteFile(p, note.Format(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	v := New(dir, nil)
	if _, err := v.List(b.Context(), ListFilter{}); err != nil {
		b.Fatal(err)
	}
	gone := map[string]bool{turns[n]: true} // one note cites it
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		notes, err := v.List(b.Context(), ListFilter{Prefix: KnowledgeDir + "/"})
		if err != nil {
			b.Fatal(err)
		}
		found := 0
		for _, nt := range notes {
			for _, s := range nt.Sources {
				if gone[s.Turn] {
					found++
				}
			}
		}
		if found != 1 {
			b.Fatalf("found %d notes", found)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
