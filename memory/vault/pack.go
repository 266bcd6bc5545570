package vault

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/mnemo/mnemo/memory"
)

// Every vault write commits loose objects, the whole ledger among them
// (each version a new blob), and git's own gc never runs on a memory
// root: without packing, the repository grows with the square of the
// writes (267 MB of loose objects after 1,800 notes). The vault packs its
// loose objects once they are many: into one packfile, each ledger version
// a delta of another, made durable before a single loose object goes.

// PackThreshold is the number of loose objects from which Maintain packs
// them (a vault write makes five to eight).
const PackThreshold = 1000

// PackMergeThreshold is the number of packs beyond which Maintain merges
// them into one: each object lookup searches every pack's index, and a
// pass a day for years would leave thousands.
const PackMergeThreshold = 20

// staleTemp is the age from which a temporary object file (tmp_obj_*, a
// write a crash cut short) is removed: no write takes that long.
const staleTemp = time.Hour

// packWindow is how many objects the delta search compares each with
// (git's pack.window).
const packWindow = 10

// Maintenance is what Maintain did.
type Maintenance struct {
	Loose      int           // loose objects found
	Packed     int           // loose objects packed (and removed)
	Pack       string        // the packfile written, "" when none
	StaleTemps int           // stale temporary object files removed
	Took       time.Duration // how long packing took
	Merged     int           // packs merged into one (MergedPack)
	MergedPack string        // the pack they were merged into, "" when none
	MergeTook  time.Duration // how long merging took
}

// Maintain keeps the vault's repository small: temporary object files
// older than an hour are removed (the caller holds the memory root's lock,
// so no other hearth writes them), and once there are threshold loose
// objects or more (PackThreshold when threshold ≤ 0) they are written into
// one packfile, fsync'd with its index, and only then removed. A crash at
// any point leaves every object readable, loose or packed or both. The
// pack is written beside the commits (objects are immutable, and a commit
// only adds loose ones, which this pass leaves alone); the loose copies
// are removed under the vault's lock, so that no commit that opened the
// repository before the pack existed loses an object it is about to read.
// It is for a background caller (hearth's vault keeper), off the write
// path; one runs at a time.
func (v *Vault) Maintain(ctx context.Context, threshold int) (Maintenance, error) {
	if threshold <= 0 {
		threshold = PackThreshold
	}
	v.packMu.Lock()
	defer v.packMu.Unlock()
	var m Maintenance
	gitDir := filepath.Join(v.dir, git.GitDirName)
	loose, temps, err := looseObjects(gitDir, v.now().Add(-staleTemp))
	if err != nil {
		return m, fmt.Errorf("list loose objects: %w", err)
	}
	for _, t := range temps {
		if err := os.Remove(t); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("remove a stale temporary object: %w", err)
		}
		m.StaleTemps++
	}
	if m.StaleTemps > 0 {
		v.log.Info("vault: removed stale temporary object files", "count", m.StaleTemps)
	}
	m.Loose = len(loose)
	if len(loose) >= threshold {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		start := time.Now()
		name, err := packObjects(gitDir, v.dir, loose)
		if err != nil {
			return m, fmt.Errorf("pack loose objects: %w", err)
		}
		v.mu.Lock()
		err = removeLoose(gitDir, loose)
		v.mu.Unlock()
		m.Took = time.Since(start)
		if err != nil {
			return m, fmt.Errorf("remove packed loose objects: %w", err)
		}
		m.Packed, m.Pack = len(loose), name
		v.log.Info("vault: packed loose objects", "objects", len(loose), "pack", name, "took", m.Took)
	}
	return m, v.mergePacks(ctx, gitDir, &m)
}

// mergePacks merges the repository's packs into one when there are more
// than PackMergeThreshold: every object of theirs written into a new
// pack, which with its index is fsync'd and listed before any old pack
// goes. A pack bigger than all the others together is left as it is, the
// others merged beside it, so that a merge costs what was added since
// rather than the whole history again. An old pack is removed .pack first, then .idx (go-git lists packs
// by their .pack, and fails on one whose .idx is missing), under the
// vault's lock, so that no commit loses a pack it is reading; readers
// (gitread.go) look again in the packs as they are. A crash leaves every
// object in a pack, old or new or both (git is content with duplicates;
// the next pass merges them).
func (v *Vault) mergePacks(ctx context.Context, gitDir string, m *Maintenance) error {
	limit := PackMergeThreshold
	if v.packsMax > 0 {
		limit = v.packsMax
	}
	packs, err := listPacks(gitDir)
	if err != nil || len(packs) <= limit {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if packs = withoutDominant(gitDir, packs); len(packs) < 2 {
		return nil
	}
	start := time.Now()
	var hs []plumbing.Hash
	seen := make(map[plumbing.Hash]bool)
	for _, p := range packs {
		ids, err := packObjectIDs(filepath.Join(gitDir, "objects", "pack", "pack-"+p.String()+".idx"))
		if err != nil {
			return fmt.Errorf("merge packs: read pack-%s.idx: %w", p, err)
		}
		for _, h := range ids {
			if !seen[h] {
				seen[h] = true
				hs = append(hs, h)
			}
		}
	}
	name, err := packObjects(gitDir, v.dir, hs)
	if err != nil {
		return fmt.Errorf("merge packs: %w", err)
	}
	v.mu.Lock()
	err = removePacks(gitDir, packs, name)
	v.mu.Unlock()
	m.MergeTook = time.Since(start)
	if err != nil {
		return fmt.Errorf("merge packs: remove the merged packs: %w", err)
	}
	m.Merged, m.MergedPack = len(packs), name
	v.log.Info("vault: merged packs", "packs", len(packs), "objects", len(hs), "pack", name, "took", m.MergeTook)
	return nil
}

// listPacks returns the packs of the repository at gitDir that have both
// their .pack and their .idx.
func listPacks(gitDir string) ([]plumbing.Hash, error) {
	dir := filepath.Join(gitDir, "objects", "pack")
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for _, de := range des {
		n := de.Name()
		hx, ok := strings.CutSuffix(strings.TrimPrefix(n, "pack-"), ".pack")
		if !ok || len(hx) != 2*len(plumbing.ZeroHash) || !isHex(hx) || !de.Type().IsRegular() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "pack-"+hx+".idx")); err != nil {
			continue
		}
		out = append(out, plumbing.NewHash(hx))
	}
	return out, nil
}

