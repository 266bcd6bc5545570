package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// buildRoot makes a memory root with defaults, the vault's layout, two
// days of journal, knowledge notes in two commits, a tag, an uncommitted
// file, and a derived index/ and a lock file that an export leaves out.
func buildRoot(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "root")
	if _, err := memory.Open(ctx, dir, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := vault.Open(ctx, dir, data.Vault(), nil); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	now := day
	j, err := journal.Open(filepath.Join(dir, "threads"), journal.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"hello", "hi!", "I moved to Lisbon", "noted", "next day", "ok"} {
		if i == 4 {
			now = day.Add(24 * time.Hour)
		}
		role := []string{"user", "agent"}[i%2]
		if _, err := j.Append(ctx, journal.Record{Role: role, Text: text, Mode: "text"}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	// A proposal's decision, which is not a turn, travels with them.
	if _, err := j.Append(ctx, journal.DecisionRecord(journal.Decision{Proposal: "prop_1", Path: "knowledge/people/me.md", Verdict: "applied", Why: "low risk", Commit: "abc"}, "policy")); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	note := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Home\n---\nLives in Lisbon.\n"
	write("knowledge/people/owner.md", note)
	if _, err := vault.Commit(ctx, dir, []string{"knowledge/people/owner.md"}, "vault: create knowledge/people/owner.md", "owner"); err != nil {
		t.Fatal(err)
	}
	write("knowledge/projects/mnemo.md", "---\nid: 01KAK3J8A1B2C3D4E5F6G7H8J9\ntitle: mnemo\n---\nA companion.\n")
	if _, err := vault.Commit(ctx, dir, []string{"knowledge/projects/mnemo.md"}, "vault: create knowledge/projects/mnemo.md", "agent"); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "tag", "v1")
	write("preferences.json", `{"provider":"anthropic"}`+"\n")
	write("index/recall.idx", "derived")
	write("hearth.lock", "")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// files reads every file of a root but .git, index/ and hearth.lock.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && excluded(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			got[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func records(t *testing.T, dir string) []journal.Record {
	t.Helper()
	j, err := journal.Open(filepath.Join(dir, "threads"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var recs []journal.Record
	if err := j.Scan(t.Context(), func(r journal.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

func export(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	rep, err := Export(t.Context(), dir, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files == 0 || rep.Refs == 0 {
		t.Fatalf("report %+v", rep)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	src := buildRoot(t)
	arc := export(t, src)
	dst := filepath.Join(t.TempDir(), "new")
	rep, err := Import(t.Context(), bytes.NewReader(arc), dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gaps) != 0 {
		t.Fatalf("gaps: %q", rep.Gaps)
	}
	want, got := files(t, src), files(t, dst)
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s: restored %q (present %v), want %q", p, g, ok, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: restored, not in the source", p)
		}
	}
	if _, ok := want["preferences.json"]; !ok {
		t.Error("the uncommitted preferences.json is not in the source walk")
	}
	for _, gone := range []string{"index", "hearth.lock"} {
		if _, err := os.Stat(filepath.Join(dst, gone)); err == nil && gone == "index" {
			t.Errorf("%s restored: it is derived", gone)
		}
	}
	if w, g := records(t, src), records(t, dst); len(w) != 7 || !w[6].IsDecision() || !slices.EqualFunc(w, g, func(a, b journal.Record) bool {
		return a.ID == b.ID && a.Text == b.Text && a.TS.Equal(b.TS) && a.Role == b.Role && a.Kind == b.Kind && a.By == b.By &&
			(a.Decision == nil) == (b.Decision == nil) && (a.Decision == nil || *a.Decision == *b.Decision)
	}) {
		t.Errorf("journal: restored %d records %+v, want %+v", len(g), g, w)
	}
	// Private modes.
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want private", p, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"log", "--all", "--format=%H %an %s"},
		{"show-ref"},
		{"symbolic-ref", "HEAD"},
		{"status", "--porcelain"},
	} {
		if w, g := runGit(t, src, args...), runGit(t, dst, args...); w != g {
			t.Errorf("git %v: restored\n%s\nwant\n%s", args, g, w)
		}
	}
	if n := strings.Count(runGit(t, dst, "log", "--format=%H"), "\n"); n < 3 {
		t.Errorf("restored history has %d commits", n)
	}
	runGit(t, dst, "fsck", "--strict")
	// The restored root opens as a root, with nothing new to commit.
	head := runGit(t, dst, "rev-parse", "HEAD")
	if _, err := memory.Open(t.Context(), dst, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	if h := runGit(t, dst, "rev-parse", "HEAD"); h != head {
		t.Errorf("memory.Open moved HEAD from %s to %s", head, h)
	}
}

// TestStandardTools reads an export with tar and git only, following the
// archive's own README.
func TestStandardTools(t *testing.T) {
	src := buildRoot(t)
	arc := export(t, src)
	dir := t.TempDir()
	file := filepath.Join(dir, "export.tar.gz")
	if err := os.WriteFile(file, arc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tar", "tzf", file).CombinedOutput()
	if err != nil {
		t.Fatalf("tar tzf: %v\n%s", err, out)
	}
	list := strings.Fields(string(out))
	for _, want := range []string{"README.md", "root/AGENT.md", "root/threads/2026-11-20.jsonl", "root/knowledge/people/owner.md", "history.bundle", "manifest.json"} {
		if !slices.Contains(list, want) {
			t.Errorf("tar tzf lacks %s:\n%s", want, out)
		}
	}
	for _, never := range []string{"root/index/", "root/hearth.lock", "root/.git/"} {
		if slices.Contains(list, never) {
			t.Errorf("tar tzf lists %s", never)
		}
	}
	x := filepath.Join(dir, "x")
	os.Mkdir(x, 0o700)
	if out, err := exec.Command("tar", "xzf", file, "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar xzf: %v\n%s", err, out)
	}
	runGit(t, x, "clone", "-q", "history.bundle", "clone")
	runGit(t, filepath.Join(x, "clone"), "bundle", "verify", "../history.bundle")
	if w, g := runGit(t, src, "log", "--format=%H"), runGit(t, filepath.Join(x, "clone"), "log", "--format=%H"); w != g {
		t.Errorf("git clone of the bundle: log\n%s\nwant\n%s", g, w)
	}
	// The README's recipe.
	readme, err := os.ReadFile(filepath.Join(x, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, script, _ := strings.Cut(string(readme), "```sh\n")
	script, _, _ = strings.Cut(script, "```")
	var kept []string
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "mkdir restore") || strings.HasPrefix(line, "mv root") {
			continue // the test's own directory, and no move
		}
		kept = append(kept, strings.ReplaceAll(line, "/path/to/THIS-FILE", file))
	}
	r := filepath.Join(dir, "restore")
	os.Mkdir(r, 0o700)
	cmd := exec.Command("sh", "-ec", strings.Join(kept, "\n"))
	cmd.Dir = r
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README recipe: %v\n%s\n%s", err, strings.Join(kept, "\n"), out)
	}
	restored := filepath.Join(r, "root")
	if w, g := runGit(t, src, "status", "--porcelain"), runGit(t, restored, "status", "--porcelain"); w != g {
		t.Errorf("README recipe: git status\n%s\nwant\n%s", g, w)
	}
	if w, g := runGit(t, src, "log", "--all", "--format=%H"), runGit(t, restored, "log", "--all", "--format=%H"); w != g {
		t.Errorf("README recipe: git log\n%s\nwant\n%s", g, w)
	}
}

// TestExportCutsALineBeingWritten: a shard's incomplete last line (being
// written while hearth runs) is left out and noted, and the rest arrives.
func TestExportCutsALineBeingWritten(t *testing.T) {
	src := buildRoot(t)
	shard := filepath.Join(src, "threads", "2026-11-21.jsonl")
	whole, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(shard, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"01KAK3J`)
	f.Close()
	var buf bytes.Buffer
	rep, err := Export(t.Context(), src, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "threads/2026-11-21.jsonl: its last 14 bytes") {
		t.Errorf("notes %q", rep.Notes)
	}
	dst := filepath.Join(t.TempDir(), "new")
	irep, err := Import(t.Context(), &buf, dst, Options{})
	if err != nil || len(irep.Gaps) != 0 {
		t.Fatalf("import: %v, gaps %q", err, irep.Gaps)
	}
	got, err := os.ReadFile(filepath.Join(dst, "threads", "2026-11-21.jsonl"))
	if err != nil || !bytes.Equal(got, whole) {
		t.Errorf("shard restored as %q (%v), want %q", got, err, whole)
	}
}

func TestImportRefusesNonEmptyRoot(t *testing.T) {
	arc := export(t, buildRoot(t))
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "notes.txt"), []byte("mine"), 0o600)
	_, err := Import(t.Context(), bytes.NewReader(arc), dst, Options{})
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into a non-empty root: %v, want ErrNotEmpty", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "notes.txt")); string(b) != "mine" {
		t.Error("the root's file changed")
	}
	if _, err := os.Stat(filepath.Join(dst, "AGENT.md")); err == nil {
		t.Error("import wrote into a non-empty root")
	}
}

func TestImportRefusesHeldRoot(t *testing.T) {
	arc := export(t, buildRoot(t))
	dst := t.TempDir()
	lock, err := memory.LockRoot(dst, memory.Holder{Mode: memory.ModeDaemon})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	_, err = Import(t.Context(), bytes.NewReader(arc), dst, Options{})
	if !errors.Is(err, memory.ErrRootHeld) {
		t.Fatalf("import into a held root: %v, want ErrRootHeld", err)
	}
}

// rewrite returns arc with each entry passed through edit (nil drops it)
// and extra entries appended.
func rewrite(t *testing.T, arc []byte, edit func(h *tar.Header, body []byte) (*tar.Header, []byte)) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(arc))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		body := new(bytes.Buffer)
		body.ReadFrom(tr)
		nh, nb := edit(h, body.Bytes())
		if nh == nil {
			continue
		}
		nh.Size = int64(len(nb))
		if nh.Typeflag != tar.TypeReg {
			nh.Size = 0
			nb = nil
		}
		tw.WriteHeader(nh)
		tw.Write(nb)
	}
	tw.Close()
	zw.Close()
	return out.Bytes()
}

