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
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/bench/internal/backend"
	"github.com/mnemo/mnemo/bench/recallbench"
	"github.com/mnemo/mnemo/memory/recall"
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

	// The same measured without the wall clock, which a shared machine
	// inflates: CPU seconds (user and system, all threads) of the open and
	// of each query, and the heap allocated per query.
	OpenCPU  time.Duration `json:"open_cpu_ns"`
	QueryCPU []modeCPU     `json:"query_cpu"`
	// The resident set split into anonymous memory (the heap) and mapped
	// file pages (the snapshot's sections a query touched; the kernel can
	// take them back), right after the open and in the steady state.
	OpenAnon   int64 `json:"open_rss_anon"`
	OpenFile   int64 `json:"open_rss_file"`
	SteadyAnon int64 `json:"steady_rss_anon"`
	SteadyFile int64 `json:"steady_rss_file"`
	// WriteRSS is the steady resident set after one more document was
	// indexed and the queries run again, as in a daemon that keeps
	// indexing turns; WriteAnon and WriteFile split it.
	WriteRSS  int64 `json:"write_rss"`
	WriteAnon int64 `json:"write_rss_anon"`
	WriteFile int64 `json:"write_rss_file"`
}

// modeCPU is one mode's CPU time and allocation per query.
type modeCPU struct {
	Mode   string        `json:"mode"`
	Mean   time.Duration `json:"mean_ns"`
	P50    time.Duration `json:"p50_ns"`
	P95    time.Duration `json:"p95_ns"`
	Bytes  int64         `json:"alloc_bytes"`
	Allocs int64         `json:"allocs"`
	// Faults are page faults per query, minor and major: mapped pages
	// brought in (a major one read the disk).
	MinorFaults float64 `json:"minor_faults"`
	MajorFaults float64 `json:"major_faults"`
}

// faults returns this process's minor and major page faults so far.
func faults() (minor, major int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return ru.Minflt, ru.Majflt
}

// cpuTime is the CPU time, user and system, that this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss returns the resident set: total, anonymous and file-backed.
func rss() (total, anon, file int64) {
	total, _ = procStatus("VmRSS")
	anon, _ = procStatus("RssAnon")
	file, _ = procStatus("RssFile")
	return total, anon, file
}

// profile starts a CPU profile in path when it is not "", and returns its stop.
func profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
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
	prefix := cfg.cpuProfile
	stop, err := profile(profileName(prefix, "open", n))
	if err != nil {
		return nil, err
	}
	// The word vectors just loaded leave garbage behind: collected now,
	// its collection is not counted as the open's CPU time.
	runtime.GC()
	c0, t0 := cpuTime(), time.Now()
	idx, err := b.Open(ctx, dir)
	if err != nil {
		stop()
		return nil, fmt.Errorf("reopen: %w", err)
	}
	defer idx.Close()
	if _, err := idx.Count(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("reopen: %w", err)
	}
	res.Open, res.OpenCPU = time.Since(t0), cpuTime()-c0
	stop()
	res.OpenRSS, res.OpenAnon, res.OpenFile = rss()
	if cfg.rssMap {
		printRSSMap(os.Stderr, fmt.Sprintf("%d turns, after the open", n))
	}
	syn := recallbench.NewSynth(recallbench.SynthOptions{Turns: n, Seed: cfg.seed + 1})
	queries := syn.Queries(cfg.queries + reopenWarmup)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the synthetic journal's end
	if stop, err = profile(profileName(prefix, "query", n)); err != nil {
		return nil, err
	}
	for _, mode := range modes {
		search, err := b.Searcher(idx, mode)
		if err != nil {
			stop()
			return nil, err
		}
		lat := make([]time.Duration, 0, cfg.queries)
		cpu := make([]time.Duration, 0, cfg.queries)
		var m0, m1 runtime.MemStats
		var min0, maj0 int64
		for i, q := range queries {
			if i == reopenWarmup {
				runtime.ReadMemStats(&m0)
				min0, maj0 = faults()
			}
			c, t := cpuTime(), time.Now()
			if _, err := search(ctx, recallbench.SearchQuery{Text: q, K: cfg.k, At: at}); err != nil {
				stop()
				return nil, fmt.Errorf("%s search: %w", mode, err)
			}
			if i >= reopenWarmup {
				lat = append(lat, time.Since(t))
				cpu = append(cpu, cpuTime()-c)
			}
		}
		runtime.ReadMemStats(&m1)
		min1, maj1 := faults()
		res.Latency = append(res.Latency, recallbench.ModeLatency{Mode: mode,
			P50: recallbench.Percentile(lat, 50), P95: recallbench.Percentile(lat, 95), Max: recallbench.Percentile(lat, 100)})
		var sum time.Duration
		for _, c := range cpu {
			sum += c
		}
		nq := int64(max(len(cpu), 1))
		res.QueryCPU = append(res.QueryCPU, modeCPU{Mode: mode, Mean: sum / time.Duration(nq),
			P50: recallbench.Percentile(cpu, 50), P95: recallbench.Percentile(cpu, 95),
			Bytes: int64(m1.TotalAlloc-m0.TotalAlloc) / nq, Allocs: int64(m1.Mallocs-m0.Mallocs) / nq,
			MinorFaults: float64(min1-min0) / float64(nq), MajorFaults: float64(maj1-maj0) / float64(nq)})
	}
	stop()
	res.QueryRSS, _ = procStatus("VmRSS")
	debug.FreeOSMemory()
	res.SteadyRSS, res.SteadyAnon, res.SteadyFile = rss()
	res.PeakRSS, _ = procStatus("VmHWM")
	if cfg.rssMap {
		printRSSMap(os.Stderr, fmt.Sprintf("%d turns, steady", n))
	}
	if err := writeOne(ctx, b, idx, modes[0], queries, cfg.k, at); err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	res.WriteRSS, res.WriteAnon, res.WriteFile = rss()
	return &res, nil
}

