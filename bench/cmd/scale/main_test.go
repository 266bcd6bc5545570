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
	var rs []sizeResult
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
		// The reopen ran in its own process and measured the open.
		if o := r.Reopen; o == nil || o.Open <= 0 || o.OpenRSS <= 0 || o.SteadyRSS <= 0 || len(o.Latency) != 1 || o.Latency[0].P95 <= 0 {
			t.Errorf("%d turns: reopen %+v", r.Turns, o)
		}
		// And without the wall clock: CPU time, allocations, RSS split.
		if o := r.Reopen; o == nil || len(o.QueryCPU) != 1 || o.QueryCPU[0].Mean <= 0 || o.QueryCPU[0].Allocs <= 0 ||
			o.SteadyAnon <= 0 || o.SteadyFile <= 0 || o.WriteRSS <= 0 || o.WriteAnon <= 0 {
			t.Errorf("%d turns: reopen CPU and memory %+v", r.Turns, o)
		}
	}
	if !strings.Contains(out, "Reopened in a fresh process") || !strings.Contains(out, "open CPU") {
		t.Errorf("no reopen table:\n%s", out)
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
	if !strings.Contains(stdout.String(), "| 300 |") || !strings.Contains(stdout.String(), "Reopened") {
		t.Errorf("table lacks the 300-turn row:\n%s", stdout.String())
	}
}

func TestParseStatus(t *testing.T) {
	const status = "Name:\tscale\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"
	for _, tc := range []struct {
		field string
		want  int64
		ok    bool
	}{
		{"VmRSS", 1 << 20, true},
		{"VmHWM", 2 << 20, true},
		{"VmSwap", 0, false},
	} {
		got, err := parseStatus(strings.NewReader(status), tc.field)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %d, %v; want %d (ok %v)", tc.field, got, err, tc.want, tc.ok)
		}
	}
}

// TestRunReuse keeps the index of a size and, run again, only reopens it.
func TestRunReuse(t *testing.T) {
	tmp := t.TempDir()
	reuse := filepath.Join(tmp, "keep")
	cfg := config{sizes: []int{250}, queries: 10, k: 5, vectors: filepath.Join(tmp, "none.bin"), dir: tmp, inProcess: true, reuse: reuse}
	var rs [2][]byte
	for i := range rs {
		cfg.jsonOut = filepath.Join(tmp, "out.json")
		var stdout bytes.Buffer
		if err := run(context.Background(), cfg, nil, &stdout, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		b, err := os.ReadFile(cfg.jsonOut)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = b
	}
	if _, err := os.Stat(filepath.Join(reuse, "250", "recall.idx")); err != nil {
		t.Fatalf("index not kept: %v", err)
	}
	for i, b := range rs {
		var got []sizeResult
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 {
			t.Fatalf("run %d: %v %s", i, err, b)
		}
		built := got[0].IndexTime > 0
		if built != (i == 0) || got[0].Reopen == nil || got[0].Reopen.Open <= 0 {
			t.Errorf("run %d: built %v, reopen %+v", i, built, got[0].Reopen)
		}
	}
}