// withoutDominant returns packs without the biggest when its .pack is
// bigger than all the others' together.
func withoutDominant(gitDir string, packs []plumbing.Hash) []plumbing.Hash {
	var total, biggest int64
	at := -1
	for i, p := range packs {
		st, err := os.Stat(filepath.Join(gitDir, "objects", "pack", "pack-"+p.String()+".pack"))
		if err != nil {
			return packs
		}
		total += st.Size()
		if st.Size() > biggest {
			biggest, at = st.Size(), i
		}
	}
	if at < 0 || biggest <= total-biggest {
		return packs
	}
	return slices.Delete(slices.Clone(packs), at, at+1)
}

// packObjectIDs returns the ids of the objects of the pack index at path.
func packObjectIDs(path string) ([]plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		return nil, err
	}
	it, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []plumbing.Hash
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e.Hash)
	}
}

// removePacks removes the packs of the repository at gitDir but keep
// (a file name, pack-<hash>.pack): each .pack, then its .idx, then the
// folder is fsync'd.
func removePacks(gitDir string, packs []plumbing.Hash, keep string) error {
	dir := filepath.Join(gitDir, "objects", "pack")
	for _, p := range packs {
		base := filepath.Join(dir, "pack-"+p.String())
		if filepath.Base(base)+".pack" == keep {
			continue
		}
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return syncDir(dir)
}

// looseObjects lists the loose objects of the repository at gitDir, and
// the temporary object files last changed before cutoff.
func looseObjects(gitDir string, cutoff time.Time) ([]plumbing.Hash, []string, error) {
	objects := filepath.Join(gitDir, "objects")
	dirs, err := os.ReadDir(objects)
	if err != nil {
		return nil, nil, err
	}
	var hs []plumbing.Hash
	var temps []string
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		dir := filepath.Join(objects, d.Name())
		es, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range es {
			n := e.Name()
			if strings.HasPrefix(n, "tmp_obj_") {
				if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
					temps = append(temps, filepath.Join(dir, n))
				}
				continue
			}
			if len(n) != 2*len(plumbing.ZeroHash)-2 || !isHex(n) || !e.Type().IsRegular() {
				continue
			}
			var h plumbing.Hash
			hex.Decode(h[:], []byte(d.Name()+n))
			hs = append(hs, h)
		}
	}
	return hs, temps, nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// packObjects writes the objects hs (loose objects of the repository at
// gitDir, worktree dir) into one packfile with deltas, makes the pack and
// its index durable, and returns its file name. go-git's RepackObjects is
// not used: it removes the loose objects before its pack is named, and
// fsyncs nothing.
func packObjects(gitDir, dir string, hs []plumbing.Hash) (string, error) {
	repo, err := memory.OpenRepository(dir)
	if err != nil {
		return "", err
	}
	pw, ok := repo.Storer.(storer.PackfileWriter)
	if !ok {
		return "", errors.New("the repository cannot write packfiles")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return "", err
	}
	sum, err := packfile.NewEncoder(w, repo.Storer, false).Encode(hs, packWindow)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	packDir := filepath.Join(gitDir, "objects", "pack")
	base := filepath.Join(packDir, "pack-"+sum.String())
	for _, p := range []string{base + ".pack", base + ".idx"} {
		if err := syncFile(p); err != nil {
			return "", fmt.Errorf("sync %s: %w", filepath.Base(p), err)
		}
	}
	if err := syncDir(packDir); err != nil {
		return "", err
	}
	// Every object is in a durable pack (the encoder fails on one it
	// cannot read, and go-git lists the pack only once its index is
	// whole): the loose copies may go.
	packed, err := repo.Storer.(storer.PackedObjectStorer).ObjectPacks()
	if err != nil || !containsHash(packed, sum) {
		return "", fmt.Errorf("the new pack %s is not listed: %v", sum, err)
	}
	return filepath.Base(base) + ".pack", nil
}

// removeLoose removes the loose objects hs of the repository at gitDir.
func removeLoose(gitDir string, hs []plumbing.Hash) error {
	objects := filepath.Join(gitDir, "objects")
	for _, h := range hs {
		hx := h.String()
		if err := os.Remove(filepath.Join(objects, hx[:2], hx[2:])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func containsHash(hs []plumbing.Hash, h plumbing.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
