package vault

import (
	"path/filepath"
	"strings"
	"testing"
)

// A path CheckReadPath accepts stays inside the memory root and names no
// dot file (.git above all); List with any prefix lists only notes under
// it, and never panics.
func FuzzReadPath(f *testing.F) {
	for _, s := range []string{"knowledge/a.md", "../x", ".git/config", "knowledge/../.git", "a//b", "/etc/passwd", "knowledge/", "k\\x", ""} {
		f.Add(s)
	}
	dir := f.TempDir()
	v := New(dir, nil)
	f.Fuzz(func(t *testing.T, p string) {
		if CheckReadPath(p) == nil {
			rel, err := filepath.Rel(dir, filepath.Join(dir, p))
			if err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("%q escapes the root", p)
			}
			for _, part := range strings.Split(p, "/") {
				if strings.HasPrefix(part, ".") {
					t.Fatalf("%q names a dot file", p)
				}
			}
		}
		notes, err := v.List(t.Context(), ListFilter{Prefix: p})
		if err == nil {
			for _, n := range notes {
				if !strings.HasPrefix(n.Path, p) {
					t.Fatalf("prefix %q listed %s", p, n.Path)
				}
			}
		}
	})
}
