// Command recall runs mnemo's retrieval benchmark: LoCoMo (read in place,
// never copied into the project) or any dataset in the neutral JSONL form
// of bench/README.md, indexed through the real indexing path into the
// embedded index and searched with recall.Searcher in lexical, vector and
// hybrid modes. It prints a Markdown table; -json writes the numbers.
//
//	go run ./bench/cmd/recall                 # LoCoMo from $MNEMO_LOCOMO or ../shared/bench/locomo
//	go run ./bench/cmd/recall -data my.jsonl  # a neutral dataset
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mnemo/mnemo/bench/internal/backend"
	"github.com/mnemo/mnemo/bench/recallbench"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/recall"
)

// contextTurns maps the -context flag to recallbench.Options.ContextTurns,
// where 0 means the default and a negative number none.
func contextTurns(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// config is what the flags say.
type config struct {
	data       string // dataset path; "" means the default LoCoMo location
	ks         []int
	modes      []string
	vectors    string
	jsonOut    string
	perQuery   bool
	separate   *[]string // nil: the dataset's own
	search     string    // JSON overrides of recall.SearchOptions
	questionAt string    // LoCoMo: "" or "last-session"
	batch      int
	tmp        string
	maxLine    int
	groups     int  // >0: only the first groups
	context    int  // preceding turns as each document's context; 0: none
	embedCtx   bool // embed text and context, not text alone
	// archetype is the archetype file entity expansion uses; "" is off.
	archetype string
}

func main() {
	var cfg config
	ks := flag.String("k", "5,10,25,50", "cutoffs to score, comma-separated; the search depth is the largest")
	modes := flag.String("modes", "lexical,vector,hybrid", "retrieval modes, comma-separated")
	separate := flag.String("separate", "", `categories scored apart from the overall row, comma-separated ("-" for none; default: the dataset's, LoCoMo "5")`)
	flag.StringVar(&cfg.data, "data", "", "dataset: LoCoMo's locomo10.json, a neutral .jsonl file or a directory of them (default $MNEMO_LOCOMO, else ../shared/bench/locomo/locomo10.json beside the repository)")
	flag.StringVar(&cfg.vectors, "vectors", "", "word-vector model file (default .cache/vectors/wink-sg100-100k.bin in the repository); lexical only when absent")
	flag.StringVar(&cfg.jsonOut, "json", "", `also write the results as JSON to this file ("-" for stdout, instead of the table)`)
	flag.BoolVar(&cfg.perQuery, "per-query", false, "include every query's ranking in the JSON")
	flag.StringVar(&cfg.search, "search", "", `JSON object of recall.SearchOptions fields to override, e.g. '{"MMR":0}' (for experiments)`)
	flag.StringVar(&cfg.questionAt, "question-date", "", `LoCoMo questions carry no date; "last-session" dates each at its conversation's last session`)
	flag.IntVar(&cfg.batch, "batch", 128, "documents per embed and upsert")
	flag.StringVar(&cfg.tmp, "tmp", "", "directory for the per-conversation indexes (default the system's)")
	flag.IntVar(&cfg.maxLine, "max-line", recallbench.DefaultMaxLine, "longest JSONL line accepted, in bytes")
	flag.IntVar(&cfg.groups, "groups", 0, "only the first N groups (conversations), for quick runs")
	flag.IntVar(&cfg.context, "context", recall.ContextTurns, "preceding turns of the same session indexed as each document's retrieval context (recall.Doc.Context); 0 for none")
	flag.BoolVar(&cfg.embedCtx, "embed-context", false, "embed each document's text and context rather than its text alone (mnemo's indexer embeds the text)")
	entities := flag.Bool("entities", false, "entity expansion: search a query naming people, places or things again with the names of related ones, fused at the archetype's weight (data/vault/config/archetype.yml unless -archetype)")
	flag.StringVar(&cfg.archetype, "archetype", "", "archetype file for -entities (default the companion archetype in data/vault)")
	verbose := flag.Bool("v", false, "log progress")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if cfg.ks, err = parseInts(*ks); err != nil {
		fmt.Fprintln(os.Stderr, "recall: -k:", err)
		os.Exit(2)
	}
	cfg.modes = splitList(*modes)
	if *entities && cfg.archetype == "" {
		cfg.archetype = filepath.Join(backend.RepoRoot(), "data", "vault", filepath.FromSlash(graph.ArchetypeFile))
	}
	if *separate != "" {
		s := splitList(*separate)
		if *separate == "-" {
			s = []string{}
		}
		cfg.separate = &s
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr, log); err != nil {
		fmt.Fprintln(os.Stderr, "recall:", err)
		os.Exit(1)
	}
}

// run loads the dataset and the embedder, runs the benchmark and prints
// it. A missing default dataset is a skip, not an error.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer, log *slog.Logger) error {
	root := backend.RepoRoot()
	path, explicit := dataPath(cfg.data, root)
	if _, err := os.Stat(path); err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "recall: no dataset at %s (set MNEMO_LOCOMO or -data): skipping\n", path)
			return nil
		}
		return fmt.Errorf("dataset: %w", err)
	}
	ds, note, err := loadDataset(path, cfg)
	if err != nil {
		return err
	}
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	if cfg.separate != nil {
		ds.Separate = *cfg.separate
	}
	if cfg.groups > 0 && cfg.groups < len(ds.Groups) {
		ds.Groups = ds.Groups[:cfg.groups]
		notes = append(notes, fmt.Sprintf("Only the first %d groups.", cfg.groups))
	}

	vecPath := cfg.vectors
	if vecPath == "" {
		vecPath = backend.DefaultVectors(root)
	}
	b, _, err := backend.New(backend.Options{Vectors: vecPath, Search: cfg.search})
	if err != nil {
		return err
	}
	modes := cfg.modes
	if b.Embedder == nil {
		var kept []string
		for _, m := range modes {
			if m == recallbench.ModeLexical {
				kept = append(kept, m)
			}
		}
		if len(kept) < len(modes) {
			notes = append(notes, fmt.Sprintf("No word vectors at %s: lexical only (bench/README.md says how to build them).", vecPath))
		}
		if len(kept) == 0 {
			fmt.Fprintln(stderr, "recall: no word vectors and no lexical mode requested: nothing to run")
			return nil
		}
		modes = kept
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "recall:", n)
	}

	var arch *graph.Archetype
	if cfg.archetype != "" {
		b, err := os.ReadFile(cfg.archetype)
		if err != nil {
			return fmt.Errorf("archetype: %w", err)
		}
		a, err := graph.ParseArchetype(b)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.archetype, err)
		}
		arch = &a
		notes = append(notes, fmt.Sprintf("Entity expansion on: archetype %s, %d related names per entity at weight %g.", a.Name, a.Context.Expansion.Related, a.Context.Expansion.Weight))
	}
	res, err := recallbench.Run(ctx, ds, b, recallbench.Options{
		Entities:     arch,
		Modes:        modes,
		Ks:           cfg.ks,
		Batch:        cfg.batch,
		TempDir:      cfg.tmp,
		PerQuery:     cfg.perQuery,
		ContextTurns: contextTurns(cfg.context),
		EmbedContext: cfg.embedCtx,
		Log:          log,
	})
	if err != nil {
		return err
	}
	res.Notes = notes

	if cfg.jsonOut == "-" {
		return recallbench.WriteJSON(stdout, res)
	}
	if cfg.jsonOut != "" {
		if err := writeFile(cfg.jsonOut, func(w io.Writer) error { return recallbench.WriteJSON(w, res) }); err != nil {
			return err
		}
	}
	return recallbench.WriteMarkdown(stdout, res)
}

