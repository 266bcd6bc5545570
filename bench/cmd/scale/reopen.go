package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/bench/internal/backend"
	"github.com/mnemo/mnemo/bench/recallbench"
)

// reopenResult is the second half of a size: the index built by the first
// half opened again in a fresh process, as hearth opens it at start.
type reopenResult struct {
	Open time.Duration `json:"open_ns"` // Open until ready to search
	// OpenRSS is the process's resident set right after Open; SteadyRSS
	// after the queries, once the runtime has returned freed memory (a
	// daemon's idle size); PeakRSS the most it held (VmHWM).
	OpenRSS int64 `json:"open_rss"`
	// QueryRSS is the resident set at the end of the queries, before the
	// runtime returns what it freed (the garbage collector lets the heap
	// grow to twice what is live between collections).
	QueryRSS  int64                     `json:"query_rss"`
	SteadyRSS int64                     `json:"steady_rss"`
	PeakRSS   int64                     `json:"peak_rss"`
	Latency   []recallbench.ModeLatency `json:"latency"`
}

// sizeResult is one size: the build and the reopen.
type sizeResult struct {
	*recallbench.ScaleResult
	Reopen *reopenResult `json:"reopen,omitempty"`
}

// reopenWarmup queries run before the timed ones after a reopen.
const reopenWarmup = 20

// reopenChild runs the reopen of the index in dir in a new process of this
// binary.
func reopenChild(ctx context.Context, dir string, n int, args []string) (*reopenResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("re-exec: %w", err)
	}
	args = append([]string{"-reopen", dir, "-child", strconv.Itoa(n)}, args...)
	cmd := exec.CommandContext(ctx, exe, args...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("reopen child: %w", err)
	}
	var res reopenResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		return nil, fmt.Errorf("reopen child output: %w", err)
	}
	return &res, nil
}

// reopen opens the index of n turns in dir, measures the open and the
// resident set, and times queries in each mode.
func reopen(ctx context.Context, cfg config, dir string, n int) (*reopenResult, error) {
	vecPath := cfg.vectors
	if vecPath == "" {
		vecPath = backend.DefaultVectors(backend.RepoRoot())
	}
	b, _, err := backend.New(backend.Options{Vectors: vecPath, Search: cfg.search})
	if err != nil {
		return nil, err
	}
	modes := cfg.modes
	if b.Embedder == nil {
		modes = []string{recallbench.ModeLexical}
	}
	var res reopenResult
	t0 := time.Now()
	idx, err := b.Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("reopen: %w", err)
	}
	defer idx.Close()
	if _, err := idx.Count(ctx); err != nil {
		return nil, fmt.Errorf("reopen: %w", err)
	}
	res.Open = time.Since(t0)
	res.OpenRSS, _ = procStatus("VmRSS")
	syn := recallbench.NewSynth(recallbench.SynthOptions{Turns: n, Seed: cfg.seed + 1})
	queries := syn.Queries(cfg.queries + reopenWarmup)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the synthetic journal's end
	for _, mode := range modes {
		search, err := b.Searcher(idx, mode)
		if err != nil {
			return nil, err
		}
		lat := make([]time.Duration, 0, cfg.queries)
		for i, q := range queries {
			t := time.Now()
			if _, err := search(ctx, recallbench.SearchQuery{Text: q, K: cfg.k, At: at}); err != nil {
				return nil, fmt.Errorf("%s search: %w", mode, err)
			}
			if i >= reopenWarmup {
				lat = append(lat, time.Since(t))
			}
		}
		res.Latency = append(res.Latency, recallbench.ModeLatency{Mode: mode,
			P50: recallbench.Percentile(lat, 50), P95: recallbench.Percentile(lat, 95), Max: recallbench.Percentile(lat, 100)})
	}
	res.QueryRSS, _ = procStatus("VmRSS")
	debug.FreeOSMemory()
	res.SteadyRSS, _ = procStatus("VmRSS")
	res.PeakRSS, _ = procStatus("VmHWM")
	return &res, nil
}

// procStatus reads one size field (kB) of /proc/self/status, in bytes.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseStatus(f, field)
}

func parseStatus(r io.Reader, field string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) != 2 || fs[1] != "kB" {
			return 0, fmt.Errorf("bad %s line %q", field, sc.Text())
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no " + field + " in /proc/self/status")
}

// writeReopenMarkdown prints the reopen half of the results.
func writeReopenMarkdown(w io.Writer, rs []sizeResult) {
	if len(rs) == 0 || rs[0].Reopen == nil {
		return
	}
	fmt.Fprintf(w, "\nReopened in a fresh process (open until ready to search; RSS right after open, at the end of the queries, after them once freed memory is returned, and the peak):\n\n")
	fmt.Fprint(w, "| turns | open | open RSS | query RSS | steady RSS | peak RSS |")
	for _, l := range rs[0].Reopen.Latency {
		fmt.Fprintf(w, " %s p50 | %s p95 |", l.Mode, l.Mode)
	}
	fmt.Fprint(w, "\n|--:|--:|--:|--:|--:|--:|")
	for range rs[0].Reopen.Latency {
		fmt.Fprint(w, "--:|--:|")
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.Reopen == nil {
			continue
		}
		o := r.Reopen
		fmt.Fprintf(w, "| %d | %.2f s | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB |", r.Turns, o.Open.Seconds(),
			float64(o.OpenRSS)/(1<<20), float64(o.QueryRSS)/(1<<20), float64(o.SteadyRSS)/(1<<20), float64(o.PeakRSS)/(1<<20))
		for _, l := range o.Latency {
			fmt.Fprintf(w, " %.2f ms | %.2f ms |", ms(l.P50), ms(l.P95))
		}
		fmt.Fprintln(w)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