func TestImportReportsGaps(t *testing.T) {
	arc := export(t, buildRoot(t))
	tests := []struct {
		name string
		edit func(h *tar.Header, b []byte) (*tar.Header, []byte)
		want []string // each a substring of some gap
	}{
		{"missing file", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/knowledge/people/owner.md" {
				return nil, nil
			}
			return h, b
		}, []string{"knowledge/people/owner.md: listed in the manifest, missing"}},
		{"changed file", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/AGENT.md" {
				return h, append(b, "x"...)
			}
			return h, b
		}, []string{"AGENT.md: differs from the manifest"}},
		{"corrupt bundle", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == bundleName {
				c := slices.Clone(b)
				c[len(c)-30] ^= 0xff
				return h, c
			}
			return h, b
		}, []string{"history: history.bundle is damaged"}},
		{"no bundle", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == bundleName {
				return nil, nil
			}
			return h, b
		}, []string{"history.bundle: missing"}},
		{"no manifest", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == manifestName {
				return nil, nil
			}
			return h, b
		}, []string{"manifest.json: missing"}},
		{"torn journal line", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/threads/2026-11-20.jsonl" {
				return h, append(slices.Clone(b), `{"id":"01K`+"\n"...)
			}
			return h, b
		}, []string{"threads/2026-11-20.jsonl:5: a torn or corrupt line", "threads/2026-11-20.jsonl: differs"}},
		{"traversal", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/AGENT.md" {
				h.Name = "root/../../evil"
			}
			return h, b
		}, []string{`refused: unsafe path in archive: "root/../../evil"`, "AGENT.md: listed in the manifest, missing"}},
		{"symlink", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/AGENT.md" {
				h.Typeflag, h.Linkname = tar.TypeSymlink, "/etc/passwd"
			}
			return h, b
		}, []string{`refused: "root/AGENT.md": a link or special file`}},
		{"git config", func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "root/AGENT.md" {
				h.Name = "root/.git/config"
			}
			return h, b
		}, []string{"names git's own directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "new")
			rep, err := Import(t.Context(), bytes.NewReader(rewrite(t, arc, tt.edit)), dst, Options{})
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(rep.Gaps, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("gaps lack %q:\n%s", w, all)
				}
			}
			// The rest is restored all the same.
			if _, err := os.Stat(filepath.Join(dst, "knowledge", "projects", "mnemo.md")); err != nil {
				t.Errorf("the rest not restored: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dst), "..", "evil")); err == nil {
				t.Error("an entry escaped the root")
			}
		})
	}
}

