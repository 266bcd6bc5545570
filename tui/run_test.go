package tui

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/internal/logfile"
)

func TestLogPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/mnemo/mnemo.log"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/mnemo/mnemo.log"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/h"}, "/h/.local/state/mnemo/mnemo.log"},
	} {
		got, err := LogPath(env(tt.env))
		if err != nil || got != tt.want {
			t.Errorf("LogPath(%v) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
}

func TestOpenLogWritesTheFile(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return dir
		}
		return ""
	}
	log, c, err := OpenLog(getenv, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello log", "k", "v")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	log.Info("after close is dropped, not a panic")
	path := filepath.Join(dir, "mnemo", "mnemo.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "hello log") {
		t.Errorf("log holds %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", st.Mode().Perm())
	}
}

// TestOpenLogRotates: the log rotates as it grows past its size, keeps
// its gzip'd backups 0600, drops the oldest, and redacts secrets.
func TestOpenLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mnemo.log")
	log, c, err := openLogAt(path, slog.LevelInfo, logfile.Options{MaxBytes: 300, Backups: 2, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		log.Info("line", "i", i, "key", "sk-abcdefghijklmnop")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
	if want := []string{"mnemo.log", "mnemo.log.1.gz", "mnemo.log.2.gz"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	b, _ := os.ReadFile(path)
	if st, _ := os.Stat(path); st.Size() > 300 || !strings.Contains(string(b), "i=29") || strings.Contains(string(b), "sk-") {
		t.Errorf("current log (%d bytes): %q", st.Size(), b)
	}
}
