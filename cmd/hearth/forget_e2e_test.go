package main_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

var forgetTurns = []string{
	"We planted tomatoes and basil in the raised garden bed in May.",
	"The zanzibar code for the shed is 4711.",
	"The dentist appointment is on Thursday at nine.",
}

// storeAndIndex stores the turns as transcripts on a fresh hearth and
// waits until recall has indexed them.
func storeAndIndex(t *testing.T, c *ipc.Conn, turns []string) {
	t.Helper()
	for _, said := range turns {
		if err := c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: said}); err != nil {
			t.Fatal(err)
		}
	}
	indexUntil(t, c, "recall ready with the turns", func(ix *ipc.IndexHealth) bool { return ix.Ready && ix.Indexed >= len(turns) })
}

// awaitForgotten waits for the forgotten event every client gets.
func awaitForgotten(t *testing.T, c *ipc.Conn) *ipc.Forgotten {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("waiting for forgotten: %v", err)
		}
		if f, ok := m.(*ipc.Forgotten); ok && f.Ref == "" {
			return f
		}
	}
}

// The owner forgets a search hit with mnemo forget: every connected
// client is told, mnemo search no longer finds it, nor history, and that
// holds after a restart; --purge then erases its text from the journal
// and from the index files on disk.
func TestForgetEndToEnd(t *testing.T) {
	root := t.TempDir()
	d := startDaemon(t, root, nil, vectorsArgs()...)
	c := mustDial(t, d.Addr)
	if !slices.Contains(c.History().Features, "forget") {
		t.Fatalf("features %v lack forget", c.History().Features)
	}
	storeAndIndex(t, c, forgetTurns)
	hits := searchUntil(t, c, "zanzibar shed code", "zanzibar")
	var hitID string
	for _, h := range hits {
		if strings.Contains(h.Turn.Content, "zanzibar") {
			hitID = h.Turn.ID
		}
	}
	watcher := mustDial(t, d.Addr)

	out := runMnemo(t, d.Addr, "forget", hitID)
	if !strings.Contains(out, "forgot 1 turn(s)") {
		t.Errorf("mnemo forget printed %q", out)
	}
	if f := awaitForgotten(t, watcher); len(f.IDs) != 1 || !strings.HasPrefix(hitID, f.IDs[0]) {
		t.Errorf("the other client was told %+v, want %s", f, hitID)
	}
	if out := runMnemo(t, d.Addr, "search", "zanzibar shed code"); strings.Contains(out, "zanzibar") {
		t.Errorf("mnemo search still finds the forgotten turn:\n%s", out)
	}
	if out := runMnemo(t, d.Addr, "history"); strings.Contains(out, "zanzibar") || !strings.Contains(out, "tomatoes") {
		t.Errorf("mnemo history after forgetting:\n%s", out)
	}
	d.Stop(t)

	d = startDaemon(t, root, nil, vectorsArgs()...)
	c = mustDial(t, d.Addr)
	indexUntil(t, c, "recall ready", func(ix *ipc.IndexHealth) bool { return ix.Ready })
	searchUntil(t, c, "tomatoes garden", "tomatoes")
	if out := runMnemo(t, d.Addr, "search", "zanzibar shed code"); strings.Contains(out, "zanzibar") {
		t.Errorf("after a restart mnemo search finds the forgotten turn:\n%s", out)
	}
	for _, turn := range c.History().Turns {
		if strings.Contains(turn.Content, "zanzibar") {
			t.Error("after a restart history holds the forgotten turn")
		}
	}
	if !onDisk(t, root, "zanzibar") {
		t.Fatal("before --purge the text should still be on disk: the test proves nothing")
	}
	out = runMnemo(t, d.Addr, "forget", "--purge")
	if !strings.Contains(out, "purged: the text of 1 turn(s)") {
		t.Errorf("mnemo forget --purge printed %q", out)
	}
	if onDisk(t, root, "zanzibar") {
		t.Error("after --purge the forgotten text is still on disk")
	}
	searchUntil(t, c, "dentist", "Thursday")
}

// onDisk reports whether any journal shard or index file holds s.
func onDisk(t *testing.T, root, s string) bool {
	t.Helper()
	var files []string
	for _, g := range []string{"threads/*.jsonl", "index/embedded/*"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// A turn deleted by hand from a journal shard while hearth was stopped is
// not searchable after the next start: hearth finds the shard changed and
// reconciles the index with it, without a reindex.
func TestHandDeletedTurnLeavesTheIndex(t *testing.T) {
	root := t.TempDir()
	d := startDaemon(t, root, nil, vectorsArgs()...)
	c := mustDial(t, d.Addr)
	storeAndIndex(t, c, forgetTurns)
	searchUntil(t, c, "zanzibar shed code", "zanzibar")
	d.Stop(t)

	shards, _ := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	edited := false
	for _, s := range shards {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "zanzibar") {
				edited = true
				continue
			}
			keep = append(keep, line)
		}
		if err := os.WriteFile(s, []byte(strings.Join(keep, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !edited {
		t.Fatal("no journal line held the turn")
	}

	d = startDaemon(t, root, nil, vectorsArgs()...)
	c = mustDial(t, d.Addr)
	indexUntil(t, c, "recall ready", func(ix *ipc.IndexHealth) bool { return ix.Ready })
	searchUntil(t, c, "tomatoes garden", "tomatoes")
	if out := runMnemo(t, d.Addr, "search", "zanzibar shed code"); strings.Contains(out, "zanzibar") {
		t.Errorf("the turn deleted by hand is still searchable after a restart:\n%s", out)
	}
	if !strings.Contains(d.Log(), "reconciling the index") {
		t.Errorf("hearth did not say it reconciled the index; log:\n%s", d.Log())
	}
}