func TestImportTruncatedArchive(t *testing.T) {
	arc := export(t, buildRoot(t))
	dst := filepath.Join(t.TempDir(), "new")
	rep, err := Import(t.Context(), bytes.NewReader(arc[:len(arc)/2]), dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(rep.Gaps, "\n"); !strings.Contains(all, "the archive ends early") || !strings.Contains(all, "manifest.json: missing") {
		t.Errorf("gaps:\n%s", all)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		kind int
		rel  string
	}{
		{"README.md", kindReadme, ""},
		{"manifest.json", kindManifest, ""},
		{"history.bundle", kindBundle, ""},
		{"root/", kindRoot, "."},
		{"root/threads/", kindRoot, "threads"},
		{"root/threads/2026-11-20.jsonl", kindRoot, "threads/2026-11-20.jsonl"},
		{"root/.gitignore", kindRoot, ".gitignore"},
		{"root/index/recall.idx", kindRoot, "index/recall.idx"},
		{"../x", 0, ""},
		{"/etc/passwd", 0, ""},
		{"root/../x", 0, ""},
		{"root/a/../../x", 0, ""},
		{"root//x", 0, ""},
		{"root/./x", 0, ""},
		{"root/a\\..\\..\\x", 0, ""},
		{"root/.git/config", 0, ""},
		{"root/knowledge/.GIT/hooks/pre-commit", 0, ""},
		{"root/hearth.lock", 0, ""},
		{"other/x", 0, ""},
		{"", 0, ""},
		{"root/x\x00", 0, ""},
	}
	for _, tt := range tests {
		kind, rel, err := classify(tt.name)
		if kind != tt.kind || rel != tt.rel || (tt.kind == 0) != (err != nil) {
			t.Errorf("classify(%q) = %d, %q, %v; want %d, %q", tt.name, kind, rel, err, tt.kind, tt.rel)
		}
	}
}

// FuzzClassify: whatever a name, what classify lets through stays inside
// the root and off .git.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"root/a", "root/../x", "/x", "root/.git/x", "README.md", "root/a/b/", "root\\x", "root/.Git"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		kind, rel, err := classify(name)
		if err != nil {
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("error %v does not wrap ErrUnsafePath", err)
			}
			return
		}
		if kind != kindRoot {
			return
		}
		base := "/base/root"
		joined := filepath.Join(base, filepath.FromSlash(rel))
		if joined != base && !strings.HasPrefix(joined, base+string(filepath.Separator)) {
			t.Fatalf("%q → %q leaves the root", name, joined)
		}
		if !filepath.IsLocal(filepath.FromSlash(rel)) && rel != "." {
			t.Fatalf("%q → %q is not local", name, rel)
		}
		for _, el := range strings.Split(strings.ToLower(rel), "/") {
			if el == ".git" {
				t.Fatalf("%q → %q names .git", name, rel)
			}
		}
	})
}

