package vault

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// batchOf is n project notes to create, one proposal each, as a job's.
func batchOf(t *testing.T, n int) []*Proposal {
	t.Helper()
	ps := make([]*Proposal, n)
	for i := range ps {
		ps[i] = projectProposal(t, fmt.Sprintf("knowledge/projects/batch-%d.md", i))
		ps[i].Author = "job:daily"
	}
	return ps
}

// filesOf reports which of ps's files exist.
func filesOf(t *testing.T, v *Vault, ps []*Proposal) []bool {
	t.Helper()
	out := make([]bool, len(ps))
	for i, p := range ps {
		b, err := v.Read(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b != nil
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// A batch is one commit with one ledger line per file; a write that fails
// part way (the k-th of five) leaves none of it — the files written
// before it are put back — and the same batch later applies whole.
func TestApplyBatchAllOrNothing(t *testing.T) {
	for _, k := range []int{0, 2, 4} {
		t.Run(fmt.Sprintf("fail write %d", k), func(t *testing.T) {
			dir := committedRoot(t)
			v := New(dir, nil)
			// An existing note the batch updates: the undo must put its
			// old bytes back.
			old := projectProposal(t, "knowledge/projects/batch-0.md")
			if _, err := v.Apply(t.Context(), old); err != nil {
				t.Fatal(err)
			}
			before, _ := v.Read(old.Path)
			head := headHash(t, dir)
			ps := batchOf(t, 5)
			ps[0].Op, ps[0].Base = OpUpdate, Hash(before)
			ps[0].Content = strings.Replace(ps[0].Content, "mnemo keeps", "mnemo still keeps", 1)
			v.failWrite = func(i int, _ string) error {
				if i == k {
					return errors.New("disk full (test)")
				}
				return nil
			}
			if _, err := v.ApplyBatch(t.Context(), ps, "job daily"); err == nil || !strings.Contains(err.Error(), "nothing applied") {
				t.Fatalf("ApplyBatch with write %d failing = %v", k, err)
			}
			if got := filesOf(t, v, ps); countTrue(got) != 1 {
				t.Fatalf("after the failure files %v, want only the old note", got)
			}
			if now, _ := v.Read(old.Path); string(now) != string(before) {
				t.Errorf("the updated note was not put back:\n%s", now)
			}
			if h := headHash(t, dir); h != head {
				t.Errorf("HEAD moved: %s → %s", head, h)
			}
			if n, err := v.Pending(); err != nil || n != 0 {
				t.Errorf("pending records %d, %v", n, err)
			}
			for _, p := range ps[1:] {
				if es := ledgerFor(t, dir, p.Path); len(es) != 0 {
					t.Errorf("%s ledgered: %+v", p.Path, es)
				}
			}

			// The retry applies all of it: one commit, a line per file.
			v.failWrite = nil
			res, err := v.ApplyBatch(t.Context(), ps, "job daily")
			if err != nil {
				t.Fatal(err)
			}
			if got := filesOf(t, v, ps); countTrue(got) != 5 || len(res.Paths) != 5 {
				t.Fatalf("after the retry files %v, result %+v", got, res)
			}
			msg, author := headCommit(t, dir)
			if author != "job:daily" || !strings.HasPrefix(msg, "vault: job daily\n") {
				t.Errorf("commit %q by %q", msg, author)
			}
			for _, p := range ps {
				if !strings.Contains(msg, "Proposal: "+p.ID) {
					t.Errorf("commit message does not name %s", p.ID)
				}
				es := ledgerFor(t, dir, p.Path)
				if last := es[len(es)-1]; last.Proposal != p.ID || last.Commit != res.Commit {
					t.Errorf("%s ledger %+v, want proposal %s commit %s", p.Path, last, p.ID, res.Commit)
				}
			}
		})
	}
}

// A batch refused as a whole writes nothing: one of its proposals stale,
// two changing one file, mixed authors.
func TestApplyBatchRefused(t *testing.T) {
	dir := committedRoot(t)
	v := New(dir, nil)
	stale := batchOf(t, 3)
	stale[2].Op, stale[2].Base = OpUpdate, strings.Repeat("0", 64)
	twice := batchOf(t, 2)
	twice[1].Path = twice[0].Path
	mixed := batchOf(t, 2)
	mixed[1].Author = AuthorCurator
	for name, ps := range map[string][]*Proposal{"stale": stale, "twice": twice, "mixed": mixed} {
		if _, err := v.ApplyBatch(t.Context(), ps, name); err == nil {
			t.Errorf("%s: applied", name)
		}
		if got := filesOf(t, v, ps); countTrue(got) != 0 {
			t.Errorf("%s: files %v written", name, got)
		}
	}
	if n, _ := v.Pending(); n != 0 {
		t.Errorf("%d pending records", n)
	}
}

// A crash part way through a batch (after any number of its files) is
// finished at the restart: every file written, one commit, each ledgered
// once — never a part of it.
func TestApplyBatchCrashThenRestart(t *testing.T) {
	for _, stage := range []string{"batch:0", "batch:2", "commit", "ledger"} {
		t.Run(stage, func(t *testing.T) {
			dir := committedRoot(t)
			v := New(dir, nil)
			v.crash = func(s string) bool { return s == stage }
			ps := batchOf(t, 4)
			if _, err := v.ApplyBatch(t.Context(), ps, "job daily"); !errors.Is(err, errCrash) {
				t.Fatalf("ApplyBatch = %v, want the crash", err)
			}
			// The restart: a new Vault, nothing in memory.
			v2 := New(dir, nil)
			if _, err := v2.CommitPending(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := filesOf(t, v2, ps); countTrue(got) != 4 {
				t.Fatalf("files %v after the restart", got)
			}
			for _, p := range ps {
				if es := ledgerFor(t, dir, p.Path); len(es) != 1 || es[0].Proposal != p.ID {
					t.Errorf("%s ledger %+v, want one line", p.Path, es)
				}
				b, _ := v2.Read(p.Path)
				if headFile(t, dir, p.Path) != string(b) {
					t.Errorf("%s not committed", p.Path)
				}
			}
			if n, _ := v2.Pending(); n != 0 {
				t.Errorf("%d pending records", n)
			}
		})
	}
}
