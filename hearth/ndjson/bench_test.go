package ndjson

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
)

// BenchmarkTokenLatency measures hearth's own latency from a model chunk
// arriving (the provider adapter calling onText) to a client having decoded
// it, over loopback TCP with the real ipc client. The model emits in lock
// step (the next chunk only after every client has the last), so the
// numbers are latency, not queueing. Reports p50 and p99 in microseconds.
func BenchmarkTokenLatency(b *testing.B) {
	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			benchTokenLatency(b, clients)
		})
	}
}

func benchTokenLatency(b *testing.B, nclients int) {
	model := newScriptModel()
	th := startHearth(b, b.TempDir(), func(c *testConfig) { c.Model = model; c.Log = nil })

	conns := make([]*ipc.Conn, nclients)
	for i := range conns {
		c, err := ipc.Dial(context.Background(), th.addr, ipc.DialOptions{Token: testToken})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}

	n := b.N
	sent := make([]time.Time, n)
	lat := make([][]time.Duration, nclients)
	var arrived sync.WaitGroup
	step := make(chan struct{}, nclients)

	model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		for i := range n {
			arrived.Add(nclients)
			sent[i] = time.Now()
			onText(strconv.Itoa(i) + ";")
			arrived.Wait()
		}
		return llm.Response{Text: "bench"}, nil
	}

	var readers sync.WaitGroup
	for ci, c := range conns {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				m, err := c.Recv(context.Background())
				if err != nil {
					return
				}
				switch m := m.(type) {
				case *ipc.Token:
					now := time.Now()
					for _, f := range strings.Split(strings.TrimSuffix(m.Content, ";"), ";") {
						i, _ := strconv.Atoi(f)
						lat[ci] = append(lat[ci], now.Sub(sent[i]))
						arrived.Done()
					}
				case *ipc.Done:
					step <- struct{}{}
					return
				}
			}
		}()
	}
	b.ResetTimer()
	if err := conns[0].Send(&ipc.Message{Content: "go"}); err != nil {
		b.Fatal(err)
	}
	for range nclients {
		<-step
	}
	b.StopTimer()
	readers.Wait()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		b.Fatal("no samples")
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// manyTools is a registry of n tools with realistic schemas.
type manyTools struct{ specs []tools.Spec }

func newManyTools(n int) *manyTools {
	mt := &manyTools{}
	for i := range n {
		mt.specs = append(mt.specs, tools.Spec{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: "A tool that does one well-described thing with its arguments.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"reason":{"type":"string"}},"required":["query","reason"]}`),
			Effect:      tools.ReadOnly, Permission: tools.Safe,
		})
	}
	return mt
}

func (m *manyTools) List(context.Context) ([]tools.Spec, error) { return m.specs, nil }
func (m *manyTools) Call(context.Context, string, json.RawMessage) (tools.Result, error) {
	return tools.Result{Text: "ok"}, nil
}

// BenchmarkTimeToFirstToken measures what hearth adds to a provider's own
// time to first token, with 20 tools registered: from a client sending a
// message to it receiving the first token, when the model answers at once.
// It includes the journal's fsync of the user turn, listing the tools and
// building the context. Reports p50 and p99 in microseconds.
func BenchmarkTimeToFirstToken(b *testing.B) {
	model := newScriptModel()
	th := startHearth(b, b.TempDir(), func(c *testConfig) { c.Model = model; c.Tools = newManyTools(20); c.Log = nil })
	c, err := ipc.Dial(context.Background(), th.addr, ipc.DialOptions{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var lat []time.Duration
	for b.Loop() {
		model.replies <- chunks("first", " and the rest")
		start := time.Now()
		if err := c.Send(&ipc.Message{Content: "hello"}); err != nil {
			b.Fatal(err)
		}
		first := true
		for {
			m, err := c.Recv(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := m.(*ipc.Token); ok && first {
				lat = append(lat, time.Since(start))
				first = false
			}
			if _, ok := m.(*ipc.Done); ok {
				break
			}
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
