package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/config"
)

// TestOpenLog: the level filters, -log-file takes the log off stderr into
// a 0600 file, and what looks like a secret is redacted either way.
func TestOpenLog(t *testing.T) {
	tests := []struct {
		name    string
		level   slog.Level
		file    bool
		want    []string
		notWant []string
	}{
		{"info to stderr", slog.LevelInfo, false, []string{"level=INFO msg=started", "level=WARN", "key=[redacted]"}, []string{"DEBUG", "sk-"}},
		{"warn filters info", slog.LevelWarn, false, []string{"level=WARN"}, []string{"INFO", "DEBUG"}},
		{"debug to a file", slog.LevelDebug, true, []string{"level=DEBUG", "level=INFO", "level=WARN", "owner=[email]"}, []string{"@example.com"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{
				LogLevel:    config.Setting[slog.Level]{Value: tc.level},
				LogMaxSize:  config.Setting[int]{Value: 1},
				LogBackups:  config.Setting[int]{Value: 2},
				LogCompress: config.Setting[bool]{Value: true},
			}
			path := filepath.Join(t.TempDir(), "logs", "hearth.log")
			if tc.file {
				cfg.LogFile.Value = path
			}
			var stderr bytes.Buffer
			log, closer, err := openLog(cfg, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("details")
			log.Info("started", "key", "sk-abcdefghijklmnopqrs")
			log.Warn("slow", "owner", "ada@example.com")
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			got := stderr.String()
			if tc.file {
				if got != "" {
					t.Errorf("stderr has %q with a log file", got)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
					t.Errorf("log file is %v, want 0600", st.Mode().Perm())
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("log lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("log has %q:\n%s", w, got)
				}
			}
		})
	}
}
