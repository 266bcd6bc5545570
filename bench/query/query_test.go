// Package query measures POST /v1/query through the real hearth binary
// and its HTTP door, over a memory root of 100,000 turns and 10,000 vault
// notes (make bench-query; not part of make test).
//
// The root is built once (the journal through journal.Append, the notes
// committed to the vault) under -query.dir and reused; the first start of
// hearth over it indexes it, later starts open the index. Then
// -query.clients clients post -query.requests queries between them, and
// the benchmark reports requests a second, p50 and p99 of the latency a
// client sees, and hearth's CPU time per request (user + system, from
// /proc), which does not depend on how loaded the machine is.
package query

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/bench/recallbench"
	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/daemon"
	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/vault"
)

var (
	dirFlag      = flag.String("query.dir", "", "memory root to build or reuse (default $TMPDIR/mnemo-bench-query-<turns>-<notes>)")
	turnsFlag    = flag.Int("query.turns", 100_000, "turns in the journal")
	notesFlag    = flag.Int("query.notes", 10_000, "notes in the vault")
	clientsFlag  = flag.Int("query.clients", 8, "concurrent clients")
	requestsFlag = flag.Int("query.requests", 4000, "queries, between all clients")
	vectorsFlag  = flag.String("query.vectors", "", "word vectors (wink-sg100-100k.bin) for hybrid recall; empty: keywords only")
	topKFlag     = flag.Int("query.k", 10, "top_k of each query")
	inProcess    = flag.Bool("query.inprocess", false, "run hearth in this process (daemon.Run), so that -cpuprofile sees it")
)

func BenchmarkQuery(b *testing.B) {
	dir := *dirFlag
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("mnemo-bench-query-%d-%d", *turnsFlag, *notesFlag))
	}
	if err := build(b, dir, *turnsFlag, *notesFlag); err != nil {
		b.Fatal(err)
	}
	env := []string{"MNEMO_EMBEDDER=none"}
	if *vectorsFlag != "" {
		env = []string{"MNEMO_EMBEDDER=wordvec", "MNEMO_VECTORS=" + *vectorsFlag}
	}
	var base string
	var cpuTime func() time.Duration
	if *inProcess {
		base, cpuTime = runInProcess(b, dir, env)
	} else {
		bin := filepath.Join(b.TempDir(), "hearth")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/mnemo/mnemo/cmd/hearth").CombinedOutput(); err != nil {
			b.Fatalf("build hearth: %v\n%s", err, out)
		}
		// At the default log level: a line a request is part of the cost.
		d := hearthtest.Start(b, bin, hearthtest.Options{Root: dir, Env: env, Args: []string{"-http", "127.0.0.1:0"}})
		defer d.Stop(b)
		// The HTTP door's line comes before the one Start waited for.
		base = "http://" + httpAddr(b, d.Log())
		cpuTime = func() time.Duration { return procCPU(b, d.Cmd.Process.Pid) }
	}
	t0 := time.Now()
	waitIndexed(b, base, *notesFlag > 0)
	b.Logf("index ready after %s", time.Since(t0).Round(time.Millisecond))

	queries := recallbench.NewSynth(recallbench.SynthOptions{Turns: *turnsFlag, Seed: 7}).Queries(*requestsFlag + 50)
	for _, q := range queries[:50] { // warm up
		if _, err := query(base, q); err != nil {
			b.Fatal(err)
		}
	}
	queries = queries[50:]
	for b.Loop() {
		cpu0 := cpuTime()
		lat := make([]time.Duration, len(queries))
		var next atomic.Int64
		var hits atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Pointer[error]
		start := time.Now()
		for range *clientsFlag {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(queries) {
						return
					}
					t := time.Now()
					n, err := query(base, queries[i])
					lat[i] = time.Since(t)
					if err != nil {
						failed.Store(&err)
						return
					}
					hits.Add(int64(n))
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		if e := failed.Load(); e != nil {
			b.Fatal(*e)
		}
		cpu := cpuTime() - cpu0
		slices.Sort(lat)
		pct := func(p float64) float64 {
			return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
		}
		b.ReportMetric(float64(len(queries))/wall.Seconds(), "req/s")
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(cpu.Microseconds())/float64(len(queries)), "cpu-µs/req")
		b.ReportMetric(float64(hits.Load())/float64(len(queries)), "hits/req")
		b.ReportMetric(0, "ns/op")
	}
}

