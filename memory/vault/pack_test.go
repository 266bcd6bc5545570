package vault

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// applyN applies n notes, one write (and commit) each.
func applyN(t testing.TB, v *Vault, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		p := &Proposal{ID: NewProposalID(), Op: OpCreate, Path: fmt.Sprintf("knowledge/projects/n%05d.md", i),
			Content: noteText("project", Active, 0.9, "", claim), Reason: "r", Sources: src, Author: AuthorAgent, CreatedAt: time.Now()}
		if _, err := v.Apply(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
}

// repoBytes is the size of the files under the repository's objects/.
func repoBytes(t testing.TB, dir string) (loose, packed int64) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if filepath.Base(filepath.Dir(p)) == "pack" {
			packed += fi.Size()
		} else {
			loose += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return loose, packed
}

// readAll reads every file of every commit reachable from HEAD.
func readAll(t testing.TB, dir string) (commits int) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	it, err := repo.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	err = it.ForEach(func(c *object.Commit) error {
		commits++
		tree, err := c.Tree()
		if err != nil {
			return err
		}
		return tree.Files().ForEach(func(f *object.File) error {
			_, err := f.Contents()
			return err
		})
	})
	if err != nil {
		t.Fatalf("read history: %v", err)
	}
	return commits
}

// TestMaintainPacks: below the threshold nothing is packed; at it, every
// loose object goes into one pack, every commit and file stays readable,
// the repository is smaller, and commits go on after it.
func TestMaintainPacks(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	applyN(t, v, 0, 20)
	looseBefore, _ := repoBytes(t, dir)
	commits := readAll(t, dir)

	m, err := v.Maintain(t.Context(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if m.Packed != 0 || m.Pack != "" || m.Loose == 0 {
		t.Fatalf("below the threshold: %+v, want nothing packed", m)
	}
	m, err = v.Maintain(t.Context(), m.Loose)
	if err != nil {
		t.Fatal(err)
	}
	if m.Packed != m.Loose || m.Pack == "" {
		t.Fatalf("at the threshold: %+v, want every loose object packed", m)
	}
	loose, packed := repoBytes(t, dir)
	if loose != 0 {
		t.Errorf("%d bytes of loose objects left", loose)
	}
	if packed == 0 || packed >= looseBefore {
		t.Errorf("packed %d bytes, loose were %d", packed, looseBefore)
	}
	if got := readAll(t, dir); got != commits {
		t.Errorf("%d commits readable after packing, want %d", got, commits)
	}
	applyN(t, v, 20, 3)
	if got := readAll(t, dir); got != commits+3 {
		t.Errorf("%d commits readable after more writes, want %d", got, commits+3)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "objects", "pack", m.Pack)); err != nil {
		t.Error(err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		gitRunner(t, dir)("fsck", "--strict")
	}
}

// TestMaintainRemovesStaleTemps: temporary object files a crash left are
// removed once an hour old; a fresh one (a commit at work) is kept.
func TestMaintainRemovesStaleTemps(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	objDir := filepath.Join(dir, ".git", "objects", "ab")
	if err := os.MkdirAll(objDir, 0o700); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(objDir, "tmp_obj_old"), filepath.Join(objDir, "tmp_obj_new")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if err := os.Chtimes(old, now.Add(-staleTemp-time.Minute), now.Add(-staleTemp-time.Minute)); err != nil {
		t.Fatal(err)
	}
	m, err := v.Maintain(t.Context(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if m.StaleTemps != 1 {
		t.Errorf("removed %d stale temporary files, want 1", m.StaleTemps)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("the stale temporary file is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the fresh temporary file: %v", err)
	}
}

// TestPackGrowth measures the repository after N vault writes, without
// packing and with Maintain after every write (it packs at the
// threshold), MNEMO_PACK_PER_MONTH writes a month (250 unless set: the
// ledger is a file a month). MNEMO_PACK_WRITES=N runs it (2,000 takes
// minutes).
func TestPackGrowth(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MNEMO_PACK_WRITES"))
	if n <= 0 {
		t.Skip("MNEMO_PACK_WRITES not set")
	}
	perMonth, _ := strconv.Atoi(os.Getenv("MNEMO_PACK_PER_MONTH"))
	if perMonth <= 0 {
		perMonth = 250
	}
	for _, pack := range []bool{false, true} {
		t.Run(fmt.Sprintf("pack=%v", pack), func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			month := 0
			v.now = func() time.Time { return start.AddDate(0, month, 0) }
			var packs int
			var took, longest, writeCPU time.Duration
			for i := range n {
				month = i / perMonth
				c0 := cpuTime()
				applyN(t, v, i, 1)
				writeCPU += cpuTime() - c0
				if !pack {
					continue
				}
				m, err := v.Maintain(t.Context(), 0)
				if err != nil {
					t.Fatal(err)
				}
				if m.Pack != "" {
					packs++
					took += m.Took
					longest = max(longest, m.Took)
				}
			}
			loose, packed := repoBytes(t, dir)
			t.Logf("%d writes: loose %d KB, packed %d KB (%d packs, %v in all, longest %v); ledger %d KB; CPU a write %v",
				n, loose>>10, packed>>10, packs, took, longest, ledgerSize(dir)>>10, writeCPU/time.Duration(n))
			if !pack {
				return
			}
			// Then every pack merged into one, as past PackMergeThreshold.
			v.packsMax = 1
			m, err := v.Maintain(t.Context(), 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			_, packed = repoBytes(t, dir)
			t.Logf("merged %d packs in %v: %d KB", m.Merged, m.MergeTook, packed>>10)
		})
	}
}

// TestMaintainDuringWrites: packing while writes commit loses nothing:
// every commit and file stays readable, and git finds the repository
// whole.
func TestMaintainDuringWrites(t *testing.T) {
	dir := newRoot(t)
	v := New(dir, nil)
	applyN(t, v, 0, 10)
	m0, err := v.Maintain(t.Context(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var m Maintenance
	go func() {
		var err error
		m, err = v.Maintain(t.Context(), m0.Loose)
		done <- err
	}()
	applyN(t, v, 10, 10)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m.Pack == "" {
		t.Fatalf("nothing packed: %+v", m)
	}
	if got := readAll(t, dir); got < 20 {
		t.Errorf("%d commits readable", got)
	}
	if _, err := exec.LookPath("git"); err == nil {
		gitRunner(t, dir)("fsck", "--strict")
	}
}