// dataPath is -data, else $MNEMO_LOCOMO, else LoCoMo beside the
// repository; explicit is false for the last, whose absence is a skip.
func dataPath(flagPath, root string) (path string, explicit bool) {
	if flagPath != "" {
		return flagPath, true
	}
	if env := os.Getenv("MNEMO_LOCOMO"); env != "" {
		return env, false
	}
	return filepath.Join(root, "..", "shared", "bench", "locomo", "locomo10.json"), false
}

// loadDataset reads LoCoMo (a JSON array) or the neutral JSONL form (a
// file of objects, or a directory).
func loadDataset(path string, cfg config) (*recallbench.Dataset, string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("dataset: %w", err)
	}
	if fi.IsDir() {
		ds, err := recallbench.ReadPath(path, recallbench.ReadOptions{MaxLine: cfg.maxLine})
		return ds, "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	first, err := firstByte(br)
	if err != nil {
		return nil, "", fmt.Errorf("dataset %s: %w", path, err)
	}
	if first != '[' {
		f.Close()
		ds, err := recallbench.ReadPath(path, recallbench.ReadOptions{MaxLine: cfg.maxLine})
		return ds, "", err
	}
	ds, st, err := recallbench.ReadLoCoMo(br)
	if err != nil {
		return nil, "", err
	}
	if cfg.questionAt == "last-session" {
		dateAtLastSession(ds)
	} else if cfg.questionAt != "" {
		return nil, "", fmt.Errorf("-question-date %q: want \"\" or \"last-session\"", cfg.questionAt)
	}
	docs, queries := ds.Counts()
	note := fmt.Sprintf("LoCoMo: %d conversations, %d turns, %d of %d questions scored (%d evidence ids matched no turn; %d questions left without gold skipped).",
		len(ds.Groups), docs, queries, st.Questions, st.DroppedEvidence, st.SkippedQuestions)
	if cfg.questionAt == "last-session" {
		note += " Questions dated at their conversation's last session."
	}
	return ds, note, nil
}

// dateAtLastSession dates every question at the last turn of its
// conversation, when the questions were asked.
func dateAtLastSession(ds *recallbench.Dataset) {
	for _, g := range ds.Groups {
		var last recallbench.Doc
		for _, d := range g.Docs {
			if d.TS.After(last.TS) {
				last = d
			}
		}
		for i := range g.Queries {
			g.Queries[i].Date = last.TS
		}
	}
}

// firstByte returns the first byte that is not JSON whitespace, unread.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return 0, errors.New("empty file")
		}
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, br.UnreadByte()
		}
	}
}

func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number: %w", f, err)
		}
		if n < 1 {
			return nil, fmt.Errorf("cutoff %d is below 1", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no cutoffs")
	}
	return out, nil
}
