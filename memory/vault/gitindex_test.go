package vault

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitRunner runs the git CLI in dir, skipping the test without it.
func gitRunner(t *testing.T, dir string) func(args ...string) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git binary")
	}
	home := t.TempDir()
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-C", dir, "-c", "user.name=o", "-c", "user.email=o@x"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// TestCommitIndexVersions: a vault commit keeps an index git wrote in each
// version readable by git, with the vault's note staged as committed and
// every other entry as it was (version 3's extended flags of an
// intent-to-add included); version 4 goes through go-git.
func TestCommitIndexVersions(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := newRoot(t)
			run := gitRunner(t, dir)
			os.WriteFile(filepath.Join(dir, "knowledge/projects/own.md"), []byte("mine\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "knowledge/projects/later.md"), []byte("later\n"), 0o600)
			run("add", "knowledge/projects/own.md")
			run("add", "-N", "knowledge/projects/later.md") // intent to add: an extended flag in v3
			run("update-index", "--index-version", version)
			before := run("ls-files", "-s", "--", "knowledge/projects/own.md", "knowledge/projects/later.md")

			v := New(dir, nil)
			p := projectProposal(t, "knowledge/projects/mnemo.md")
			if _, err := v.Apply(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if got := run("ls-files", "-s", "--", "knowledge/projects/own.md", "knowledge/projects/later.md"); got != before {
				t.Errorf("other entries changed:\n%s\nwant\n%s", got, before)
			}
			staged := run("ls-files", "-s", "--", p.Path)
			head := run("rev-parse", "HEAD:"+p.Path)
			if !strings.Contains(staged, strings.TrimSpace(head)) {
				t.Errorf("index holds %q, HEAD %q", staged, head)
			}
			if st := run("status", "--porcelain", "--", p.Path); st != "" {
				t.Errorf("status after the commit:\n%s", st)
			}
			run("fsck", "--strict")
		})
	}
}

// TestRawIndexRoundTrip: entries set and removed on an index go-git wrote
// read back through go-git's decoder as intended.
func TestRawIndexRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	orig := &index.Index{Version: 2}
	for _, n := range []string{"a.md", "b/c.md", "b/d.md", strings.Repeat("x", 5000)} {
		e := orig.Add(n)
		e.Hash, e.Mode, e.Size = plumbing.ComputeHash(plumbing.BlobObject, []byte(n)), filemode.Regular, uint32(len(n))
	}
	if err := index.NewEncoder(&buf).Encode(orig); err != nil {
		t.Fatal(err)
	}
	x, err := parseIndex(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.bytes(), buf.Bytes()) {
		t.Fatal("an index read and written unchanged is not the same bytes")
	}
	mtime := time.Unix(1_800_000_000, 5)
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte("new"))
	x.set(newEntry("b/c.md", h, filemode.Executable, 3, mtime))
	x.set(newEntry("b/a.md", h, filemode.Regular, 3, mtime))
	x.remove("a.md")
	x.remove("missing")
	got := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(x.bytes())).Decode(got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got.Entries {
		names = append(names, e.Name)
	}
	if want := []string{"b/a.md", "b/c.md", "b/d.md", strings.Repeat("x", 5000)}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("entries %q, want %q", names, want)
	}
	c := got.Entries[1]
	if c.Hash != h || c.Mode != filemode.Executable || c.Size != 3 || !c.ModifiedAt.Equal(mtime) {
		t.Errorf("entry %+v", c)
	}
}

func FuzzParseIndex(f *testing.F) {
	var buf bytes.Buffer
	idx := &index.Index{Version: 2}
	for _, n := range []string{"a", "b/c"} {
		e := idx.Add(n)
		e.Hash, e.Mode = plumbing.ComputeHash(plumbing.BlobObject, []byte(n)), filemode.Regular
	}
	index.NewEncoder(&buf).Encode(idx)
	f.Add(buf.Bytes())
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The checksum made right, so that the entries are explored.
		if len(b) >= sha1.Size {
			b = slices.Clone(b)
			sum := sha1.Sum(b[:len(b)-sha1.Size])
			copy(b[len(b)-sha1.Size:], sum[:])
		}
		x, err := parseIndex(b)
		if err != nil {
			return
		}
		out := x.bytes()
		y, err := parseIndex(out)
		if err != nil {
			t.Fatalf("an index parsed and written does not parse: %v", err)
		}
		if len(y.entries) != len(x.entries) || !bytes.Equal(y.bytes(), out) {
			t.Fatal("parse and write is not stable")
		}
		x.set(newEntry("zz/new.md", plumbing.ZeroHash, filemode.Regular, 0, time.Unix(0, 0)))
		if _, err := parseIndex(x.bytes()); err != nil {
			t.Fatalf("an index with an entry set does not parse: %v", err)
		}
	})
}

