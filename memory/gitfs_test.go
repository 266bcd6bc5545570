package memory

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestPrivateFSReplacesIndex: go-git's index writes (Create, which would
// truncate the index and write it in place) go to a file beside it that
// takes its place only when closed, so that a kill meanwhile leaves the
// old index whole.
func TestPrivateFSReplacesIndex(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, ".git", "index")
	if err := os.MkdirAll(filepath.Dir(index), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	dot, err := newPrivateFS(dir).Chroot(".git")
	if err != nil {
		t.Fatal(err)
	}
	f, err := dot.Create("index")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "new index"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(index); string(got) != "old" {
		t.Errorf("index while written: %q, want the old one whole", got)
	}
	if f.Name() != index {
		t.Errorf("Name: %q, want %q", f.Name(), index)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(index); string(got) != "new index" {
		t.Errorf("index after Close: %q", got)
	}
	if st, err := os.Stat(index); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("index mode: %v %v, want 0600", st.Mode(), err)
	}
	if left, _ := filepath.Glob(index + ".tmp*"); len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}
	if err := f.Close(); err == nil {
		t.Error("a second Close succeeded")
	}

	// Elsewhere a file named index is written as go-git asks.
	f, err = newPrivateFS(dir).Create("index")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*replacingFile); ok {
		t.Error("an index outside .git is replaced, not written in place")
	}
	f.Close()
}
