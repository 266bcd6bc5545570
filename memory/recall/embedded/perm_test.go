package embedded

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The index holds the conversation's text: its directory is 0700 and its
// file 0600, and a file an older hearth left readable by others is made
// private when opened.
func TestIndexIsPrivate(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "index", "embedded")
	openT(t, dir, 4).Close()
	path := filepath.Join(dir, FileName)
	want := map[string]fs.FileMode{
		filepath.Join(parent, "index"): fs.ModeDir | 0o700,
		dir:                            fs.ModeDir | 0o700,
		path:                           0o600,
	}
	check := func(when string) {
		t.Helper()
		for p, mode := range want {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != mode {
				t.Errorf("%s: %s is %v, want %v", when, p, st.Mode(), mode)
			}
		}
	}
	check("new index")

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	openT(t, dir, 4).Close()
	check("reopened 0644 index")
}
