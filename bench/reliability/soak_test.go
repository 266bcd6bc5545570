package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// soakClients stream every reply; they take turns to ask, one question in
// flight at a time (the conversation is one).
const (
	soakClients = 10
	soakChunks  = 20
	soakDelay   = 5 * time.Millisecond // between the stand-in's chunks
)

// TestSoak runs the real hearth for -soak (10 s by default) with ten
// clients streaming every reply of the stand-in model, and reports hearth's
// RSS and the chunk latency (the gap between two chunks of a reply at a
// client, the stand-in sending one every 5 ms; and the first chunk after a
// question) at each interval. It fails when a client is cut off, a turn
// fails, or hearth's RSS at the end is more than twice its first reading
// plus 64 MiB.
func TestSoak(t *testing.T) {
	total := *soakFor
	if total <= 0 {
		total = 10 * time.Second
	}
	every := *soakStep
	if every <= 0 {
		every = min(total/10, time.Minute)
	}
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := hearthtest.Start(t, hearthBin, hearthtest.Options{Root: root, Env: hearthtest.OpenAIEnv(model)})
	pid := d.Cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), total+time.Minute)
	defer cancel()
	m := &soakMeter{}
	conns := make([]*ipc.Conn, soakClients)
	for i := range conns {
		c, err := ipc.Dial(ctx, d.Addr, ipc.DialOptions{Token: hearthtest.Token, Client: fmt.Sprintf("soak-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	end := time.Now().Add(total)
	// The client whose turn it is to ask ends the soak for all (finish),
	// so that no client waits for a question nobody will ask.
	run, finish := context.WithCancel(ctx)
	defer finish()
	var wg sync.WaitGroup
	errs := make(chan error, soakClients)
	for i, c := range conns {
		wg.Go(func() {
			defer c.Close()
			if err := soakClient(run, finish, c, i, end, model, m); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				cancel()
			}
		})
	}

	var first, last int64
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	start := time.Now()
	t.Logf("soak: %d clients for %s, the stand-in streaming %d chunks %s apart; the machine is shared, so latencies are upper bounds", soakClients, total, soakChunks, soakDelay)
	report := func() {
		rss := rssKiB(t, pid)
		if first == 0 {
			first = rss
		}
		last = rss
		gaps, firsts, replies := m.take()
		t.Logf("%6s  rss %6.1f MiB  replies %4d  chunk gap p50 %5.1f ms p99 %6.1f ms  first chunk p50 %6.1f ms p99 %6.1f ms",
			time.Since(start).Round(time.Second), float64(rss)/1024, replies, ms(pct(gaps, 50)), ms(pct(gaps, 99)), ms(pct(firsts, 50)), ms(pct(firsts, 99)))
	}
	report()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-ticker.C:
			report()
		case <-done:
			waiting = false
		}
	}
	report()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if last > 2*first+64<<10 {
		t.Errorf("hearth's RSS grew from %d KiB to %d KiB", first, last)
	}
	d.Stop(t)
}

// soakClient reads every message hearth sends; after the n-th reply (n
// counted alike by every client) client n%soakClients asks the next
// question, until end: the client whose turn it is then calls finish
// instead, which ends every client's wait. It records the gaps between
// chunks and, for its own questions, the wait for the first chunk.
func soakClient(ctx context.Context, finish context.CancelFunc, c *ipc.Conn, i int, end time.Time, model *llmtest.Server, m *soakMeter) error {
	var chunks []llmtest.Chunk
	for range soakChunks {
		chunks = append(chunks, llmtest.Chunk{Text: "word ", Delay: soakDelay})
	}
	replies := 0
	var asked, prev time.Time
	ask := func() error {
		model.Enqueue(llmtest.Reply{Chunks: chunks})
		asked, prev = time.Now(), time.Time{}
		return c.Send(&ipc.Message{Content: fmt.Sprintf("question %d from client %d", replies, i)})
	}
	if i == 0 {
		if err := ask(); err != nil {
			return err
		}
	}
	for {
		msg, err := c.Recv(ctx)
		if err != nil {
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return nil // finished
			}
			return fmt.Errorf("recv after %d replies: %w", replies, err)
		}
		switch msg := msg.(type) {
		case *ipc.Token:
			now := time.Now()
			switch {
			case !prev.IsZero():
				m.gap(now.Sub(prev))
			case !asked.IsZero():
				m.first(now.Sub(asked))
				asked = time.Time{}
			}
			prev = now
		case *ipc.Done:
			replies++
			prev = time.Time{}
			if i == 0 {
				m.reply()
			}
			if replies%soakClients == i {
				if time.Now().After(end) {
					finish()
					return nil
				}
				if err := ask(); err != nil {
					return err
				}
			}
		case *ipc.Error:
			return fmt.Errorf("hearth: %s: %s", msg.Code, msg.Message)
		}
	}
}

// soakMeter collects the samples of one reporting interval.
type soakMeter struct {
	mu      sync.Mutex
	gaps    []time.Duration
	firsts  []time.Duration
	replies int
}

func (m *soakMeter) gap(d time.Duration) {
	m.mu.Lock()
	m.gaps = append(m.gaps, d)
	m.mu.Unlock()
}

func (m *soakMeter) first(d time.Duration) {
	m.mu.Lock()
	m.firsts = append(m.firsts, d)
	m.mu.Unlock()
}

func (m *soakMeter) reply() {
	m.mu.Lock()
	m.replies++
	m.mu.Unlock()
}

func (m *soakMeter) take() (gaps, firsts []time.Duration, replies int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gaps, firsts, replies = m.gaps, m.firsts, m.replies
	m.gaps, m.firsts, m.replies = nil, nil, 0
	return gaps, firsts, replies
}

// pct is the p-th percentile of ds (0 when empty).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssKiB is the resident set of process pid (Linux /proc; 0 elsewhere).
func rssKiB(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("no RSS: %v", err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
