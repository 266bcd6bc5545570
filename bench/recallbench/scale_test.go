package recallbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/recall"
)

func TestSynth(t *testing.T) {
	const n = 5000
	start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	span := 3 * 365 * 24 * time.Hour
	a := NewSynth(SynthOptions{Turns: n, Seed: 7})
	var docs []recall.Doc
	for {
		before := len(docs)
		docs = a.Next(docs, 333)
		if len(docs) == before {
			break
		}
	}
	if len(docs) != n {
		t.Fatalf("got %d turns, want %d", len(docs), n)
	}
	ids := map[string]bool{}
	for i, d := range docs {
		if ids[d.ID] {
			t.Errorf("turn %d: duplicate id %s", i, d.ID)
		}
		ids[d.ID] = true
		if strings.TrimSpace(d.Text) == "" || d.Kind != recall.KindTurn || d.Session == "" {
			t.Errorf("turn %d: %+v", i, d)
		}
		if i > 0 && !d.TS.After(docs[i-1].TS) {
			t.Errorf("turn %d: ts %v not after %v", i, d.TS, docs[i-1].TS)
		}
		if d.TS.Before(start) || !d.TS.Before(start.Add(span)) {
			t.Errorf("turn %d: ts %v outside the span", i, d.TS)
		}
		if i > 0 && d.ID <= docs[i-1].ID {
			t.Errorf("turn %d: id %s does not sort after %s", i, d.ID, docs[i-1].ID)
		}
	}
	if first, last := docs[0].TS, docs[n-1].TS; last.Sub(first) < span*9/10 {
		t.Errorf("turns span %v, want about %v", last.Sub(first), span)
	}

	// Deterministic per seed.
	b := NewSynth(SynthOptions{Turns: n, Seed: 7})
	again := b.Next(nil, n)
	if diff := cmp.Diff(docs, again); diff != "" {
		t.Errorf("same seed, different journal (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(a.Queries(10), b.Queries(10)); diff != "" {
		t.Errorf("same seed, different queries (-first +second):\n%s", diff)
	}
	other := NewSynth(SynthOptions{Turns: n, Seed: 8}).Next(nil, 1)
	if other[0].Text == docs[0].Text {
		t.Errorf("seeds 7 and 8 give the same first turn %q", docs[0].Text)
	}
}

func TestSynthZipf(t *testing.T) {
	// Word frequencies follow the vocabulary's ranks: the most frequent
	// 100 words make about 56% of the text, and the most frequent word
	// is far more frequent than the 100th.
	vocab := vocabulary()
	rank := map[string]int{}
	for i, w := range vocab {
		rank[w] = i
	}
	count := make([]int, len(vocab))
	total := 0
	for _, d := range NewSynth(SynthOptions{Turns: 20000, Seed: 1}).Next(nil, 20000) {
		for _, w := range strings.FieldsFunc(strings.ToLower(d.Text), func(r rune) bool { return strings.ContainsRune(" ,.!?", r) }) {
			if r, ok := rank[w]; ok {
				count[r]++
				total++
			}
		}
	}
	top := 0
	for _, c := range count[:100] {
		top += c
	}
	if share := float64(top) / float64(total); share < 0.50 || share > 0.62 {
		t.Errorf("top-100 share %.3f, want about 0.56", share)
	}
	if count[0] < 20*count[99] {
		t.Errorf("rank 1 seen %d times, rank 100 %d: not Zipf-like", count[0], count[99])
	}
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{"linux", "Name:\tbench\nVmPeak:\t  900 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n", 12345 << 10, false},
		{"missing", "Name:\tbench\n", 0, true},
		{"bad unit", "VmHWM:\t 12 MB\n", 0, true},
		{"bad number", "VmHWM:\t 1x2 kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmHWM(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseVmHWM = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestRunScale(t *testing.T) {
	res, err := RunScale(context.Background(), memBackend(hashEmbedder{dim: 32}), t.TempDir(),
		ScaleOptions{Turns: 200, Queries: 25, K: 5, Modes: AllModes(), Batch: 64, Seed: 3})
	if err != nil {
		t.Fatalf("RunScale: %v", err)
	}
	if res.Turns != 200 || res.Queries != 25 || res.K != 5 || res.Embedder != "hash (32 dims)" {
		t.Errorf("result header: %+v", res)
	}
	if res.IndexTime <= 0 || res.TurnsPerSec <= 0 || res.Bytes <= 0 {
		t.Errorf("index: time %v, %v turns/s, %d bytes; want all positive", res.IndexTime, res.TurnsPerSec, res.Bytes)
	}
	var modes []string
	for _, l := range res.Latency {
		modes = append(modes, l.Mode)
		if l.P50 <= 0 || l.P95 < l.P50 || l.Max < l.P95 {
			t.Errorf("%s latency p50 %v p95 %v max %v", l.Mode, l.P50, l.P95, l.Max)
		}
	}
	if diff := cmp.Diff(AllModes(), modes); diff != "" {
		t.Errorf("modes mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteScaleMarkdownGolden(t *testing.T) {
	lat := func(p50, p95 time.Duration) []ModeLatency {
		return []ModeLatency{{Mode: ModeHybrid, P50: p50, P95: p95, Max: 2 * p95}}
	}
	rs := []*ScaleResult{
		{Turns: 10_000, Embedder: "wordvec:test (100 dims)", IndexTime: 800 * time.Millisecond, TurnsPerSec: 12500, Bytes: 6 << 20, PeakRSS: 80 << 20, K: 10, Queries: 1000, Latency: lat(300*time.Microsecond, 900*time.Microsecond)},
		{Turns: 100_000, Embedder: "wordvec:test (100 dims)", IndexTime: 9 * time.Second, TurnsPerSec: 11111, Bytes: 60 << 20, PeakRSS: 300 << 20, K: 10, Queries: 1000, Latency: lat(2*time.Millisecond, 6*time.Millisecond)},
		{Turns: 1_000_000, Embedder: "wordvec:test (100 dims)", IndexTime: 100 * time.Second, TurnsPerSec: 10000, Bytes: 600 << 20, PeakRSS: 2 << 30, K: 10, Queries: 1000, Latency: lat(30*time.Millisecond, 61*time.Millisecond)},
	}
	var buf bytes.Buffer
	if err := WriteScaleMarkdown(&buf, rs); err != nil {
		t.Fatalf("WriteScaleMarkdown: %v", err)
	}
	golden(t, "scale.golden.md", buf.Bytes())
}
