package hearth_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// standInCurator is the curator's model through the real OpenAI adapter
// and the stand-in server (which counts words as tokens): nothing to keep
// after each turn, and a summary at each flush.
type standInCurator struct {
	*llm.OpenAI
	srv *llmtest.Server
	mu  sync.Mutex
	n   int
}

func (m *standInCurator) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	reply := `{"ops":[],"questions":[]}`
	if req.Output != nil && req.Output.Name == "memory_flush" {
		m.mu.Lock()
		m.n++
		n := m.n
		m.mu.Unlock()
		b, _ := json.Marshal(map[string]any{"summary": strings.Repeat("The person talked about repainting the shed, its colour and when. ", 3) + "Flush " + string(rune('0'+n%10)) + ".", "ops": []any{}, "questions": []any{}})
		reply = string(b)
	}
	m.srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: reply}}})
	return m.OpenAI.Stream(ctx, req, onText)
}

// BenchmarkFlush is the flush pass's cost over a long conversation of
// ~100-token turns under a 300-token recent share (a flush every few
// turns), with the flush on and off: the reply path's time per turn
// (send to reply stored; the curator and its flush run after it, off the
// path), and per flush its model calls, tokens and wall time. Each turn
// waits until the one before is curated, so the worker is never behind.
func BenchmarkFlush(b *testing.B) {
	// A 900-token share holds about eight turns: there the low-water mark
	// (half the share) lets one flush cover three or four of them; under
	// the 300-token share the band between it and FlushAt is less than a
	// turn, so a flush still comes nearly every turn.
	wide := hearth.ContextBudget{Tokens: 3000, Shares: hearth.ContextShares{Recent: 30}}
	for _, tc := range []struct {
		name    string
		flushAt int
		budget  hearth.ContextBudget
	}{{"off", -1, flushBudget}, {"on", 0, flushBudget}, {"off-900", -1, wide}, {"on-900", 0, wide}} {
		b.Run(tc.name, func(b *testing.B) {
			v, j, _ := openVaultRootB(b)
			srv := llmtest.NewOpenAI(b, "sk-curator")
			model := &standInCurator{OpenAI: llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "curator", BaseURL: srv.BaseURL(), APIKey: "sk-curator"}, nil), srv: srv}
			curated := make(chan hearth.Curated, 4)
			var flushes []hearth.Flushed
			var fmu sync.Mutex
			h, err := hearth.New(hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second, Budget: tc.budget,
				Curator: &hearth.CuratorConfig{StateDir: b.TempDir(), Model: model, FlushAt: tc.flushAt,
					Observe: func(c hearth.Curated) { curated <- c },
					OnFlush: func(f hearth.Flushed) { fmu.Lock(); flushes = append(flushes, f); fmu.Unlock() }}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); h.Run(ctx) }()
			defer func() { cancel(); <-done }()
			sub, err := h.Subscribe(hearth.WatchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			replies := make(chan struct{}, 16)
			go sub.Run(ctx, func(evs []hearth.Event) error {
				for _, ev := range evs {
					if _, ok := ev.(*hearth.ReplyDone); ok {
						replies <- struct{}{}
					}
				}
				return nil
			})
			var reply time.Duration
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := h.Send("", longTurn(i)); err != nil {
					b.Fatal(err)
				}
				<-replies
				reply += time.Since(start)
				b.StopTimer()
				select {
				case <-curated:
				case <-time.After(time.Minute):
					b.Fatalf("turn %d not curated", i)
				}
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(reply.Microseconds())/1000/float64(b.N), "reply-ms/turn")
			hl := h.CuratorHealth()
			b.ReportMetric(float64(hl.Calls)/float64(b.N), "calls/turn")
			fmu.Lock()
			defer fmu.Unlock()
			if len(flushes) > 0 {
				var took time.Duration
				var in, out int64
				for _, f := range flushes {
					took += f.Took
					in += f.InputTokens
					out += f.OutputTokens
				}
				n := float64(len(flushes))
				b.ReportMetric(float64(len(flushes))/float64(b.N), "flushes/turn")
				b.ReportMetric(float64(in)/n, "in-tokens/flush")
				b.ReportMetric(float64(out)/n, "out-tokens/flush")
				b.ReportMetric(float64(took.Microseconds())/1000/n, "flush-ms")
			}
		})
	}
}