// profileName is where a CPU profile of one stage of size n goes, or ""
// without a prefix.
func profileName(prefix, stage string, n int) string {
	if prefix == "" {
		return ""
	}
	return fmt.Sprintf("%s-%s-%d.pprof", prefix, stage, n)
}

// writeOne indexes one document (always the same id, so that a reused
// index only replaces it) and runs the queries again in mode, as a daemon
// does between turns.
func writeOne(ctx context.Context, b recallbench.Backend, idx recall.Index, mode string, queries []string, k int, at time.Time) error {
	doc := recall.Doc{ID: "scale-bench-written-after-open", Kind: "turn", Role: "user", Session: "scale-bench",
		Text: "one more turn written after the open, as a daemon keeps indexing", TS: at}
	var vecs [][]float32
	if b.Embedder != nil {
		var err error
		if vecs, err = b.Embedder.Embed(ctx, []string{doc.Text}); err != nil {
			return fmt.Errorf("write: embed: %w", err)
		}
	}
	if err := idx.Upsert(ctx, []recall.Doc{doc}, vecs); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	search, err := b.Searcher(idx, mode)
	if err != nil {
		return err
	}
	for _, q := range queries {
		if _, err := search(ctx, recallbench.SearchQuery{Text: q, K: k, At: at}); err != nil {
			return fmt.Errorf("%s search after a write: %w", mode, err)
		}
	}
	return nil
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
			mib(o.OpenRSS), mib(o.QueryRSS), mib(o.SteadyRSS), mib(o.PeakRSS))
		for _, l := range o.Latency {
			fmt.Fprintf(w, " %.2f ms | %.2f ms |", ms(l.P50), ms(l.P95))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nThe same reopen in CPU time (user + system, every thread: what a busy machine does not inflate) and bytes; RSS split into anonymous (heap) and file pages (mapped snapshot), steady after the queries and after one more document indexed:\n\n")
	fmt.Fprint(w, "| turns | open CPU | open RSS anon + file | steady RSS anon + file | after a write anon + file |")
	for _, c := range rs[0].Reopen.QueryCPU {
		fmt.Fprintf(w, " %s CPU/query mean | p95 | alloc/query | page faults/query |", c.Mode)
	}
	fmt.Fprint(w, "\n|--:|--:|--:|--:|--:|")
	for range rs[0].Reopen.QueryCPU {
		fmt.Fprint(w, "--:|--:|--:|--:|")
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.Reopen == nil {
			continue
		}
		o := r.Reopen
		fmt.Fprintf(w, "| %d | %.2f s | %.0f + %.0f MiB | %.0f + %.0f MiB | %.0f + %.0f MiB |", r.Turns, o.OpenCPU.Seconds(),
			mib(o.OpenAnon), mib(o.OpenFile), mib(o.SteadyAnon), mib(o.SteadyFile), mib(o.WriteAnon), mib(o.WriteFile))
		for _, c := range o.QueryCPU {
			fmt.Fprintf(w, " %.2f ms | %.2f ms | %.0f KiB, %d allocs | %.0f (%.1f major) |", ms(c.Mean), ms(c.P95), float64(c.Bytes)/(1<<10), c.Allocs,
				c.MinorFaults+c.MajorFaults, c.MajorFaults)
		}
		fmt.Fprintln(w)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
