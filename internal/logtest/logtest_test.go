package logtest_test

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/internal/logtest"
)

func TestLines(t *testing.T) {
	log, buf := logtest.New()
	log.Debug("quiet", "n", 1)
	log.Info("said", "n", 2)
	log.Warn("torn line", "n", 3)
	log.Warn("other", "n", 4)
	log.Error("broken", "n", 5)

	tests := []struct {
		level  slog.Level
		substr string
		want   int
	}{
		{slog.LevelDebug, "", 1},
		{slog.LevelInfo, "said", 1},
		{slog.LevelWarn, "", 2},
		{slog.LevelWarn, "torn", 1},
		{slog.LevelWarn, "n=4", 1},
		{slog.LevelError, "said", 0},
	}
	for _, tt := range tests {
		if got := buf.Lines(tt.level, tt.substr); len(got) != tt.want {
			t.Errorf("Lines(%v, %q) = %q, want %d lines", tt.level, tt.substr, got, tt.want)
		}
	}
	buf.Reset()
	if diff := cmp.Diff("", buf.String()); diff != "" {
		t.Errorf("after Reset (-want +got):\n%s", diff)
	}
}
