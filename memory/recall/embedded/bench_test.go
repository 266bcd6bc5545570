package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/recalltest"
)

// benchVersion names the cached benchmark indexes; bump it when the
// generator changes (the file format version is part of the name too).
const benchVersion = 1

const benchDim = 100

// buildInfo is kept next to a cached benchmark index.
type buildInfo struct {
	Docs    int
	Seconds float64
}

// benchIndex opens the synthetic index of n docs, building it under
// os.TempDir on first use. It reports how long the build took (then or
// when the cache was made) and how long this open took.
func benchIndex(b *testing.B, n int) (*Index, buildInfo, time.Duration) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("mnemo-recall-bench-g%d-f%d-%d", benchVersion, version, n))
	infoPath := filepath.Join(dir, "build.json")
	var info buildInfo
	if raw, err := os.ReadFile(infoPath); err == nil && json.Unmarshal(raw, &info) == nil && info.Docs == n {
		t0 := time.Now()
		ix, err := Open(dir, Options{Dim: benchDim})
		if err == nil {
			return ix, info, time.Since(t0)
		}
		b.Logf("cached index unusable, rebuilding: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	ix, err := Open(dir, Options{Dim: benchDim})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	syn := recalltest.NewSynth(1)
	emb := recalltest.NewHashEmbedder(benchDim)
	const batch = 1000
	docs := make([]recall.Doc, 0, batch)
	texts := make([]string, 0, batch)
	t0 := time.Now()
	for i := 0; i < n; i += batch {
		docs, texts = docs[:0], texts[:0]
		for range min(batch, n-i) {
			d := syn.Next()
			docs = append(docs, d)
			texts = append(texts, d.Text)
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.Upsert(ctx, docs, vecs); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.Flush(); err != nil {
		b.Fatal(err)
	}
	info = buildInfo{Docs: n, Seconds: time.Since(t0).Seconds()}
	raw, _ := json.Marshal(info)
	if err := os.WriteFile(infoPath, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	return ix, info, 0
}

func benchSizes(b *testing.B) []int {
	sizes := []int{10_000, 100_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	if s := os.Getenv("MNEMO_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("MNEMO_BENCH_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	return sizes
}

func rssBytes() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// latencies records per-query times and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	pct := func(p float64) float64 {
		return float64(l[min(len(l)-1, int(p*float64(len(l))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.95), "p95-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkQuery measures queries over synthetic journals of 10k, 100k
// and 1M turns (1M is skipped with -short; MNEMO_BENCH_SIZES=10000,… picks
// sizes). Indexes are cached under os.TempDir. Per size it reports the
// build throughput, the load time, the heap and RSS after loading, then
// p50/p95 latency for hybrid search (recall.Searcher over this index with
// a deterministic hash embedder), lexical only and vector only.
func BenchmarkQuery(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ix, info, load := benchIndex(b, n)
			defer ix.Close()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			st := ix.Stats()
			b.Run("build", func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(float64(info.Docs)/info.Seconds, "build-docs/s")
				if load > 0 {
					b.ReportMetric(float64(n)/load.Seconds(), "load-docs/s")
				}
				b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
				b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
				b.ReportMetric(float64(st.FileBytes)/(1<<20), "file-MB")
				b.ReportMetric(0, "ns/op")
			})
			syn := recalltest.NewSynth(7)
			queries := make([]string, 500)
			for i := range queries {
				queries[i] = syn.Query()
			}
			emb := recalltest.NewHashEmbedder(benchDim)
			qvecs, err := emb.Embed(ctx, queries)
			if err != nil {
				b.Fatal(err)
			}
			run := func(name string, fn func(i int) error) {
				b.Run(name, func(b *testing.B) {
					var lat latencies
					i := 0
					for b.Loop() {
						t0 := time.Now()
						if err := fn(i % len(queries)); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
						i++
					}
					lat.report(b)
				})
			}
			searcher := &recall.Searcher{Index: ix, Embedder: emb}
			run("hybrid", func(i int) error {
				_, err := searcher.Search(ctx, recall.Query{Text: queries[i], K: 10})
				return err
			})
			run("lexical", func(i int) error {
				_, err := ix.Lexical(ctx, queries[i], 100, recall.Filter{})
				return err
			})
			run("vector", func(i int) error {
				_, err := ix.Vector(ctx, qvecs[i], 100, recall.Filter{})
				return err
			})
			run("lexical-session", func(i int) error {
				_, err := ix.Lexical(ctx, queries[i], 100, recall.Filter{Session: "conv-7"})
				return err
			})
		})
	}
}
