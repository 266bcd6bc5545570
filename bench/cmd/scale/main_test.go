package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/bench/recallbench"
)

// TestMain lets the test binary stand in for the command when run() re-
// executes it for a size: os.Executable is then this binary.
func TestMain(m *testing.M) {
	if os.Getenv("SCALE_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRunChildren(t *testing.T) {
	t.Setenv("SCALE_TEST_AS_MAIN", "1")
	tmp := t.TempDir()
	args := []string{"-queries", "25", "-k", "5", "-vectors", filepath.Join(tmp, "none.bin"), "-dir", tmp}
	cfg := config{sizes: []int{200, 400}, queries: 25, k: 5, jsonOut: filepath.Join(tmp, "out.json")}
	var stdout bytes.Buffer
	if err := run(context.Background(), cfg, args, &stdout, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := stdout.String()
	for _, want := range []string{"# Recall scale benchmark", "| 200 |", "| 400 |", "lexical p95"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(cfg.jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rs []recallbench.ScaleResult
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatalf("JSON output: %v", err)
	}
	if len(rs) != 2 || rs[0].Turns != 200 || rs[1].Turns != 400 || rs[0].Queries != 25 {
		t.Fatalf("JSON output: %+v", rs)
	}
	for _, r := range rs {
		if r.PeakRSS <= 0 || r.Bytes <= 0 || len(r.Latency) != 1 || r.Latency[0].Mode != recallbench.ModeLexical {
			t.Errorf("%d turns: %+v", r.Turns, r)
		}
	}
	// Each child removed its index.
	if left, _ := filepath.Glob(filepath.Join(tmp, "recallscale-*")); len(left) != 0 {
		t.Errorf("index dirs left behind: %v", left)
	}
}

func TestRunInProcess(t *testing.T) {
	tmp := t.TempDir()
	cfg := config{sizes: []int{300}, queries: 10, k: 10, modes: []string{"hybrid"}, vectors: filepath.Join(tmp, "none.bin"), dir: tmp, inProcess: true}
	var stdout bytes.Buffer
	if err := run(context.Background(), cfg, nil, &stdout, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(stdout.String(), "| 300 |") {
		t.Errorf("table lacks the 300-turn row:\n%s", stdout.String())
	}
}
