package memory_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/memory"
)

var testDefaults = fstest.MapFS{
	"AGENT.md":           {Data: []byte("# default agent\n")},
	"continuity.json":    {Data: []byte(`{"version":1}` + "\n")},
	"prompts/voice.md":   {Data: []byte("voice prompt\n")},
	"config/policy.json": {Data: []byte("{}\n")},
}

func openRoot(t *testing.T, dir string) *memory.Root {
	t.Helper()
	r, err := memory.Open(t.Context(), dir, testDefaults, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// trackedFiles returns the files of the commit at HEAD, and its message.
func trackedFiles(t *testing.T, dir string) (files []string, message, author string) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatalf("PlainOpen: %v", err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatalf("CommitObject: %v", err)
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatalf("Tree: %v", err)
	}
	err = tree.Files().ForEach(func(f *object.File) error {
		files = append(files, f.Name)
		return nil
	})
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	slices.Sort(files)
	return files, commit.Message, commit.Author.String()
}

func TestOpenCreatesLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mnemo")
	r := openRoot(t, dir)

	if r.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", r.Dir(), dir)
	}
	if want := filepath.Join(dir, "threads"); r.ThreadsDir() != want {
		t.Errorf("ThreadsDir() = %q, want %q", r.ThreadsDir(), want)
	}

	files, message, author := trackedFiles(t, dir)
	wantFiles := []string{".gitignore", "AGENT.md", "config/policy.json", "continuity.json", "prompts/voice.md"}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files at HEAD (-want +got):\n%s", diff)
	}
	if message != "memory: initialise root" {
		t.Errorf("commit message = %q, want %q", message, "memory: initialise root")
	}
	if !strings.HasPrefix(author, "hearth <hearth@localhost>") {
		t.Errorf("commit author = %q, want hearth <hearth@localhost>", author)
	}

	gitignore, err := r.ReadFile(".gitignore")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if want := "index/\nhearth.lock\n"; string(gitignore) != want {
		t.Errorf(".gitignore = %q, want %q", gitignore, want)
	}

	if runtime.GOOS == "windows" {
		return
	}
	for name, want := range map[string]fs.FileMode{
		".":                fs.ModeDir | 0o700,
		"threads":          fs.ModeDir | 0o700,
		"prompts":          fs.ModeDir | 0o700,
		"AGENT.md":         0o600,
		"prompts/voice.md": 0o600,
		".gitignore":       0o600,
	} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("Stat: %v", err)
			continue
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
		}
	}
}

func TestReopenKeepsUserFiles(t *testing.T) {
	dir := t.TempDir()
	openRoot(t, dir)
	edited := map[string]string{
		"AGENT.md":   "# my own agent\n",
		".gitignore": "*.tmp", // no index/ rule, no final newline
	}
	for name, data := range edited {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "prompts", "voice.md")); err != nil {
		t.Fatal(err)
	}

	r := openRoot(t, dir)
	tests := []struct {
		name string
		want string
	}{
		{"AGENT.md", "# my own agent\n"},               // kept
		{"prompts/voice.md", "voice prompt\n"},         // missing: copied again
		{".gitignore", "*.tmp\nindex/\nhearth.lock\n"}, // rules added, nothing lost
		{"continuity.json", `{"version":1}` + "\n"},    // untouched
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ReadFile(tt.name)
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("%s = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	// The history is the same: reopening commits nothing.
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatalf("PlainOpen: %v", err)
	}
	log, err := repo.Log(&git.LogOptions{})
	if err != nil {
		t.Fatalf("Log: %v", err)
	}
	commits := 0
	log.ForEach(func(*object.Commit) error { commits++; return nil })
	if commits != 1 {
		t.Errorf("%d commits after reopening, want 1", commits)
	}
}

// A root made before the lock file existed has a committed .gitignore that
// ignores only index/. Opening it appends the lock file rule after the owner's
// lines, commits nothing, and from then on git does not see the lock file.
func TestOpenUpgradesGitignore(t *testing.T) {
	tests := []struct {
		name string
		old  string // .gitignore as committed by the owner or an older hearth
		want string
	}{
		{"older hearth", "index/\n", "index/\nhearth.lock\n"},
		{"owner lines kept", "# mine\n*.tmp\n/index\n", "# mine\n*.tmp\n/index\nhearth.lock\n"},
		{"no final newline", "*.tmp", "*.tmp\nindex/\nhearth.lock\n"},
		{"already ignored", "/hearth.lock\nindex\n", "/hearth.lock\nindex\n"},
		{"empty", "", "index/\nhearth.lock\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			repo, err := git.PlainInit(dir, false)
			if err != nil {
				t.Fatalf("PlainInit: %v", err)
			}
			writeFile(t, filepath.Join(dir, ".gitignore"), tt.old)
			writeFile(t, filepath.Join(dir, "AGENT.md"), "# mine\n")
			wt, err := repo.Worktree()
			if err != nil {
				t.Fatalf("Worktree: %v", err)
			}
			if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
				t.Fatalf("Add: %v", err)
			}
			sig := &object.Signature{Name: "owner", Email: "owner@localhost", When: time.Now()}
			if _, err := wt.Commit("mine", &git.CommitOptions{Author: sig}); err != nil {
				t.Fatalf("Commit: %v", err)
			}

			// The lock file exists when Open looks at the root: the owner
			// locks the root before opening it.
			writeFile(t, filepath.Join(dir, "hearth.lock"), `{"pid":1,"mode":"daemon"}`+"\n")
			r := openRoot(t, dir)

			got, err := r.ReadFile(".gitignore")
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf(".gitignore = %q, want %q", got, tt.want)
			}
			files, message, _ := trackedFiles(t, dir)
			if message != "mine" || slices.Contains(files, "hearth.lock") {
				t.Errorf("HEAD = %q with %v, want the owner's commit, without hearth.lock", message, files)
			}
			status, err := wt.Status()
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if _, seen := status["hearth.lock"]; seen {
				t.Errorf("git status shows hearth.lock:\n%s", status)
			}
		})
	}
}

