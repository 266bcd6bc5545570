package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An archive with gaps: the rest is restored, each gap is listed on
// stderr, and the command fails (exit 1, not a usage error).
func TestImportListsGaps(t *testing.T) {
	var arc bytes.Buffer
	zw := gzip.NewWriter(&arc)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "root/AGENT.md", Size: 2, Mode: 0o600})
	tw.Write([]byte("hi"))
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "root/../evil", Size: 1, Mode: 0o600})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "a.tar.gz")
	if err := os.WriteFile(file, arc.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	var stdout, stderr bytes.Buffer
	err := importRoot(t.Context(), []string{"--root", root, file}, "", &stdout, &stderr)
	if err == nil || exitCode(err) != exitFailed {
		t.Fatalf("import with gaps: %v (exit %d), want a failure", err, exitCode(err))
	}
	for _, want := range []string{"gap: manifest.json: missing", "gap: history.bundle: missing", `gap: refused: unsafe path in archive: "root/../evil"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "AGENT.md")); err != nil || string(b) != "hi" {
		t.Errorf("AGENT.md restored as %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an entry escaped the root: %v", err)
	}
}

func TestExportRefusesFileInsideRoot(t *testing.T) {
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := exportRoot(t.Context(), []string{"--root", root, filepath.Join(root, "backup.tar.gz")}, "", &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "inside the memory root") {
		t.Fatalf("export into the root: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("export left %v in the root", entries)
	}
}

func TestArchiveUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"a", "b"}, {"--nope", "a"}} {
		var stdout, stderr bytes.Buffer
		for name, cmd := range map[string]func() error{
			"export": func() error { return exportRoot(t.Context(), args, "", &stdout, &stderr) },
			"import": func() error { return importRoot(t.Context(), args, "", &stdout, &stderr) },
		} {
			if err := cmd(); exitCode(err) != exitUsage {
				t.Errorf("%s %q: %v, want a usage error", name, args, err)
			}
		}
	}
}
