package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExportsDir is where hearth writes the exports it is asked for, inside
// the memory root: the only place in the root an archive may go, and
// left out of every export (an archive never holds the ones before it).
const ExportsDir = "artifacts/exports"

// WriteFile exports the memory root dir to file: a temporary file beside
// it, fsync'd, then renamed into place, so that file is whole or
// untouched. A file inside the root is refused, but under ExportsDir.
func WriteFile(ctx context.Context, dir, file string, opts Options) (Report, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return Report{}, err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return Report{}, err
	}
	if rel, err := filepath.Rel(absDir, absFile); err == nil && filepath.IsLocal(rel) &&
		!strings.HasPrefix(filepath.ToSlash(rel), ExportsDir+"/") {
		return Report{}, fmt.Errorf("export: %s is inside the memory root %s: write it elsewhere (or under %s)", file, dir, ExportsDir)
	}
	if err := os.MkdirAll(filepath.Dir(absFile), 0o700); err != nil {
		return Report{}, fmt.Errorf("export: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(absFile), "."+filepath.Base(absFile)+".*.tmp")
	if err != nil {
		return Report{}, fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	rep, err := Export(ctx, dir, tmp, opts)
	if err != nil {
		return rep, err
	}
	if err := tmp.Sync(); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp.Name(), absFile); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	if d, err := os.Open(filepath.Dir(absFile)); err == nil {
		d.Sync()
		d.Close()
	}
	return rep, nil
}
