package main_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// mnemo export while hearth runs, then mnemo import into a new root: the
// same files, the same turns, the same git history; a second import into
// the now full root is refused; a usage error exits 2.
func TestExportImportCommands(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	src := filepath.Join(t.TempDir(), "root")
	d := startDaemonArgs(t, src, openaiEnv(model))
	for _, m := range []string{"one", "two"} {
		if r := runMnemo(t, d.Addr, token, "", "send", m); r.code != 0 {
			t.Fatalf("send %s: %v", m, r)
		}
	}
	file := filepath.Join(t.TempDir(), "backup.tar.gz")
	if r := runMnemo(t, d.Addr, token, "", "export", "--root", src, file); r.code != 0 || !strings.Contains(r.stdout, "exported") {
		t.Fatalf("export: %v", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "history", "--all"); r.code != 0 || !strings.Contains(r.stdout, "two") {
		t.Fatalf("hearth after export: %v", r)
	}

	dst := filepath.Join(t.TempDir(), "restored")
	r := runMnemo(t, d.Addr, token, "", "import", "--root", dst, file)
	if r.code != 0 || !strings.Contains(r.stdout, "restored") {
		t.Fatalf("import: %v", r)
	}
	want, got := rootFiles(t, src), rootFiles(t, dst)
	if len(want) == 0 {
		t.Fatal("the source root has no files")
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || !bytes.Equal(g, w) {
			t.Errorf("%s: restored %q (present %v), want %q", p, g, ok, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: restored, not in the source", p)
		}
	}
	if w, g := gitOut(t, src, "log", "--all", "--format=%H"), gitOut(t, dst, "log", "--all", "--format=%H"); w != g || w == "" {
		t.Errorf("git log: restored\n%s\nwant\n%s", g, w)
	}

	if r := runMnemo(t, d.Addr, token, "", "import", "--root", dst, file); r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("import into a full root: %v", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "export"); r.code != 2 {
		t.Errorf("export with no file: %v", r)
	}
}

// rootFiles reads every file of a memory root but .git, index/ and the
// lock file.
func rootFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch rel {
		case ".git", "index":
			return filepath.SkipDir
		case "hearth.lock":
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = b
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