// FuzzImport: no archive makes Import write outside its root or fail
// other than by an error.
func FuzzImport(f *testing.F) {
	var seed bytes.Buffer
	zw := gzip.NewWriter(&seed)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "root/a", Size: 1})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, arc []byte) {
		base := t.TempDir()
		dst := filepath.Join(base, "root")
		_, _ = Import(context.Background(), bytes.NewReader(arc), dst, Options{})
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 1 {
			t.Fatalf("import wrote beside its root: %v", entries)
		}
	})
}

// FuzzBundleHeader: the bundle header parser never panics, and what it
// accepts are valid refs.
func FuzzBundleHeader(f *testing.F) {
	f.Add([]byte(bundleHeader + "0123456789012345678901234567890123456789 refs/heads/master\n\nPACK"))
	f.Add([]byte("# v2 git bundle\n-0123456789012345678901234567890123456789\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		refs, err := readBundleHeader(bufioReader(b))
		if err != nil {
			return
		}
		for _, r := range refs {
			if r.Name != "HEAD" && !(r.Name.IsBranch() || r.Name.IsTag()) {
				t.Fatalf("accepted ref %q", r.Name)
			}
		}
	})
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestImportIncompleteHistory: a bundle whose pack parses but lacks the
// trees and blobs its commit needs is a gap, not a broken repository.
func TestImportIncompleteHistory(t *testing.T) {
	src := buildRoot(t)
	arc := export(t, src)
	repo, err := memory.OpenRepository(src)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(bundleHeader + head.Hash().String() + " " + head.Name().String() + "\n" + head.Hash().String() + " HEAD\n\n")
	if _, err := packfile.NewEncoder(&b, repo.Storer, false).Encode([]plumbing.Hash{head.Hash()}, 10); err != nil {
		t.Fatal(err)
	}
	arc = rewrite(t, arc, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
		if h.Name == bundleName {
			return h, b.Bytes()
		}
		return h, body
	})
	dst := filepath.Join(t.TempDir(), "new")
	rep, err := Import(t.Context(), bytes.NewReader(arc), dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(rep.Gaps, "\n"); !strings.Contains(all, "incomplete history") {
		t.Errorf("gaps:\n%s", all)
	}
	if _, err := os.Stat(filepath.Join(dst, "knowledge", "projects", "mnemo.md")); err != nil {
		t.Errorf("files not restored: %v", err)
	}
}

// TestExportWhileAppending: an export taken while the journal is being
// appended to holds only whole lines, each a record the journal has, and
// imports without a gap.
func TestExportWhileAppending(t *testing.T) {
	src := buildRoot(t)
	j, err := journal.Open(filepath.Join(src, "threads"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	appended := make(chan int)
	go func() {
		n := 0
		defer func() { appended <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := j.Append(context.Background(), journal.Record{Role: "user", Text: strings.Repeat("word ", 200), Mode: "text"}); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	var archives [][]byte
	for range 3 {
		var buf bytes.Buffer
		if _, err := Export(t.Context(), src, &buf, Options{}); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, buf.Bytes())
	}
	close(stop)
	n := <-appended
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for _, r := range records(t, src) {
		all[r.ID] = true
	}
	t.Logf("%d appends during 3 exports", n)
	for i, arc := range archives {
		dst := filepath.Join(t.TempDir(), "new")
		rep, err := Import(t.Context(), bytes.NewReader(arc), dst, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Gaps) != 0 {
			t.Errorf("export %d: gaps %q", i, rep.Gaps)
		}
		for _, r := range records(t, dst) {
			if !all[r.ID] {
				t.Errorf("export %d: record %s is not in the journal", i, r.ID)
			}
		}
	}
}

// TestExportWithoutHistory: a root whose .git is gone or broken still
// exports its files, noting the history it could not; the import says the
// history is missing and restores the rest.
func TestExportWithoutHistory(t *testing.T) {
	src := buildRoot(t)
	if err := os.RemoveAll(filepath.Join(src, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, ".git"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep, err := Export(t.Context(), src, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "the git history, unreadable") {
		t.Errorf("notes %q", rep.Notes)
	}
	dst := filepath.Join(t.TempDir(), "new")
	irep, err := Import(t.Context(), &buf, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(irep.Gaps) != 1 || !strings.Contains(irep.Gaps[0], "history.bundle: missing") {
		t.Errorf("gaps %q", irep.Gaps)
	}
	if w, g := files(t, src), files(t, dst); len(g) != len(w) {
		t.Errorf("restored %d files and directories, want %d", len(g), len(w))
	}
}
