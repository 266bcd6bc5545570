package main

import (
	"crypto/sha512"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/embed/wordvec"
)

// source is a minimal wink JSON: three words, one of them punctuation.
const source = `{"precision":8,"l2NormIndex":2,"wordIndex":3,"size":3,"dimensions":2,
"words":["the",",","dog"],
"vectors":{"the":[0.5,-1,1.118,0],",":[1,1,1.414,1],"dog":[0.25,0.75,0.79,2]},
"unkVector":[0,0,-1]}`

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "wink.json")
	if err := os.WriteFile(in, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512([]byte(source))
	good := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	bad := "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name      string
		in        string
		integrity string
		wantErr   bool
	}{
		{"converts", in, good, false},
		{"integrity mismatch", in, bad, true},
		{"missing input", filepath.Join(dir, "nope.json"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "sub", "vectors.bin")
			err := run(t.Context(), log, tt.in, out, wordvec.ConvertOptions{Words: 10, Integrity: tt.integrity, Log: log})
			if (err != nil) != tt.wantErr {
				t.Fatalf("run = %v, want error: %v", err, tt.wantErr)
			}
			var files []string
			filepath.WalkDir(outDir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, filepath.Base(p))
				}
				return nil
			})
			var want []string
			if !tt.wantErr {
				want = []string{"vectors.bin"}
			}
			if diff := cmp.Diff(want, files); diff != "" {
				t.Errorf("files left (-want +got):\n%s", diff)
			}
			if tt.wantErr {
				return
			}
			m, err := wordvec.Load(out)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if m.Len() != 2 || m.Dim() != 2 {
				t.Errorf("Len, Dim = %d, %d; want 2, 2 (the comma dropped)", m.Len(), m.Dim())
			}
		})
	}
}