// A new root opened under its lock does not commit the lock file.
func TestOpenLockedNewRoot(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hearth.lock"), `{"pid":1,"mode":"daemon"}`+"\n")
	openRoot(t, dir)
	files, _, _ := trackedFiles(t, dir)
	if slices.Contains(files, "hearth.lock") {
		t.Errorf("first commit holds hearth.lock: %v", files)
	}
}

func TestOpenExistingRepository(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatalf("PlainInit: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "index", "vectors.bin"), "derived")
	openRoot(t, dir)
	files, _, _ := trackedFiles(t, dir)
	want := []string{".gitignore", "AGENT.md", "config/policy.json", "continuity.json", "notes.md", "prompts/voice.md"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files at HEAD (-want +got):\n%s", diff)
	}
}

func TestOpenWithoutHistory(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"git is a regular file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git"), "not a repository\n")
		}},
		{"git links to nowhere", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git"), "gitdir: "+filepath.Join(dir, "missing")+"\n")
		}},
		{"git without HEAD holds an object", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", "objects", "ab", strings.Repeat("cd", 19)), "x")
		}},
		{"git without HEAD holds a ref", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", "refs", "heads", "main"), strings.Repeat("ab", 20)+"\n")
		}},
		{"git without HEAD has packed refs", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", "packed-refs"), "# pack-refs\n")
		}},
		{"HEAD points at a missing commit", func(t *testing.T, dir string) {
			openRoot(t, dir)
			head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
			if err != nil {
				t.Fatal(err)
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
			if !ok {
				t.Fatalf("HEAD is not a symbolic ref: %q", head)
			}
			writeFile(t, filepath.Join(dir, ".git", filepath.FromSlash(ref)), strings.Repeat("ab", 20)+"\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			before := dirFiles(t, filepath.Join(dir, ".git"))
			_, err := memory.Open(t.Context(), dir, testDefaults, nil)
			if err == nil || !strings.Contains(err.Error(), "cannot establish version history") {
				t.Errorf("Open: got %v, want an error saying version history cannot be established", err)
			}
			if after := dirFiles(t, filepath.Join(dir, ".git")); !slices.Equal(after, before) {
				t.Errorf(".git changed: %q, was %q", after, before)
			}
		})
	}
}

