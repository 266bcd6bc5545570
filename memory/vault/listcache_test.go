package vault

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// List keeps each note's parsed front matter while the file's stat is
// unchanged: a warm List reads no note, and every way the owner can
// change a note in an editor (in place with the same size, with mtime put
// back, an atomic save, a delete, a new note, a note that stops parsing)
// shows at the next List, reading only what changed.
func TestListCache(t *testing.T) {
	note := func(title string) string {
		return "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: " + title + "\ntype: project\n---\nbody\n"
	}
	tests := []struct {
		name   string
		change func(t *testing.T, full string)
		want   string // the title List shows for a.md afterwards; "-" gone, "!" unparsable
		reads  int
	}{
		{"unchanged", func(*testing.T, string) {}, "Alpha", 0},
		{"in place, same size", func(t *testing.T, full string) { write(t, full, note("Bravo")) }, "Bravo", 1},
		{"mtime put back", func(t *testing.T, full string) {
			if runtime.GOOS != "linux" {
				t.Skip("only Linux's ctime says so")
			}
			st, _ := os.Stat(full)
			write(t, full, note("Bravo"))
			if err := os.Chtimes(full, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, "Bravo", 1},
		{"atomic save", func(t *testing.T, full string) {
			write(t, full+".tmp", note("Charlie"))
			if err := os.Rename(full+".tmp", full); err != nil {
				t.Fatal(err)
			}
		}, "Charlie", 1},
		{"deleted", func(t *testing.T, full string) {
			if err := os.Remove(full); err != nil {
				t.Fatal(err)
			}
		}, "-", 0},
		{"malformed", func(t *testing.T, full string) { write(t, full, "---\ntitle: [\n---\n") }, "!", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			a := filepath.Join(dir, "knowledge", "projects", "a.md")
			if err := os.MkdirAll(filepath.Dir(a), 0o700); err != nil {
				t.Fatal(err)
			}
			write(t, a, note("Alpha"))
			write(t, filepath.Join(dir, "knowledge", "projects", "b.md"), note("Other"))
			v := New(dir, nil)
			// Past the racy window, so that the cache is trusted.
			v.now = func() time.Time { return time.Now().Add(time.Hour) }
			if got := listTitles(t, v); got["knowledge/projects/a.md"] != "Alpha" || v.list.reads != 2 {
				t.Fatalf("cold List %v, %d reads", got, v.list.reads)
			}
			tt.change(t, a)
			before := v.list.reads
			got := listTitles(t, v)
			title, ok := got["knowledge/projects/a.md"]
			if !ok {
				title = "-"
			}
			if title != tt.want || got["knowledge/projects/b.md"] != "Other" {
				t.Errorf("List after the change: %v, want a.md %q", got, tt.want)
			}
			if n := v.list.reads - before; n != tt.reads {
				t.Errorf("%d notes read, want %d", n, tt.reads)
			}
			if tt.want == "-" && len(v.list.notes) != 1 {
				t.Errorf("the deleted note is still cached: %d entries", len(v.list.notes))
			}
		})
	}
}

// A note changed within the racy window of when it was read is read
// again even if its stat did not change.
func TestListCacheRacy(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "knowledge", "a.md")
	if err := os.MkdirAll(filepath.Dir(a), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, a, "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: A\n---\n")
	v := New(dir, nil)
	listTitles(t, v)
	listTitles(t, v)
	if v.list.reads != 2 {
		t.Errorf("%d reads of a note written just now, want 2 (not trusted yet)", v.list.reads)
	}
}

func write(t *testing.T, full, s string) {
	t.Helper()
	if err := os.WriteFile(full, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// listTitles is List's titles by path ("!" for a note that does not parse).
func listTitles(t *testing.T, v *Vault) map[string]string {
	t.Helper()
	ns, err := v.List(t.Context(), ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, n := range ns {
		out[n.Path] = n.Title
		if n.Err != "" {
			out[n.Path] = "!"
		}
	}
	return out
}
