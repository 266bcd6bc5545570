// Package permtest checks, in tests, that a memory root is private to its
// owner.
package permtest

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// CheckPrivate walks the tree under root (not root itself, whose mode is
// the owner's) and reports every directory that is not 0700 and every file
// that is not 0600; files under .git/objects may be 0400, as git makes its
// objects read-only. Symbolic links are reported too: nothing hearth
// creates is one. It returns how many files and directories it checked.
func CheckPrivate(t testing.TB, root string) int {
	t.Helper()
	objects := filepath.Join(".git", "objects") + string(filepath.Separator)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		n++
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			if mode.Perm() != 0o700 {
				t.Errorf("directory %s is %#o, want 0700", rel, mode.Perm())
			}
		case mode.IsRegular():
			if mode.Perm() == 0o600 || mode.Perm() == 0o400 && strings.HasPrefix(rel, objects) {
				return nil
			}
			t.Errorf("file %s is %#o, want 0600", rel, mode.Perm())
		default:
			t.Errorf("%s is %v, want a regular file or directory", rel, mode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return n
}