// build makes the memory root in dir unless it is there already: turns
// synthetic turns (recallbench's generator) appended to the journal by
// many writers at once (the journal commits them in groups), and notes
// notes committed to the vault in one commit.
func build(b *testing.B, dir string, turns, notes int) error {
	marker := filepath.Join(dir, ".bench-query-built")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	os.RemoveAll(dir)
	ctx := context.Background()
	t0 := time.Now()
	root, err := memory.Open(ctx, dir, data.Defaults(), nil)
	if err != nil {
		return err
	}
	if _, err := vault.Open(ctx, dir, data.Vault(), nil); err != nil {
		return err
	}
	j, err := journal.Open(root.ThreadsDir(), journal.Options{})
	if err != nil {
		return err
	}
	docs := recallbench.NewSynth(recallbench.SynthOptions{Turns: turns, Seed: 1}).Next(nil, turns)
	work := make(chan recall.Doc)
	var wg sync.WaitGroup
	var appendErr atomic.Pointer[error]
	for range 64 {
		wg.Go(func() {
			for d := range work {
				role := memory.RoleUser
				if d.Role != memory.RoleUser {
					role = memory.RoleAgent
				}
				if _, err := j.Append(ctx, journal.Record{Role: role, Text: d.Text, Mode: memory.ModeText}); err != nil {
					appendErr.Store(&err)
				}
			}
		})
	}
	for _, d := range docs {
		work <- d
	}
	close(work)
	wg.Wait()
	if err := j.Close(); err != nil {
		return err
	}
	if e := appendErr.Load(); e != nil {
		return *e
	}
	b.Logf("journal of %d turns: %s", turns, time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	words := strings.Fields(docs[len(docs)/2].Text + " " + docs[len(docs)/3].Text + " garden lisbon compiler guitar marathon sourdough")
	paths := make([]string, notes)
	for i := range notes {
		w := func(k int) string { return words[(i*7+k*3)%len(words)] }
		paths[i] = fmt.Sprintf("knowledge/projects/n%05d.md", i)
		note := fmt.Sprintf("---\nid: %s\ntitle: Note %d about %s\ntype: project\nstatus: active\ntags: [%s]\nconfidence: 0.9\n---\n"+
			"The owner likes %s and %s.\n\n## Details\n\nNote %d: %s on weekends, %s in the evening.\n",
			vault.NewNoteID(), i, w(0), w(1), w(0), w(1), i, w(2), w(3))
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(paths[i])), []byte(note), 0o600); err != nil {
			return err
		}
	}
	if notes > 0 {
		if _, err := vault.Commit(ctx, dir, paths, "bench notes", vault.AuthorOwner); err != nil {
			return err
		}
	}
	b.Logf("vault of %d notes: %s", notes, time.Since(t0).Round(time.Millisecond))
	return os.WriteFile(marker, nil, 0o600)
}

var httpListening = regexp.MustCompile(`http_addr=(\S+)`)

func httpAddr(b *testing.B, log string) string {
	m := httpListening.FindStringSubmatch(log)
	if m == nil {
		b.Fatalf("no http_addr in hearth's log:\n%s", log)
	}
	return m[1]
}

// waitIndexed polls /v1/stats until recall is open and caught up with the
// journal, and a search finds notes (the vault's side is indexed).
func waitIndexed(b *testing.B, base string, notes bool) {
	deadline := time.Now().Add(30 * time.Minute)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if time.Now().After(deadline) {
			b.Fatal("the index was not ready in 30 minutes")
		}
		var st struct {
			Index *struct {
				Ready bool `json:"ready"`
			} `json:"index"`
		}
		if err := call(base, "GET", "/v1/stats", nil, &st); err != nil || st.Index == nil || !st.Index.Ready {
			continue
		}
		if !notes {
			return
		}
		var res struct {
			Snippets []struct {
				Citation string `json:"citation"`
			} `json:"snippets"`
		}
		// Every note says this; the first hits are the bench's notes
		// once the vault's side is indexed.
		err := call(base, "POST", "/v1/query", map[string]any{"query": "weekends evening owner likes", "kinds": []string{"knowledge"}, "top_k": 3}, &res)
		if err == nil && len(res.Snippets) > 0 && strings.HasPrefix(res.Snippets[0].Citation, "knowledge/projects/") {
			return
		}
	}
}

func query(base, q string) (int, error) {
	var res struct {
		Snippets []json.RawMessage `json:"snippets"`
	}
	err := call(base, "POST", "/v1/query", map[string]any{"query": q, "top_k": *topKFlag}, &res)
	return len(res.Snippets), err
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func call(base, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+hearthtest.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// procCPU is the user and system CPU time pid has used (/proc/pid/stat,
// in clock ticks of 10 ms: USER_HZ is 100 on Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// runInProcess runs hearth over dir in this process, its HTTP door on a
// free loopback port, until the benchmark ends; the CPU it reports is the
// whole process's (the clients' too).
func runInProcess(b *testing.B, dir string, env []string) (string, func() time.Duration) {
	vars := map[string]string{"APP_AUTH_TOKEN": hearthtest.Token, "MNEMO_CURATOR": "false"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	home := b.TempDir()
	cfg, err := config.Load(config.LoadOptions{Getenv: func(k string) string { return vars[k] },
		ConfigDir: filepath.Join(home, "config"), DataDir: filepath.Join(home, "data"), CacheDir: filepath.Join(home, "cache")})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	cfg.Addr.Value, cfg.HTTPAddr.Value, cfg.Root.Value = "127.0.0.1:0", httpAddr, dir
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, daemon.Runtime{Log: slog.New(slog.DiscardHandler), Ready: func(net.Addr) { close(ready) }})
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("hearth: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		b.Fatalf("hearth: %v", err)
	}
	return "http://" + httpAddr, func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
}
