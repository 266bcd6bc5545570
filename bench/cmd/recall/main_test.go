package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/bench/internal/backend"
	"github.com/mnemo/mnemo/bench/recallbench"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func baseConfig(t *testing.T) config {
	return config{
		ks:      recallbench.DefaultKs(),
		modes:   recallbench.AllModes(),
		vectors: filepath.Join(t.TempDir(), "no-vectors.bin"),
		batch:   128,
		tmp:     t.TempDir(),
		maxLine: recallbench.DefaultMaxLine,
	}
}

func TestRunSkipsWithoutLoCoMo(t *testing.T) {
	t.Setenv("MNEMO_LOCOMO", filepath.Join(t.TempDir(), "absent.json"))
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), baseConfig(t), &stdout, &stderr, discard()); err != nil {
		t.Fatalf("run without the dataset: %v, want a clean skip", err)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "skipping") {
		t.Errorf("run without the dataset: stdout %q, stderr %q; want nothing and a skip message", stdout.String(), stderr.String())
	}
}

func TestRunMissingExplicitData(t *testing.T) {
	cfg := baseConfig(t)
	cfg.data = filepath.Join(t.TempDir(), "absent.jsonl")
	if err := run(context.Background(), cfg, io.Discard, io.Discard, discard()); err == nil {
		t.Errorf("run with a missing -data: no error")
	}
}

func TestRunNeutralLexicalOnly(t *testing.T) {
	cfg := baseConfig(t)
	cfg.data = "testdata/tiny.jsonl"
	cfg.jsonOut = filepath.Join(t.TempDir(), "out.json")
	cfg.perQuery = true
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), cfg, &stdout, &stderr, discard()); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := stdout.String()
	for _, want := range []string{"# Recall benchmark: tiny", "## lexical: turn level", "| a facts | 2 |", "| b dates | 2 |", "| overall (a, b) | 4 |", "lexical only"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## hybrid") {
		t.Errorf("report has a hybrid section without vectors:\n%s", out)
	}
	b, err := os.ReadFile(cfg.jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var res recallbench.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("JSON output: %v", err)
	}
	if len(res.Modes) != 1 || len(res.Modes[0].Queries) != 4 {
		t.Fatalf("JSON output: %d modes, want 1 with 4 queries", len(res.Modes))
	}
	// Each of these questions shares a rare word with its answer only.
	for _, q := range res.Modes[0].Queries {
		if len(q.Ranked) == 0 || q.Ranked[0] != map[string]string{"home/q1": "t1", "home/q2": "t4", "home/q3": "t3", "work/q1": "t1"}[q.Group+"/"+q.ID] {
			t.Errorf("%s/%s ranked %v", q.Group, q.ID, q.Ranked)
		}
	}
}

func TestLoadDataset(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(" \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		wantName   string
		wantGroups []string
		wantErr    bool
	}{
		{"../../recallbench/testdata/locomo_tiny.json", "locomo10", []string{"conv-a", "conv-b"}, false},
		{"testdata/tiny.jsonl", "tiny", []string{"home", "work"}, false},
		{"testdata", "tiny", []string{"home", "work"}, false},
		{empty, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			ds, _, err := loadDataset(tt.path, config{maxLine: recallbench.DefaultMaxLine})
			if (err != nil) != tt.wantErr {
				t.Fatalf("loadDataset(%s): error %v, want error %v", tt.path, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var groups []string
			for _, g := range ds.Groups {
				groups = append(groups, g.ID)
			}
			if ds.Name != tt.wantName || !cmp.Equal(groups, tt.wantGroups) {
				t.Errorf("loadDataset(%s): %q with groups %v, want %q with %v", tt.path, ds.Name, groups, tt.wantName, tt.wantGroups)
			}
		})
	}
}

func TestDateAtLastSession(t *testing.T) {
	ds, _, err := loadDataset("../../recallbench/testdata/locomo_tiny.json", config{questionAt: "last-session"})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ds.Groups {
		last := g.Docs[len(g.Docs)-1].TS
		for _, q := range g.Queries {
			if !q.Date.Equal(last) {
				t.Errorf("%s %s dated %v, want %v", g.ID, q.ID, q.Date, last)
			}
		}
	}
}

// TestLoCoMo runs the command on the real LoCoMo data, when it is there,
// on its first conversation: a smoke test of the whole path.
func TestLoCoMo(t *testing.T) {
	path := os.Getenv("MNEMO_LOCOMO")
	if path == "" {
		path = filepath.Join(backend.RepoRoot(), "..", "shared", "bench", "locomo", "locomo10.json")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("LoCoMo not found at %s (set MNEMO_LOCOMO): %v", path, err)
	}
	cfg := baseConfig(t)
	cfg.data = path
	cfg.groups = 1
	cfg.modes = []string{recallbench.ModeHybrid} // lexical only without vectors
	cfg.vectors = backend.DefaultVectors(backend.RepoRoot())
	var stdout bytes.Buffer
	if err := run(context.Background(), cfg, &stdout, io.Discard, discard()); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(stdout.String(), "| overall (1–4) |") {
		t.Errorf("report lacks the overall row:\n%s", stdout.String())
	}
}

func TestRunEntities(t *testing.T) {
	cfg := baseConfig(t)
	cfg.data = "testdata/tiny.jsonl"
	cfg.archetype = "../../../data/vault/config/archetype.yml"
	var stdout bytes.Buffer
	if err := run(context.Background(), cfg, &stdout, io.Discard, discard()); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(stdout.String(), "Entity expansion on: archetype companion") {
		t.Errorf("report does not say expansion is on:\n%s", stdout.String())
	}
	cfg.archetype = filepath.Join(t.TempDir(), "absent.yml")
	if err := run(context.Background(), cfg, io.Discard, io.Discard, discard()); err == nil {
		t.Error("a missing archetype file: no error")
	}
}