// dirFiles lists the files under dir (a regular .git file: itself).
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOpenAfterUnfinishedInit: a .git that an init killed early left — no
// HEAD, no object, no ref: nothing a user could lose — is made again, and
// the root gets its first commit.
func TestOpenAfterUnfinishedInit(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dot string)
	}{
		{"empty directory", func(t *testing.T, dot string) {
			if err := os.Mkdir(dot, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"folders only", func(t *testing.T, dot string) {
			for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
				if err := os.MkdirAll(filepath.Join(dot, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"folders and config", func(t *testing.T, dot string) {
			writeFile(t, filepath.Join(dot, "config"), "[core]\n\tbare = false\n")
			if err := os.MkdirAll(filepath.Join(dot, "refs", "heads"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, filepath.Join(dir, ".git"))
			openRoot(t, dir)
			files, message, _ := trackedFiles(t, dir)
			if !slices.Contains(files, "AGENT.md") || message == "" {
				t.Errorf("first commit: files %q, message %q", files, message)
			}
		})
	}
}

// TestOpenRepairsIndex: an index a crash tore (truncated, or its checksum
// wrong) does not wedge the root: Open puts it aside and rebuilds it from
// HEAD without touching the files, and the worktree's status is what it
// was — the owner's uncommitted change still shows, nothing else.
func TestOpenRepairsIndex(t *testing.T) {
	tests := []struct {
		name string
		tear func(b []byte) []byte
	}{
		{"empty", func(b []byte) []byte { return nil }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"checksum wrong", func(b []byte) []byte {
			b = slices.Clone(b)
			b[len(b)-1] ^= 0xff
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			openRoot(t, dir)
			writeFile(t, filepath.Join(dir, "AGENT.md"), "# the owner's agent\n")
			index := filepath.Join(dir, ".git", "index")
			b, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(index, tt.tear(b), 0o600); err != nil {
				t.Fatal(err)
			}
			openRoot(t, dir)
			repo, err := git.PlainOpen(dir)
			if err != nil {
				t.Fatal(err)
			}
			wt, err := repo.Worktree()
			if err != nil {
				t.Fatal(err)
			}
			st, err := wt.Status()
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			want := git.Status{"AGENT.md": &git.FileStatus{Staging: git.Unmodified, Worktree: git.Modified}}
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(index + ".broken"); err != nil {
				t.Errorf("the torn index is not kept aside: %v", err)
			}
			if gitBin, err := exec.LookPath("git"); err == nil {
				out, err := exec.Command(gitBin, "-C", dir, "status", "--porcelain").CombinedOutput()
				if err != nil || string(out) != " M AGENT.md\n" {
					t.Errorf("git status: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestOpenRepairsIndexBeforeFirstCommit: a torn index in a repository
// with no commit yet (a first start killed while go-git wrote it) does
// not stop the first commit.
func TestOpenRepairsIndexBeforeFirstCommit(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".git", "index"), "DIRC\x00\x00")
	openRoot(t, dir)
	files, _, _ := trackedFiles(t, dir)
	if !slices.Contains(files, "AGENT.md") {
		t.Errorf("first commit holds %q", files)
	}
}

func TestOpenUnwritable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a non-root Unix user: permissions do not bind root")
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantMsg string
	}{
		{"empty", func(*testing.T, string) {}, "copy defaults"},
		{"files but no git", func(t *testing.T, dir string) {
			openRoot(t, dir)
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}, "cannot establish version history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			if err := os.Chmod(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			_, err := memory.Open(t.Context(), dir, testDefaults, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Open of a read-only directory: got %v, want an error containing %q", err, tt.wantMsg)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	r := openRoot(t, dir)
	outside := filepath.Join(filepath.Dir(dir), "outside-"+filepath.Base(dir))
	writeFile(t, outside, "SECRET")
	t.Cleanup(func() { os.Remove(outside) })
	if runtime.GOOS != "windows" {
		if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name    string
		path    string
		want    string
		wantErr error // nil: any error when want is ""
	}{
		{name: "file", path: "continuity.json", want: `{"version":1}` + "\n"},
		{name: "nested", path: "prompts/voice.md", want: "voice prompt\n"},
		{name: "cleaned", path: "prompts/../AGENT.md", want: "# default agent\n"},
		{name: "missing", path: "nope.md", wantErr: fs.ErrNotExist},
		{name: "parent", path: "../x", wantErr: fs.ErrInvalid},
		{name: "escaping", path: "prompts/../../" + filepath.Base(outside), wantErr: fs.ErrInvalid},
		{name: "absolute", path: outside, wantErr: fs.ErrInvalid},
		{name: "empty", path: "", wantErr: fs.ErrInvalid},
		{name: "symlink out", path: "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path == "link" && runtime.GOOS == "windows" {
				t.Skip("no symlink")
			}
			got, err := r.ReadFile(tt.path)
			if tt.want != "" {
				if err != nil || string(got) != tt.want {
					t.Errorf("ReadFile(%q) = %q, %v, want %q", tt.path, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Errorf("ReadFile(%q) = %q, want an error", tt.path, got)
			} else if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadFile(%q): got %v, want %v", tt.path, err, tt.wantErr)
			}
		})
	}
}

func TestDefaultDir(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory: %v", err)
	}
	tests := []struct {
		name string
		xdg  string
		want string
	}{
		{"XDG_DATA_HOME", "/data/xdg", filepath.Join("/data/xdg", "mnemo")},
		{"unset", "", filepath.Join(home, ".local", "share", "mnemo")},
		{"relative is ignored", "rel/xdg", filepath.Join(home, ".local", "share", "mnemo")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_DATA_HOME", tt.xdg)
			got, err := memory.DefaultDir()
			if err != nil {
				t.Fatalf("DefaultDir: %v", err)
			}
			if got != tt.want {
				t.Errorf("DefaultDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// The embedded defaults make a working root whose anchor is valid JSON.
func TestOpenWithEmbeddedDefaults(t *testing.T) {
	r, err := memory.Open(t.Context(), t.TempDir(), data.Defaults(), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	anchor, err := r.ReadFile("continuity.json")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	var v struct {
		Version            int            `json:"version"`
		IdentityInvariants map[string]any `json:"identity_invariants"`
		EpisodicMemory     []any          `json:"episodic_memory"`
		SemanticMemory     []any          `json:"semantic_memory"`
	}
	if err := json.Unmarshal(anchor, &v); err != nil {
		t.Fatalf("continuity.json is not valid JSON: %v", err)
	}
	if v.Version != 1 || v.IdentityInvariants["name"] != "mnemo" || v.EpisodicMemory == nil || v.SemanticMemory == nil {
		t.Errorf("continuity.json = %+v, want version 1, name mnemo, empty memories", v)
	}
	agent, err := r.ReadFile("AGENT.md")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	for _, want := range []string{"remember", "gateway.json", "system prompt"} {
		if !strings.Contains(string(agent), want) {
			t.Errorf("AGENT.md does not mention %q", want)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
