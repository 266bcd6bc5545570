package vault

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestMaintainMergesPacks: past the merge threshold every pack is merged
// into one; every commit and file stays readable, git finds the
// repository whole, and writes and packing go on after it.
func TestMaintainMergesPacks(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	v.packsMax = 3
	gitDir := filepath.Join(dir, ".git")
	for round := range 4 {
		applyN(t, v, 2*round, 2)
		m, err := v.Maintain(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		packs, err := listPacks(gitDir)
		if err != nil {
			t.Fatal(err)
		}
		if round < 3 {
			if m.Merged != 0 || len(packs) != round+1 {
				t.Fatalf("round %d: %d packs, merged %d; want %d, none merged", round, len(packs), m.Merged, round+1)
			}
			continue
		}
		if m.Merged != 4 || m.MergedPack == "" || len(packs) != 1 || "pack-"+packs[0].String()+".pack" != m.MergedPack {
			t.Fatalf("past the threshold: %+v, packs %v; want 4 merged into the one left", m, packs)
		}
	}
	commits := readAll(t, dir)
	if commits < 9 {
		t.Errorf("%d commits readable", commits)
	}
	if _, err := exec.LookPath("git"); err == nil {
		gitRunner(t, dir)("fsck", "--strict")
	}
	applyN(t, v, 8, 2)
	if _, err := v.Maintain(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); got != commits+2 {
		t.Errorf("%d commits readable after more writes, want %d", got, commits+2)
	}
}

// TestHistoryDuringMaintain: a history read that listed the packs before
// Maintain packed the loose objects, or merged the packs, and then reads
// an object that moved, finds it (gitread.go). Maintain runs from a hook
// between two of the reader's object reads: once the reader has looked in
// the packs, and before it reads an object that is loose (packed and
// removed by Maintain), or packed (its pack merged and removed).
func TestHistoryDuringMaintain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		packsMax int  // 0: no merge
		atLoose  bool // Maintain before a loose object's read, else a packed one's
	}{
		{name: "loose objects packed", atLoose: true},
		{name: "packs merged", packsMax: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			p := projectProposal(t, "knowledge/projects/mnemo.md")
			if _, err := v.Apply(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Maintain(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/people/p"+string(rune('a'+i))+".md")); err != nil {
					t.Fatal(err)
				}
			}
			v.packsMax = tc.packsMax
			isLoose := func(h plumbing.Hash) bool {
				hx := h.String()
				_, err := os.Lstat(filepath.Join(dir, ".git", "objects", hx[:2], hx[2:]))
				return err == nil
			}
			var sawPacked, fired bool
			var m Maintenance
			v.beforeRead = func(h plumbing.Hash) {
				if fired {
					return
				}
				loose := isLoose(h)
				if !sawPacked || loose != tc.atLoose {
					sawPacked = sawPacked || !loose
					return
				}
				fired = true
				var err error
				if m, err = v.Maintain(t.Context(), 1); err != nil {
					t.Errorf("Maintain: %v", err)
				}
			}
			changes, err := v.History(t.Context(), p.Path, 0)
			if err != nil {
				t.Fatalf("History: %v", err)
			}
			if !fired || m.Pack == "" || (tc.packsMax > 0) != (m.Merged > 0) {
				t.Fatalf("Maintain did not run between the reader's reads as meant: fired %v, %+v", fired, m)
			}
			if len(changes) != 1 || changes[0].Commit == "" {
				t.Fatalf("history %+v, want the one commit", changes)
			}
			v.beforeRead = nil
			if b, _, err := v.ReadAt(t.Context(), p.Path, changes[0].Commit); err != nil || len(b) == 0 {
				t.Errorf("ReadAt the commit: %q, %v", b, err)
			}
			if _, err := exec.LookPath("git"); err == nil {
				gitRunner(t, dir)("fsck", "--strict")
			}
		})
	}
}
