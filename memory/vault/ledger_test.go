package vault

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ledgerFiles is LedgerFiles, failing t on an error.
func ledgerFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := LedgerFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// headLedger is the ledger as HEAD holds it: its files in order.
func headLedger(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range ledgerFiles(t, dir) {
		b.WriteString(headFile(t, dir, p))
	}
	return b.String()
}

// clock is a settable clock for a Vault's now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLedgerTornLine(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	e := Entry{Op: OpCreate, Path: "knowledge/a.md", Author: AuthorAgent, Reason: "r", After: "x"}
	if err := appendLedger(dir, now, e); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, filepath.FromSlash(LedgerDir), "2026-03.jsonl")
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2026-01-01T00:00:00Z","op":"upd`) // a crash mid-append
	f.Close()
	got, skipped, err := ReadLedger(dir)
	if err != nil || len(got) != 1 || skipped != 1 {
		t.Fatalf("read %v skipped %d err %v; want 1 entry, 1 skipped", got, skipped, err)
	}
	e.Path = "knowledge/b.md"
	if err := appendLedger(dir, now, e); err != nil {
		t.Fatal(err)
	}
	got, skipped, err = ReadLedger(dir)
	if err != nil || len(got) != 2 || skipped != 1 || got[1].Path != "knowledge/b.md" {
		t.Fatalf("after append: %v skipped %d err %v; want 2 entries, the torn line alone skipped", got, skipped, err)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != filePerm {
		t.Errorf("ledger mode %v", st.Mode().Perm())
	}
}

// TestLedgerMonths: the ledger's lines go to the file of their month, are
// read back in the order written across files (the file from before the
// split first), and reach git with the next commit whatever month it
// falls in; a month's file, once over, is not taken in again.
func TestLedgerMonths(t *testing.T) {
	jan := time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	const legacyLine = `{"ts":"2025-12-01T00:00:00Z","op":"create","path":"knowledge/old.md","author":"owner","reason":"before the split"}` + "\n"
	for _, tc := range []struct {
		name     string
		legacy   string // audit/ledger.jsonl's bytes before the writes; "" none
		commitLg bool   // whether HEAD holds the legacy file as it is
		clocks   []time.Time
		locked   []bool // the write's commit fails (index.lock held)
		files    []string
		lines    []int // per file
	}{
		{name: "a month boundary between two writes", clocks: []time.Time{jan, feb, feb},
			files: []string{"audit/ledger/2026-01.jsonl", "audit/ledger/2026-02.jsonl"}, lines: []int{1, 2}},
		{name: "the clock went back a month", clocks: []time.Time{feb, jan, jan},
			files: []string{"audit/ledger/2026-02.jsonl"}, lines: []int{3}},
		{name: "a ledger from before the split, committed", legacy: legacyLine, commitLg: true, clocks: []time.Time{jan, feb},
			files: []string{LegacyLedgerFile, "audit/ledger/2026-01.jsonl", "audit/ledger/2026-02.jsonl"}, lines: []int{1, 1, 1}},
		{name: "a ledger from before the split, its last line not yet in git", legacy: legacyLine, clocks: []time.Time{jan},
			files: []string{LegacyLedgerFile, "audit/ledger/2026-01.jsonl"}, lines: []int{1, 1}},
		{name: "commits failing across a month boundary", clocks: []time.Time{jan, jan, feb, feb},
			locked: []bool{false, true, true, false},
			files:  []string{"audit/ledger/2026-01.jsonl", "audit/ledger/2026-02.jsonl"}, lines: []int{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			if tc.legacy != "" {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(LegacyLedgerFile)), []byte(tc.legacy), 0o600); err != nil {
					t.Fatal(err)
				}
				if tc.commitLg {
					if _, err := Commit(t.Context(), dir, []string{LegacyLedgerFile}, "the old ledger", AuthorOwner); err != nil {
						t.Fatal(err)
					}
				}
			}
			clk := &clock{}
			v := New(dir, nil)
			v.now = clk.now
			lock := filepath.Join(dir, ".git", "index.lock")
			var paths []string
			for i, at := range tc.clocks {
				clk.t = at
				locked := i < len(tc.locked) && tc.locked[i]
				if locked {
					if err := os.WriteFile(lock, nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				p := projectProposal(t, "knowledge/projects/p"+string(rune('a'+i))+".md")
				paths = append(paths, p.Path)
				_, err := v.Apply(t.Context(), p)
				if locked {
					os.Remove(lock)
					if err == nil {
						t.Fatalf("write %d: committed with index.lock held", i)
					}
				} else if err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if got := ledgerFiles(t, dir); !slices.Equal(got, tc.files) {
				t.Fatalf("ledger files %v, want %v", got, tc.files)
			}
			for i, p := range tc.files {
				es, _, err := readLedgerFile(filepath.Join(dir, filepath.FromSlash(p)))
				if err != nil || len(es) != tc.lines[i] {
					t.Errorf("%s: %d lines (%v), want %d", p, len(es), err, tc.lines[i])
				}
			}
			if tc.legacy != "" {
				if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(LegacyLedgerFile))); string(b) != tc.legacy {
					t.Errorf("the old ledger was rewritten: %q", b)
				}
			}
			// Read back in the order written, the old ledger first.
			es, skipped, err := ReadLedger(dir)
			if err != nil || skipped != 0 {
				t.Fatalf("ReadLedger: skipped %d, %v", skipped, err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Path)
			}
			want := paths
			if tc.legacy != "" {
				want = append([]string{"knowledge/old.md"}, paths...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ReadLedger paths %v, want %v", got, want)
			}
			// The last write's line waits for the next commit; every
			// earlier line is in git, whichever file holds it.
			last := es[len(es)-1]
			onDisk := ""
			for _, p := range tc.files {
				b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
				onDisk += string(b)
			}
			head := headLedger(t, dir)
			lastLine := onDisk[strings.LastIndex(strings.TrimSuffix(onDisk, "\n"), "\n")+1:]
			if !strings.Contains(lastLine, last.Path) || head+lastLine != onDisk {
				t.Errorf("HEAD's ledger is not the ledger on disk but its last line:\nHEAD %q\ndisk %q", head, onDisk)
			}
		})
	}
}

// TestLedgerOldMonthNotRestaged: once a month is over and git holds its
// file, later commits do not read it again (a changed copy of the same
// size, which only a re-read would take in, stays out of git), in this
// Vault and in a new one.
func TestLedgerOldMonthNotRestaged(t *testing.T) {
	dir := newRoot(t)
	clk := &clock{t: time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC)}
	v := New(dir, nil)
	v.now = clk.now
	apply := func(v *Vault, name string) {
		t.Helper()
		if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/"+name+".md")); err != nil {
			t.Fatal(err)
		}
	}
	apply(v, "a")
	clk.t = clk.t.Add(2 * time.Hour) // February
	apply(v, "b")                    // takes in January's last line
	jan := filepath.Join(dir, filepath.FromSlash(LedgerDir), "2026-01.jsonl")
	committed := headFile(t, dir, LedgerDir+"/2026-01.jsonl")
	b, err := os.ReadFile(jan)
	if err != nil || string(b) != committed {
		t.Fatalf("January's ledger not in git after February's first write: %q vs %q (%v)", b, committed, err)
	}
	same := []byte(strings.Repeat("x", len(b)-1) + "\n")
	if err := os.WriteFile(jan, same, 0o600); err != nil {
		t.Fatal(err)
	}
	apply(v, "c")
	if got := headFile(t, dir, LedgerDir+"/2026-01.jsonl"); got != committed {
		t.Errorf("January's file was staged again")
	}
	if err := os.WriteFile(jan, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A new Vault (a restart) finds git holds it and does not stage it.
	v2 := New(dir, nil)
	v2.now = clk.now
	if err := os.WriteFile(jan, b, 0o600); err != nil {
		t.Fatal(err)
	}
	apply(v2, "d")
	if v2.ledgerGit[LedgerDir+"/2026-01.jsonl"] != int64(len(b)) {
		t.Errorf("a new vault does not know git holds January: %v", v2.ledgerGit)
	}
}

// TestLedgerMonthName: whatever the clock says, a line's file is one
// LedgerFiles reads.
func TestLedgerMonthName(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 2, 28, 23, 59, 59, 0, time.UTC), "2026-02.jsonl"},
		{time.Date(2026, 3, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), "2026-02.jsonl"}, // UTC months
		{time.Date(12026, 1, 1, 0, 0, 0, 0, time.UTC), "9999-12.jsonl"},
		{time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01.jsonl"},
	} {
		got := ledgerMonth(tc.at)
		if got != tc.want || !isLedgerMonth(got) || !isLedgerPath(LedgerDir+"/"+got) {
			t.Errorf("ledgerMonth(%v) = %q (a ledger file: %v), want %q", tc.at, got, isLedgerMonth(got), tc.want)
		}
	}
	for _, name := range []string{"2026-13.jsonl", "2026-1.jsonl", "notes.jsonl", "2026-01.json", "2026-01.jsonl.tmp"} {
		if isLedgerMonth(name) {
			t.Errorf("%q taken for a month's file", name)
		}
	}
}