// TestLooseObject: an object written loose has the id git gives it, has
// no name until flushed, reads back through git, is the owner's only, and
// is not written twice.
func TestLooseObject(t *testing.T) {
	dir := newRoot(t)
	lw := &looseWriter{gitDir: filepath.Join(dir, ".git")}
	for _, data := range [][]byte{nil, []byte("hello\n"), bytes.Repeat([]byte("note "), 100_000)} {
		h, err := lw.put(plumbing.BlobObject, data)
		if err != nil {
			t.Fatal(err)
		}
		if want := plumbing.ComputeHash(plumbing.BlobObject, data); h != want {
			t.Fatalf("id %s, want %s", h, want)
		}
		path := filepath.Join(dir, ".git", "objects", h.String()[:2], h.String()[2:])
		if _, err := os.Stat(path); err == nil {
			t.Fatal("the object is named before flush")
		}
		if err := lw.flush(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o400 {
			t.Fatalf("object file: %v, %v", st, err)
		}
		if _, err := lw.put(plumbing.BlobObject, data); err != nil || len(lw.temps) != 0 {
			t.Fatalf("written again: %v, %d files", err, len(lw.temps))
		}
		run := gitRunner(t, dir)
		if got := run("cat-file", "-p", h.String()); got != string(data) {
			t.Errorf("git reads %d bytes, want %d", len(got), len(data))
		}
	}
}

// TestLooseBatch: a writer given more objects than a batch names them as
// it goes, so that a commit of thousands of files never holds thousands of
// files open; a large tree, stored uncompressed, reads back through git.
func TestLooseBatch(t *testing.T) {
	dir := newRoot(t)
	run := gitRunner(t, dir)
	lw := &looseWriter{gitDir: filepath.Join(dir, ".git")}
	var entries []object.TreeEntry
	for i := range 3 * looseBatch {
		h, err := lw.put(plumbing.BlobObject, fmt.Appendf(nil, "note %d\n", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(lw.temps) >= looseBatch {
			t.Fatalf("%d objects held", len(lw.temps))
		}
		entries = append(entries, object.TreeEntry{Name: fmt.Sprintf("n%04d.md", i), Mode: filemode.Regular, Hash: h})
	}
	for len(entries) < 1000 { // a tree over storedTreeSize
		e := entries[len(entries)%(3*looseBatch)]
		e.Name = fmt.Sprintf("n%04d.md", len(entries))
		entries = append(entries, e)
	}
	data := encodeTree(entries)
	if len(data) < storedTreeSize {
		t.Fatalf("tree of %d bytes", len(data))
	}
	h, err := lw.put(plumbing.TreeObject, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.flush(); err != nil {
		t.Fatal(err)
	}
	if got := run("cat-file", "tree", h.String()); got != string(data) {
		t.Errorf("git reads the tree as %d bytes, want %d", len(got), len(data))
	}
	if got := run("ls-tree", h.String()); !strings.Contains(got, "blob "+entries[999].Hash.String()+"\tn0999.md") {
		t.Errorf("ls-tree: %.200s", got)
	}
	run("fsck", "--strict")
}

// recordSync is a syncer that records, in order, what it made durable and
// what the index file held at that moment.
type recordSync struct {
	gitDir string
	calls  []string
}

func (r *recordSync) file(f *os.File) error {
	cur, _ := os.ReadFile(filepath.Join(r.gitDir, "index"))
	r.calls = append(r.calls, fmt.Sprintf("file %s (index holds %q)", filepath.Base(filepath.Dir(f.Name())), cur))
	return f.Sync()
}

func (r *recordSync) dir(path string) error {
	cur, _ := os.ReadFile(filepath.Join(r.gitDir, "index"))
	r.calls = append(r.calls, fmt.Sprintf("dir %s (index holds %d bytes)", filepath.Base(path), len(cur)))
	return nil
}

// TestWriteIndexFileSyncs: the new index is fsync'd before it is renamed
// over the old one (the old is still in place when it is synced), and the
// folder after (the new is in place), so that a power loss cannot leave a
// torn index.
func TestWriteIndexFileSyncs(t *testing.T) {
	gitDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(gitDir, "index"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := &rawIndex{version: 2}
	x.set(newEntry("a.md", plumbing.ZeroHash, filemode.Regular, 1, time.Unix(1, 0)))
	rec := &recordSync{gitDir: gitDir}
	b, err := writeIndexFile(gitDir, x, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("file %s (index holds %q)", filepath.Base(gitDir), "old"),
		fmt.Sprintf("dir %s (index holds %d bytes)", filepath.Base(gitDir), len(b)),
	}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("syncs:\n%q\nwant\n%q", rec.calls, want)
	}
	got, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("index on disk: %v, %d bytes, want the %d written", err, len(got), len(b))
	}
	left, _ := filepath.Glob(filepath.Join(gitDir, "index.tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
