// Command scale times mnemo's recall on a synthetic journal of 10k, 100k
// and 1M turns: indexing throughput through the real indexing path, index
// size, peak RSS and hybrid query latency. Each size runs in its own
// process (this binary, re-executed), so that peak RSS is that size's.
//
//	go run ./bench/cmd/scale -sizes 10000,100000,1000000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mnemo/mnemo/bench/internal/backend"
	"github.com/mnemo/mnemo/bench/recallbench"
)

type config struct {
	sizes      []int
	queries    int
	k          int
	modes      []string
	vectors    string
	search     string
	batch      int
	seed       uint64
	dir        string
	jsonOut    string
	inProcess  bool
	noReopen   bool
	reuse      string // keep each size's index under here, and reuse one already there
	rssMap     bool   // print the resident set by mapping
	child      int    // >0: run this one size and print its JSON
	reopenDir  string // with child: reopen this index and print the reopenResult
	cpuProfile string // prefix of the reopen's CPU profiles (open, queries)
	args       []string
}

func main() {
	var cfg config
	sizes := flag.String("sizes", "10000,100000,1000000", "journal sizes in turns, comma-separated")
	modes := flag.String("modes", "hybrid", "modes to time, comma-separated (lexical, vector, hybrid)")
	flag.IntVar(&cfg.queries, "queries", 1000, "timed queries per size")
	flag.IntVar(&cfg.k, "k", 10, "results per query")
	flag.StringVar(&cfg.vectors, "vectors", "", "word-vector model file (default .cache/vectors/wink-sg100-100k.bin in the repository); lexical only when absent")
	flag.StringVar(&cfg.search, "search", "", "JSON object of recall.SearchOptions fields to override")
	flag.IntVar(&cfg.batch, "batch", 128, "turns per embed and upsert")
	flag.Uint64Var(&cfg.seed, "seed", 1, "journal seed")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the indexes (default the system's temporary directory)")
	flag.StringVar(&cfg.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.BoolVar(&cfg.inProcess, "inprocess", false, "run every size in this process (peak RSS is then cumulative)")
	flag.StringVar(&cfg.reuse, "reuse", "", "keep each size's index in this directory (<dir>/<size>) and, when one is there, only reopen it: compares two builds' open on one index")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write CPU profiles of each reopen to `PREFIX`-open-<size>.pprof and PREFIX-query-<size>.pprof")
	flag.BoolVar(&cfg.rssMap, "rssmap", false, "print each reopen's resident set by mapping (from /proc/self/smaps) to stderr, after the open and in the steady state")
	flag.BoolVar(&cfg.noReopen, "noreopen", false, "skip reopening each index in a fresh process (open time, steady RSS)")
	flag.IntVar(&cfg.child, "child", 0, "internal: run one size and print its result as JSON")
	flag.StringVar(&cfg.reopenDir, "reopen", "", "internal: with -child, reopen the index in this directory")
	verbose := flag.Bool("v", false, "log progress")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s), "_", ""))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "scale: -sizes: bad size %q\n", s)
			os.Exit(2)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.modes = append(cfg.modes, m)
		}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Args[1:], os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// run measures every size of cfg, each in a child process given args (this
// process's flags) plus -child, unless cfg.inProcess.
func run(ctx context.Context, cfg config, args []string, stdout io.Writer, log *slog.Logger) error {
	cfg.args = args
	if cfg.child > 0 && cfg.reopenDir != "" {
		res, err := reopen(ctx, cfg, cfg.reopenDir, cfg.child)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	if cfg.child > 0 {
		res, err := one(ctx, cfg, cfg.child, log)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	var results []sizeResult
	for _, n := range cfg.sizes {
		var res sizeResult
		var err error
		if cfg.inProcess {
			res, err = one(ctx, cfg, n, log)
		} else {
			res, err = inChild(ctx, n, args)
		}
		if err != nil {
			return fmt.Errorf("%d turns: %w", n, err)
		}
		results = append(results, res)
	}
	scale := make([]*recallbench.ScaleResult, len(results))
	for i, r := range results {
		scale[i] = r.ScaleResult
	}
	if cfg.jsonOut != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	if err := recallbench.WriteScaleMarkdown(stdout, scale); err != nil {
		return err
	}
	writeReopenMarkdown(stdout, results)
	return nil
}

// inChild runs one size in a new process of this binary, with args and
// -child set.
func inChild(ctx context.Context, n int, args []string) (sizeResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return sizeResult{}, fmt.Errorf("re-exec: %w", err)
	}
	args = append([]string{"-child", strconv.Itoa(n)}, args...)
	cmd := exec.CommandContext(ctx, exe, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return sizeResult{}, fmt.Errorf("child: %w", err)
	}
	var res sizeResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return sizeResult{}, fmt.Errorf("child output: %w", err)
	}
	return res, nil
}

// one indexes and times one journal size in this process, then reopens
// the index (in a fresh process unless cfg.inProcess).
func one(ctx context.Context, cfg config, n int, log *slog.Logger) (sizeResult, error) {
	var res sizeResult
	var dir string
	var err error
	if cfg.reuse != "" {
		dir = filepath.Join(cfg.reuse, strconv.Itoa(n))
		if _, err := os.Stat(filepath.Join(dir, "recall.idx")); err == nil {
			// Reuse: only the reopen is measured.
			res.ScaleResult = &recallbench.ScaleResult{Turns: n, K: cfg.k, Queries: cfg.queries}
		} else if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, err
		}
	} else {
		if dir, err = os.MkdirTemp(cfg.dir, "recallscale-*"); err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
	}
	if res.ScaleResult == nil {
		if res.ScaleResult, err = build(ctx, cfg, n, dir, log); err != nil {
			return res, err
		}
	}
	switch {
	case cfg.noReopen:
	case cfg.inProcess:
		res.Reopen, err = reopen(ctx, cfg, dir, n)
	default:
		res.Reopen, err = reopenChild(ctx, dir, n, cfg.args)
	}
	return res, err
}

// build indexes and times one journal size in dir.
func build(ctx context.Context, cfg config, n int, dir string, log *slog.Logger) (*recallbench.ScaleResult, error) {
	vecPath := cfg.vectors
	if vecPath == "" {
		vecPath = backend.DefaultVectors(backend.RepoRoot())
	}
	b, note, err := backend.New(backend.Options{Vectors: vecPath, Search: cfg.search})
	if err != nil {
		return nil, err
	}
	modes := cfg.modes
	if b.Embedder == nil {
		fmt.Fprintf(os.Stderr, "scale: %s\n", note)
		modes = []string{recallbench.ModeLexical}
	}
	return recallbench.RunScale(ctx, b, dir, recallbench.ScaleOptions{
		Turns:   n,
		Queries: cfg.queries,
		K:       cfg.k,
		Modes:   modes,
		Batch:   cfg.batch,
		Seed:    cfg.seed,
		Log:     log.With("size", n),
	})
}
