package vault

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// TestMaintainMergesPacks: past the merge threshold the packs are merged
// into one, beside a pack bigger than all the others together (left as it
// is); every commit and file stays readable, git finds the repository
// whole, and writes and packing go on after it.
func TestMaintainMergesPacks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		firstNotes int // notes written before the first pack; then 2 a pack
		kept       bool
	}{
		{name: "packs alike", firstNotes: 2},
		{name: "one pack holding most", firstNotes: 60, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			v.packsMax = 3
			gitDir := filepath.Join(dir, ".git")
			next := 0
			var before []plumbing.Hash
			for round := range 4 {
				n := 2
				if round == 0 {
					n = tc.firstNotes
				}
				applyN(t, v, next, n)
				next += n
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
					before = packs
					continue
				}
				want, wantPacks := 4, 1
				if tc.kept {
					want, wantPacks = 3, 2
				}
				if m.Merged != want || m.MergedPack == "" || len(packs) != wantPacks || !slices.Contains(packs, plumbing.NewHash(strings.TrimSuffix(strings.TrimPrefix(m.MergedPack, "pack-"), ".pack"))) {
					t.Fatalf("past the threshold: %+v, packs %v; want %d merged, %d packs left", m, packs, want, wantPacks)
				}
				if tc.kept && !slices.ContainsFunc(before, func(h plumbing.Hash) bool { return slices.Contains(packs, h) }) {
					t.Errorf("the biggest pack was merged: before %v, after %v", before, packs)
				}
			}
			commits := readAll(t, dir)
			if commits < next {
				t.Errorf("%d commits readable, want %d or more", commits, next)
			}
			if _, err := exec.LookPath("git"); err == nil {
				gitRunner(t, dir)("fsck", "--strict")
			}
			applyN(t, v, next, 2)
			if _, err := v.Maintain(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, dir); got != commits+2 {
				t.Errorf("%d commits readable after more writes, want %d", got, commits+2)
			}
		})
	}
}

func TestWithoutDominant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
		want  []int // indexes of the packs left to merge
	}{
		{"alike", []int{10, 10, 10}, []int{0, 1, 2}},
		{"one holds most", []int{5, 100, 10, 20}, []int{0, 2, 3}},
		{"one holds half", []int{30, 10, 20}, []int{0, 1, 2}},
		{"one pack", []int{7}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gitDir := t.TempDir()
			packDir := filepath.Join(gitDir, "objects", "pack")
			if err := os.MkdirAll(packDir, 0o700); err != nil {
				t.Fatal(err)
			}
			var packs, want []plumbing.Hash
			for i, n := range tc.sizes {
				h := plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)})
				if err := os.WriteFile(filepath.Join(packDir, "pack-"+h.String()+".pack"), make([]byte, n), 0o600); err != nil {
					t.Fatal(err)
				}
				packs = append(packs, h)
			}
			for _, i := range tc.want {
				want = append(want, packs[i])
			}
			if got := withoutDominant(gitDir, packs); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestHistoryDuringMaintain: a history read that listed the packs before
// Maintain packed the loose objects, or merged the packs, and then reads
// an object that moved, finds it (gitread.go). Maintain runs from a hook
// between two of the reader's object reads: once the reader has looked in
// the packs, and before it reads an object that is loose (packed and
// removed by Maintain), or in a pack that Maintain merges and removes
// (any but the first, which holds most of the bytes and stays).
func TestHistoryDuringMaintain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		packsMax int  // 0: no merge
		atLoose  bool // Maintain before a loose object's read, else a packed one's
		merged   int  // packs Maintain merges at least (the first may stay)
	}{
		{name: "loose objects packed", atLoose: true},
		{name: "packs merged", packsMax: 2, merged: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			p := projectProposal(t, "knowledge/projects/mnemo.md")
			if _, err := v.Apply(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			var first map[plumbing.Hash]bool // the first pack's objects
			for round := range 3 {
				m, err := v.Maintain(t.Context(), 1)
				if err != nil {
					t.Fatal(err)
				}
				if round == 0 {
					ids, err := packObjectIDs(filepath.Join(dir, ".git", "objects", "pack", strings.TrimSuffix(m.Pack, ".pack")+".idx"))
					if err != nil {
						t.Fatal(err)
					}
					first = make(map[plumbing.Hash]bool)
					for _, h := range ids {
						first[h] = true
					}
				}
				for i := range 3 {
					name := fmt.Sprintf("knowledge/people/p%d-%d.md", round, i)
					if _, err := v.Apply(t.Context(), projectProposal(t, name)); err != nil {
						t.Fatal(err)
					}
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
				if !sawPacked || loose != tc.atLoose || first[h] {
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
			if !fired || m.Pack == "" || (tc.merged == 0) != (m.Merged == 0) || m.Merged < tc.merged {
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

// TestRescanStorage: a repository opened, and its packs listed, before
// Maintain packed a loose object still finds it by each lookup (go-git's
// storage alone: not found).
func TestRescanStorage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lookup func(s storer.EncodedObjectStorer, h plumbing.Hash) error
	}{
		{"EncodedObject", func(s storer.EncodedObjectStorer, h plumbing.Hash) error {
			_, err := s.EncodedObject(plumbing.AnyObject, h)
			return err
		}},
		{"HasEncodedObject", func(s storer.EncodedObjectStorer, h plumbing.Hash) error {
			return s.HasEncodedObject(h)
		}},
		{"EncodedObjectSize", func(s storer.EncodedObjectStorer, h plumbing.Hash) error {
			_, err := s.EncodedObjectSize(h)
			return err
		}},
		{"HashesWithPrefix", func(s storer.EncodedObjectStorer, h plumbing.Hash) error {
			hs, err := s.(interface {
				HashesWithPrefix([]byte) ([]plumbing.Hash, error)
			}).HashesWithPrefix(h[:4])
			if err == nil && !slices.Contains(hs, h) {
				err = plumbing.ErrObjectNotFound
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			applyN(t, v, 0, 1)
			if _, err := v.Maintain(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			applyN(t, v, 1, 1)
			loose, _, err := looseObjects(filepath.Join(dir, ".git"), time.Time{})
			if err != nil || len(loose) == 0 {
				t.Fatalf("no loose object to move: %v", err)
			}
			repo, err := openRepository(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The packs listed: a lookup that finds nothing loose.
			if err := repo.Storer.HasEncodedObject(plumbing.ComputeHash(plumbing.BlobObject, []byte("none"))); err == nil {
				t.Fatal("found an object never written")
			}
			if _, err := v.Maintain(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if err := tc.lookup(repo.Storer, loose[0]); err != nil {
				t.Errorf("%s after Maintain packed it: %v", loose[0], err)
			}
		})
	}
}
