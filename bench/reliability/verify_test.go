package reliability

import (
	"bytes"
	"compress/zlib"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The crash loop's per-cycle git check reads the objects a cycle added and
// hashes them: a loose object whose content is not what its name says, or
// that is missing, fails it; a whole repository passes.
func TestVerifyObjects(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, tc := range []struct {
		name string
		harm func(t *testing.T, object string)
		ok   bool
	}{
		{"whole", func(*testing.T, string) {}, true},
		{"other content", func(t *testing.T, object string) {
			var b bytes.Buffer
			zw := zlib.NewWriter(&b)
			zw.Write([]byte("blob 5\x00evil\n"))
			zw.Close()
			os.Chmod(object, 0o600)
			if err := os.WriteFile(object, b.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"missing", func(t *testing.T, object string) {
			if err := os.Remove(object); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			git("init", "-q")
			if err := os.WriteFile(filepath.Join(dir, "note.md"), []byte("good\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			git("add", "note.md")
			git("commit", "-q", "-m", "one")
			blob := git("rev-parse", "HEAD:note.md")
			tc.harm(t, filepath.Join(dir, ".git", "objects", blob[:2], blob[2:]))
			err := verifyObjects(t.Context(), dir, "HEAD")
			if (err == nil) != tc.ok {
				t.Errorf("verifyObjects = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
