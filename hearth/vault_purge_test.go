package hearth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// A purge of a vault layer removes its files but the READMEs, ledgers
// each, and commits them (history keeps them); proposals purged leave the
// clients' review lists; threads need a confirmation and then forget
// every turn; an unknown layer is refused.
func TestPurgeLayers(t *testing.T) {
	h, dir := startVaultCore(t)
	ctx := t.Context()
	if _, err := h.VaultWrite(ctx, hearth.VaultWrite{Op: hearth.VaultOpWrite, Path: "knowledge/projects/garden.md", Content: garden}); err != nil {
		t.Fatal(err)
	}
	q, err := h.Propose(ctx, noteProposal("knowledge/prefs/tea.md", "preference", "the owner likes green tea in the afternoon"))
	if err != nil || q.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v", q, err)
	}
	s, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	res, err := h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: hearth.LayerKnowledge, Reason: "start over"})
	if err != nil || res.Removed != 1 || res.Commit == "" {
		t.Fatalf("purge knowledge: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/projects/garden.md")); !os.IsNotExist(err) {
		t.Errorf("the note survived the purge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge/README.md")); err != nil {
		t.Errorf("the folder's README was purged: %v", err)
	}
	if head := gitLog(t, dir)[0]; !strings.HasPrefix(head, res.Commit+" owner vault: purge knowledge (1 files)") || !strings.Contains(head, "start over") {
		t.Errorf("git log head %q", head)
	}
	if old, err := h.VaultRead(ctx, "knowledge/projects/garden.md", res.Commit+"~1"); err != nil || string(old.Content) != garden {
		t.Errorf("history lost the purged note: %v", err)
	}
	es, _, _ := vault.ReadLedger(dir)
	if last := es[len(es)-1]; last.Op != vault.OpPurge || last.Path != "knowledge/projects/garden.md" || last.Reason != "start over" {
		t.Errorf("ledger %+v", last)
	}

	res, err = h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: hearth.LayerProposals})
	if err != nil || res.Removed != 1 {
		t.Fatalf("purge proposals: %+v, %v", res, err)
	}
	if d, ok := nextVaultEvent(t, s).(*hearth.ProposalDecided); !ok || d.ID != q.ID || d.Decision != hearth.DecisionRejected {
		t.Errorf("event %+v, want the proposal dropped", d)
	}
	if ps, _ := h.Proposals(ctx); len(ps) != 0 {
		t.Errorf("proposals after the purge: %+v", ps)
	}

	if err := h.AddTranscript("t1", memory.RoleUser, "a turn to purge"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, func(ev hearth.Event) bool { ts, ok := ev.(*hearth.TurnStored); return ok && ts.Ref == "t1" })
	if _, err := h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: hearth.LayerThreads}); !isCode(err, hearth.CodeBadRequest) {
		t.Errorf("threads without confirm: %v", err)
	}
	res, err = h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: hearth.LayerThreads, Confirm: true})
	if err != nil || res.Removed != 1 {
		t.Fatalf("purge threads: %+v, %v", res, err)
	}
	page, err := h.History(ctx, hearth.HistoryQuery{Limit: 10})
	if err != nil || len(page.Records) != 0 {
		t.Errorf("history after purging threads: %+v, %v", page, err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "threads", "*.jsonl"))
	for _, f := range shards {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "a turn to purge") {
			t.Errorf("%s still holds the purged text", f)
		}
	}
	for _, layer := range []string{"frob", hearth.LayerIndex} {
		if _, err := h.PurgeLayer(ctx, hearth.PurgeRequest{Layer: layer}); err == nil {
			t.Errorf("purge %s: accepted", layer)
		}
	}
}

// Export writes the archive under the root's artifacts/exports/ (or an
// absolute path given), and the next export leaves the earlier one out.
func TestExportFromCore(t *testing.T) {
	h, dir := startVaultCore(t)
	ctx := t.Context()
	res, err := h.Export(ctx, "")
	if err != nil || !strings.HasPrefix(res.Path, filepath.Join(dir, "artifacts", "exports")+string(filepath.Separator)) || res.Bytes == 0 || res.Files == 0 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	if st, err := os.Stat(res.Path); err != nil || st.Size() != res.Bytes {
		t.Errorf("the archive: %v", err)
	}
	elsewhere := filepath.Join(t.TempDir(), "x.tar.gz")
	res2, err := h.Export(ctx, elsewhere)
	if err != nil || res2.Path != elsewhere || res2.Files != res.Files {
		t.Errorf("export to a path: %+v, %v (first had %d files)", res2, err, res.Files)
	}
	if _, err := h.Export(ctx, "relative.tar.gz"); !isCode(err, hearth.CodeBadRequest) {
		t.Errorf("a relative path: %v", err)
	}
	if _, err := h.Export(ctx, filepath.Join(dir, "knowledge", "x.tar.gz")); err == nil {
		t.Error("an export into the root's notes was accepted")
	}
}

// rebuildMemory is a memory that can rebuild its index.
type rebuildMemory struct {
	fakeMemory
	rebuilds atomic.Int32
	err      error
}

func (m *rebuildMemory) RebuildIndex(context.Context) error {
	m.rebuilds.Add(1)
	return m.err
}

// A purge of the index layer asks a memory that can rebuild its index to
// do it; a failure is the core's safe message.
func TestPurgeIndex(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"rebuilds", nil, false},
		{"fails", errors.New("disk on fire at /secret/path"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &rebuildMemory{err: tc.err}
			j, err := journal.Open(t.TempDir(), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			h := runCore(t, hearth.Config{Journal: j, Memory: mem, ShutdownGrace: 5 * time.Second})
			res, err := h.PurgeLayer(t.Context(), hearth.PurgeRequest{Layer: hearth.LayerIndex})
			if (err != nil) != tc.wantErr || mem.rebuilds.Load() != 1 || res.Layer != hearth.LayerIndex {
				t.Fatalf("purge index = %+v, %v after %d rebuilds", res, err, mem.rebuilds.Load())
			}
			if err != nil && strings.Contains(err.Error(), "/secret") {
				t.Errorf("the error leaks the cause: %v", err)
			}
		})
	}
}
