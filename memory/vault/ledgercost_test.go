package vault

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestLedgerWriteCost measures the CPU of a vault write, and the loose
// bytes it adds, when the ledger already holds MNEMO_LEDGER_LINES lines
// (1,800 ≈ the 574 KB the crash loop grew) from earlier months: with the
// ledger a file a month, a write no longer hashes and stores them again.
func TestLedgerWriteCost(t *testing.T) {
	lines, _ := strconv.Atoi(os.Getenv("MNEMO_LEDGER_LINES"))
	if lines <= 0 {
		t.Skip("MNEMO_LEDGER_LINES not set")
	}
	dir := newRoot(t)
	v := New(dir, nil)
	v.now = func() time.Time { return time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC) }
	applyN(t, v, 0, 1)
	old := filepath.Join(dir, filepath.FromSlash(LedgerDir), "2026-01.jsonl")
	f, err := os.OpenFile(old, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lines { // lines as a write makes them, each its own
		e := Entry{TS: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Op: OpCreate,
			Path: fmt.Sprintf("knowledge/projects/x%05d.md", i), Author: AuthorCurator,
			Reason: "the owner described the project", Sources: src, Proposal: NewProposalID(),
			After: Hash([]byte(strconv.Itoa(i))), Commit: Hash([]byte("c" + strconv.Itoa(i)))[:40]}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(b, '\n'))
	}
	f.Close()
	applyN(t, v, 1, 1) // January's lines committed
	v.now = func() time.Time { return time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC) }
	const n = 200
	loose0, _ := repoBytes(t, dir)
	c0 := cpuTime()
	applyN(t, v, 2, n)
	cpu := cpuTime() - c0
	loose, _ := repoBytes(t, dir)
	t.Logf("ledger %d KB at the end: CPU a write %v, loose %.1f KB a write", ledgerSize(dir)>>10, cpu/n, float64(loose-loose0)/1024/n)
}
