package recallbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
)

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	Turns   int      // journal size
	Queries int      // timed queries (default 1,000)
	K       int      // results per query (default 10)
	Modes   []string // default hybrid
	Batch   int      // documents per embed and upsert (default 128)
	Seed    uint64
	Log     *slog.Logger // progress; nil discards
}

// ScaleResult is one size of the scale benchmark.
type ScaleResult struct {
	Turns     int           `json:"turns"`
	Embedder  string        `json:"embedder,omitempty"`
	IndexTime time.Duration `json:"index_time_ns"`
	EmbedTime time.Duration `json:"embed_time_ns"`
	// TurnsPerSec is indexing throughput, embedding included.
	TurnsPerSec float64 `json:"turns_per_sec"`
	Bytes       int64   `json:"bytes"`    // index on disk after Close
	PeakRSS     int64   `json:"peak_rss"` // VmHWM of the process, bytes; 0 where unknown
	K           int     `json:"k"`
	Queries     int     `json:"queries"`
	// Latency by mode.
	Latency []ModeLatency `json:"latency"`
}

// ModeLatency is one mode's query latency.
type ModeLatency struct {
	Mode string        `json:"mode"`
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	Max  time.Duration `json:"max_ns"`
}

// warmup queries run before the timed ones, so that the first touches of
// the index are not counted.
const warmup = 20

// RunScale indexes a synthetic journal of o.Turns turns into a new index
// in dir through the real indexing path, then times o.Queries queries in
// each mode. The index is closed, and dir measured, before it returns.
func RunScale(ctx context.Context, b Backend, dir string, o ScaleOptions) (*ScaleResult, error) {
	if b.Open == nil || b.Searcher == nil {
		return nil, errors.New("recallbench: backend needs Open and Searcher")
	}
	if o.Queries <= 0 {
		o.Queries = 1000
	}
	if o.K <= 0 {
		o.K = 10
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{ModeHybrid}
	}
	if o.Batch <= 0 {
		o.Batch = 128
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	idx, err := b.Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			idx.Close()
		}
	}()
	res := &ScaleResult{Turns: o.Turns, K: o.K, Queries: o.Queries}
	if b.Embedder != nil {
		res.Embedder = fmt.Sprintf("%s (%d dims)", b.Embedder.Name(), b.Embedder.Dim())
	}

	syn := NewSynth(SynthOptions{Turns: o.Turns, Seed: o.Seed})
	batch := make([]recall.Doc, 0, o.Batch)
	// Each turn carries the turns before it in its session as context, as
	// mnemo's indexer gives it.
	prev := recall.NewPreceding(recall.ContextTurns)
	session := ""
	start := time.Now()
	lastLog := start
	for done := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch = syn.Next(batch[:0], o.Batch)
		if len(batch) == 0 {
			break
		}
		for i := range batch {
			if batch[i].Session != session {
				session = batch[i].Session
				prev.Reset()
			}
			batch[i].Context = prev.Context()
			prev.Push(batch[i].Text)
		}
		embed, err := IndexDocs(ctx, idx, b.Embedder, batch, o.Batch)
		res.EmbedTime += embed
		if err != nil {
			return nil, err
		}
		done += len(batch)
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			log.Info("indexing", "done", done, "of", o.Turns, "elapsed", time.Since(start).Round(time.Second))
		}
	}
	res.IndexTime = time.Since(start)
	if s := res.IndexTime.Seconds(); s > 0 {
		res.TurnsPerSec = float64(o.Turns) / s
	}
	log.Info("indexed", "turns", o.Turns, "time", res.IndexTime.Round(time.Millisecond))

	queries := syn.Queries(o.Queries + warmup)
	at := syn.o.Start.Add(syn.o.Span)
	for _, mode := range o.Modes {
		search, err := b.Searcher(idx, mode)
		if err != nil {
			return nil, fmt.Errorf("%s searcher: %w", mode, err)
		}
		lat := make([]time.Duration, 0, o.Queries)
		for i, q := range queries {
			t0 := time.Now()
			if _, err := search(ctx, SearchQuery{Text: q, K: o.K, At: at}); err != nil {
				return nil, fmt.Errorf("%s search: %w", mode, err)
			}
			if i >= warmup {
				lat = append(lat, time.Since(t0))
			}
		}
		ml := ModeLatency{Mode: mode, P50: Percentile(lat, 50), P95: Percentile(lat, 95), Max: Percentile(lat, 100)}
		res.Latency = append(res.Latency, ml)
		log.Info("queried", "mode", mode, "p50", ml.P50, "p95", ml.P95)
	}

	res.PeakRSS, _ = PeakRSS() // 0 where /proc is missing
	closed = true
	if err := idx.Close(); err != nil {
		return nil, fmt.Errorf("close index: %w", err)
	}
	if res.Bytes, err = DirSize(dir); err != nil {
		return nil, err
	}
	return res, nil
}

// PeakRSS reads the process's peak resident set size (VmHWM) from
// /proc/self/status, in bytes.
func PeakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	defer f.Close()
	return parseVmHWM(f)
}

func parseVmHWM(f io.Reader) (int64, error) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("peak rss: bad VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak rss: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	return 0, errors.New("peak rss: no VmHWM in /proc/self/status")
}

// WriteScaleMarkdown prints scale results as a Markdown table, with the
// issue's hybrid p95 targets where they apply.
func WriteScaleMarkdown(out io.Writer, rs []*ScaleResult) error {
	w := bufio.NewWriter(out)
	if len(rs) == 0 {
		return w.Flush()
	}
	emb := "none (lexical only)"
	if rs[0].Embedder != "" {
		emb = rs[0].Embedder
	}
	fmt.Fprintf(w, "# Recall scale benchmark\n\nSynthetic journal; embedder: %s; top %d; %s timed queries per size after %d warm-up.\n\n",
		emb, rs[0].K, thousands(int64(rs[0].Queries)), warmup)
	cols := []string{"turns", "index time", "turns/s", "index size", "bytes/turn", "peak RSS"}
	for _, l := range rs[0].Latency {
		cols = append(cols, l.Mode+" p50", l.Mode+" p95")
	}
	cols = append(cols, "hybrid p95 target")
	table(w, cols)
	for _, r := range rs {
		cells := []string{
			thousands(int64(r.Turns)),
			seconds(r.IndexTime),
			thousands(int64(r.TurnsPerSec)),
			mib(r.Bytes),
			thousands(r.Bytes / int64(max(r.Turns, 1))),
			mib(r.PeakRSS),
		}
		for _, l := range r.Latency {
			cells = append(cells, millis(l.P50), millis(l.P95))
		}
		cells = append(cells, target(r))
		tableRow(w, cells)
	}
	return w.Flush()
}

// target is the hybrid p95 goal at this size and whether it is met.
func target(r *ScaleResult) string {
	var goal time.Duration
	switch {
	case r.Turns >= 1_000_000:
		goal = 50 * time.Millisecond
	case r.Turns >= 100_000:
		goal = 10 * time.Millisecond
	default:
		return "–"
	}
	for _, l := range r.Latency {
		if l.Mode != ModeHybrid {
			continue
		}
		verdict := "met"
		if l.P95 >= goal {
			verdict = "missed"
		}
		return fmt.Sprintf("< %d ms: %s", goal.Milliseconds(), verdict)
	}
	return fmt.Sprintf("< %d ms", goal.Milliseconds())
}

func mib(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
