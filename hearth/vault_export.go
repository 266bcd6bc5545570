package hearth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mnemo/mnemo/memory/archive"
	"github.com/mnemo/mnemo/memory/vault"
)

// ExportResult is an export hearth wrote: where, its size, and what it
// left out (archive.Report's notes).
type ExportResult struct {
	Path  string // absolute, on hearth's machine
	Bytes int64  // the archive's size
	Files int    // the memory root's files it holds
	Notes []string
}

// exportTimeout bounds one export.
const exportTimeout = 30 * time.Minute

// Export writes the memory root to one archive (memory/archive) on
// hearth's machine: to path (absolute), or, when path is "", under the
// root's artifacts/exports/ with the time in its name. Hearth keeps
// serving meanwhile; the archive is whole or not written.
func (h *Hearth) Export(ctx context.Context, path string) (ExportResult, error) {
	v := h.cfg.Vault
	if v == nil {
		return ExportResult{}, noVault()
	}
	if path == "" {
		path = filepath.Join(v.Dir(), filepath.FromSlash(archive.ExportsDir), "mnemo-"+time.Now().UTC().Format("20060102T150405.000Z")+".tar.gz")
	} else if !filepath.IsAbs(path) {
		return ExportResult{}, &Problem{Code: CodeBadRequest, Message: "export: give an absolute path on hearth's machine, or none for the memory root's artifacts/exports/"}
	}
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	rep, err := archive.WriteFile(ctx, v.Dir(), path, archive.Options{Log: h.log, OpenRepository: vault.OpenRepository})
	if err != nil {
		h.log.Error("export", "path", path, "err", err)
		return ExportResult{}, &Problem{Code: CodeInternal, Message: fmt.Sprintf("the export failed: %v", err)}
	}
	st, err := os.Stat(path)
	if err != nil {
		return ExportResult{}, &Problem{Code: CodeInternal, Message: fmt.Sprintf("the export failed: %v", err)}
	}
	return ExportResult{Path: path, Bytes: st.Size(), Files: rep.Files, Notes: rep.Notes}, nil
}
