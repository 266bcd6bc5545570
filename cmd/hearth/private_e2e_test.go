package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/internal/permtest"
	"github.com/mnemo/mnemo/ipc"
)

// The real hearth, under umask 000, on a root its owner left open to all:
// everything it creates there — repository, journal, index, lock — is
// private to the owner, and it warns once that the root itself is not.
func TestRootIsPrivateEndToEnd(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mnemo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755) // whatever this process's umask made of it
	model := llmtest.NewOpenAI(t, "sk-test")
	d := hearthtest.Start(t, bins.Hearth, hearthtest.Options{Root: root, Env: openaiEnv(model), Args: vectorsArgs(), Umask: "000"})
	c := mustDial(t, d.Addr)
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "noted"}}})
	if err := c.Send(&ipc.Message{Content: "the spare key is under the blue pot"}); err != nil {
		t.Fatal(err)
	}
	indexUntil(t, c, "both turns indexed", func(ix *ipc.IndexHealth) bool { return ix.Ready && ix.Indexed >= 2 })
	d.Stop(t)

	if n := permtest.CheckPrivate(t, root); n < 10 {
		t.Errorf("checked %d files and directories; the root looks unpopulated", n)
	}
	if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("root mode %v (%v): hearth changed the owner's own mode", st.Mode(), err)
	}
	if n := strings.Count(d.Log(), "memory root is open to other users"); n != 1 {
		t.Errorf("warned %d times about the open root, want once:\n%s", n, d.Log())
	}
}
