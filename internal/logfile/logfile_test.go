package logfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// contents maps each file in dir to its (decompressed) text.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", e.Name(), info.Mode().Perm())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
		}
		out[e.Name()] = string(b)
	}
	return out
}

func TestRotation(t *testing.T) {
	line := func(c byte) string { return strings.Repeat(string(c), 29) + "\n" } // 30 bytes
	tests := []struct {
		name     string
		o        Options
		existing string // hearth.log before Open
		writes   string // one line of 30 bytes per letter
		want     map[string]string
	}{
		{
			name:   "under the size nothing rotates",
			o:      Options{MaxBytes: 100},
			writes: "abc",
			want:   map[string]string{"hearth.log": line('a') + line('b') + line('c')},
		},
		{
			name:   "a write that would pass the size starts a new file",
			o:      Options{MaxBytes: 100},
			writes: "abcd",
			want:   map[string]string{"hearth.log": line('d'), "hearth.log.1": line('a') + line('b') + line('c')},
		},
		{
			name:   "backups shift and the oldest is dropped",
			o:      Options{MaxBytes: 30, Backups: 2},
			writes: "abcd",
			want:   map[string]string{"hearth.log": line('d'), "hearth.log.1": line('c'), "hearth.log.2": line('b')},
		},
		{
			name:   "compressed backups",
			o:      Options{MaxBytes: 60, Backups: 2, Compress: true},
			writes: "abcdefg",
			want:   map[string]string{"hearth.log": line('g'), "hearth.log.1.gz": line('e') + line('f'), "hearth.log.2.gz": line('c') + line('d')},
		},
		{
			name:   "no backups: the file starts over",
			o:      Options{MaxBytes: 60, Backups: -1},
			writes: "abc",
			want:   map[string]string{"hearth.log": line('c')},
		},
		{
			name:     "an existing file is appended to and counts toward the size",
			o:        Options{MaxBytes: 60},
			existing: line('x'),
			writes:   "ab",
			want:     map[string]string{"hearth.log": line('b'), "hearth.log.1": line('x') + line('a')},
		},
		{
			name:     "a write larger than the size goes whole into a file of its own",
			o:        Options{MaxBytes: 20},
			existing: "old\n",
			writes:   "a",
			want:     map[string]string{"hearth.log": line('a'), "hearth.log.1": "old\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			path := filepath.Join(dir, "hearth.log")
			if tc.existing != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Open(path, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []byte(tc.writes) {
				if n, err := l.Write([]byte(line(c))); err != nil || n != 30 {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got := contents(t, dir)
			if !maps(got, tc.want) {
				t.Errorf("files:\n got %q\nwant %q", got, tc.want)
			}
			if st, err := os.Stat(dir); err != nil || (tc.existing == "" && st.Mode().Perm() != 0o700) {
				t.Errorf("log dir: %v, %v", st.Mode().Perm(), err)
			}
			if _, err := l.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Write after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A rotation that cannot rename (the directory became read-only) keeps
// logging into the current file and says so once.
func TestRotationFailureKeepsLogging(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may rename in a read-only directory")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.log")
	l, err := Open(path, Options{MaxBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write([]byte("0123456789"))
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if _, err := l.Write([]byte("more\n")); err == nil {
		t.Error("a failed rotation was not reported")
	}
	b, _ := os.ReadFile(path)
	if string(b) != "0123456789more\n" {
		t.Errorf("file = %q", b)
	}
}
