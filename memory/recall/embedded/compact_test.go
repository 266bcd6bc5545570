package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo/mnemo/memory/recall"
)

// A deleted document's text stays in the append-only file until a
// compaction; Compact removes it at once, and the rest survives a reopen.
func TestCompactRemovesDeletedText(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, 0)
	ctx := t.Context()
	docs := []recall.Doc{
		{ID: "a", Kind: recall.KindTurn, Role: "user", Text: "we planted tomatoes"},
		{ID: "b", Kind: recall.KindTurn, Role: "user", Text: "my zanzibar code", Context: "the shed"},
	}
	if err := ix.Upsert(ctx, docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("zanzibar")) {
		t.Fatal("the deleted text is gone before Compact: the test proves nothing")
	}
	if err := ix.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("zanzibar")) {
		t.Error("the deleted document's text is still in the index file after Compact")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openT(t, dir, 0)
	got, err := ix.Docs(ctx, []string{"a", "b"})
	if err != nil || len(got) != 1 || got[0].Text != "we planted tomatoes" {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
}
