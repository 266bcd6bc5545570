package vault

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/archive"
)

// hookedStorage is go-git's storage with a hook before each object read
// and no second look: what the export read through before OpenRepository.
type hookedStorage struct {
	*filesystem.Storage
	before func(plumbing.Hash)
}

func (s *hookedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.before(h)
	return s.Storage.EncodedObject(t, h)
}

// TestExportDuringMaintain: an export (memory/archive) reads the whole
// history while the keeper's Maintain packs the loose objects under it.
// Opened through OpenRepository, the export keeps the history; through
// go-git's storage alone it loses it (the archive then holds the files
// only, and says the history was unreadable).
func TestExportDuringMaintain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rescan      bool
		wantHistory bool
	}{
		{"through OpenRepository", true, true},
		{"go-git's storage alone", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRoot(t)
			v := New(dir, nil)
			if _, err := v.Apply(t.Context(), projectProposal(t, "knowledge/projects/mnemo.md")); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Maintain(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"knowledge/people/ana.md", "knowledge/people/bo.md", "knowledge/people/cy.md"} {
				if _, err := v.Apply(t.Context(), projectProposal(t, p)); err != nil {
					t.Fatal(err)
				}
			}
			isLoose := func(h plumbing.Hash) bool {
				hx := h.String()
				_, err := os.Lstat(filepath.Join(dir, ".git", "objects", hx[:2], hx[2:]))
				return err == nil
			}
			// Maintain runs at the first read of a loose object after a
			// packed one was read: the packs are listed by then.
			var sawPacked, fired bool
			hook := func(h plumbing.Hash) {
				if fired {
					return
				}
				if loose := isLoose(h); !sawPacked || !loose {
					sawPacked = sawPacked || !loose
					return
				}
				fired = true
				if _, err := v.Maintain(t.Context(), 1); err != nil {
					t.Errorf("Maintain: %v", err)
				}
			}
			open := func(dir string) (*git.Repository, error) {
				if tc.rescan {
					return openRepository(dir, hook)
				}
				repo, err := memory.OpenRepository(dir)
				if err != nil {
					return nil, err
				}
				wt, err := repo.Worktree()
				if err != nil {
					return nil, err
				}
				return git.Open(&hookedStorage{Storage: repo.Storer.(*filesystem.Storage), before: hook}, wt.Filesystem)
			}
			var out bytes.Buffer
			rep, err := archive.Export(t.Context(), dir, &out, archive.Options{OpenRepository: open})
			if err != nil {
				t.Fatal(err)
			}
			if !fired {
				t.Fatal("Maintain did not run between the export's reads")
			}
			lost := false
			for _, n := range rep.Notes {
				lost = lost || strings.Contains(n, "git history")
			}
			if got := !lost && rep.Refs > 0; got != tc.wantHistory {
				t.Errorf("history exported: %v (refs %d, notes %q), want %v", got, rep.Refs, rep.Notes, tc.wantHistory)
			}
		})
	}
}
