package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// BenchmarkStartup1M measures how long the real hearth binary (built
// without the race detector) takes from exec to answering a handshake with
// history, and its resident memory then, over a journal of 1,000,000 turns
// in 1,000 daily shards. The journal is generated once and cached in the
// temp dir.
func BenchmarkStartup1M(b *testing.B) {
	const turns, perShard = 1_000_000, 1_000
	bin := filepath.Join(b.TempDir(), "hearth")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mnemo/mnemo/cmd/hearth").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	root := filepath.Join(os.TempDir(), "mnemo-bench-root-1M-v1")
	if _, err := os.Stat(filepath.Join(root, "threads", "done")); err != nil {
		os.RemoveAll(root)
		// Initialise the root first, so that its first commit holds the
		// defaults only, as it would for a journal grown over years.
		if _, err := memory.Open(context.Background(), root, data.Defaults(), nil); err != nil {
			b.Fatal(err)
		}
		if err := writeJournal(filepath.Join(root, "threads"), turns, perShard); err != nil {
			b.Fatal(err)
		}
	}

	var total time.Duration
	var rss, hwm int64
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-root", root, "-log-level", "info")
		cmd.Env = []string{"HOME=" + b.TempDir(), "APP_AUTH_TOKEN=" + token}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr := ""
		sc := bufio.NewScanner(stderr)
		for addr == "" && sc.Scan() {
			addr, _ = hearthtest.ListenAddr(sc.Text())
		}
		if addr == "" {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatal("hearth did not listen")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: token})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if n := len(c.History().Turns); n != 50 {
			b.Errorf("history has %d turns, want 50", n)
		}
		c.Close()
		r, h := procMem(cmd.Process.Pid)
		rss, hwm = max(rss, r), max(hwm, h)
		cmd.Process.Kill()
		go func() { // drain so the process can exit
			for sc.Scan() {
			}
		}()
		cmd.Wait()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
	b.ReportMetric(float64(rss)/(1<<20), "RSS-MB")
	b.ReportMetric(float64(hwm)/(1<<20), "peakRSS-MB")
}

// procMem returns VmRSS and VmHWM of pid in bytes.
func procMem(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// writeJournal writes turns records in the journal's on-disk format, as
// perShard records a day, then a marker file.
func writeJournal(dir string, turns, perShard int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	day := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	entropy := ulid.DefaultEntropy()
	for i := 0; i < turns; i += perShard {
		f, err := os.Create(filepath.Join(dir, day.Format("2006-01-02")+".jsonl"))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		enc := json.NewEncoder(w)
		for k := range perShard {
			ts := day.Add(time.Duration(k) * time.Minute)
			role := "user"
			if (i+k)%2 == 1 {
				role = "agent"
			}
			rec := journal.Record{
				ID:   ulid.MustNew(ulid.Timestamp(ts), entropy).String(),
				Role: role,
				Text: fmt.Sprintf("turn %d: a sentence or two of conversation, about as long as people usually type in a chat.", i+k),
				TS:   ts,
				Mode: "text",
			}
			if err := enc.Encode(rec); err != nil {
				f.Close()
				return err
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		day = day.AddDate(0, 0, 1)
	}
	return os.WriteFile(filepath.Join(dir, "done"), nil, 0o600)
}
