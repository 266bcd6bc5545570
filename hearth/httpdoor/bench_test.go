package httpdoor

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/ndjson"
	"github.com/mnemo/mnemo/ipc"
)

// firstChunkModel streams one chunk, noting when, then waits for the
// client to have read it before finishing the reply.
type stamp struct{ at atomic.Int64 }

func firstChunk(s *stamp, read <-chan struct{}) replyFunc {
	return func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		s.at.Store(time.Now().UnixNano())
		onText("first")
		select {
		case <-read:
		case <-ctx.Done():
		}
		return llm.Response{Text: "first"}, nil
	}
}

// report puts p50 and p99 of the added latencies on the benchmark, and
// the process's CPU time per turn since cpu0 (cpuNow): client, door,
// core and stand-in model together, which a loaded machine does not
// change the way it changes latency.
func report(b *testing.B, lat []time.Duration, cpu0 time.Duration) {
	cpu := cpuNow() - cpu0
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/turn")
	b.ReportMetric(0, "ns/op")
}

// cpuNow is the user and system CPU time this process has used.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFirstByte measures what each door adds between the model's
// first chunk and the client's first byte of it: the core's publish, the
// door's subscription and write, loopback TCP and the client's read.
func BenchmarkFirstByte(b *testing.B) {
	for _, door := range []struct {
		name, path, body string
	}{
		{"engine-chat", "/engine/chat", `{"messages":[{"role":"user","content":"x"}],"metadata":{"correlation_id":"c"}}`},
		{"chat-completions-stream", "/v1/chat/completions", `{"model":"mnemo","stream":true,"messages":[{"role":"user","content":"x"}]}`},
	} {
		b.Run(door.name, func(b *testing.B) {
			th := startHearth(b, func(c *testConfig) { c.Quiet = true })
			var lat []time.Duration
			cpu0 := cpuNow()
			for b.Loop() {
				s, read := &stamp{}, make(chan struct{})
				th.model.replies <- firstChunk(s, read)
				req, _ := http.NewRequest("POST", th.url+door.path, strings.NewReader(door.body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				br := bufio.NewReader(resp.Body)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						b.Fatal(err)
					}
					if strings.Contains(line, "first") {
						lat = append(lat, time.Since(time.Unix(0, s.at.Load())))
						break
					}
				}
				close(read)
				for _, err := br.ReadString('\n'); err == nil; _, err = br.ReadString('\n') {
				}
				resp.Body.Close()
			}
			report(b, lat, cpu0)
		})
	}
	b.Run("ndjson", func(b *testing.B) {
		th := startHearth(b, func(c *testConfig) { c.Quiet = true })
		nd, err := ndjson.New(th.core, ndjson.Options{Token: testToken})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- nd.Serve(ctx, ln) }()
		defer func() { cancel(); <-served }()
		conn, err := ipc.Dial(ctx, ln.Addr().String(), ipc.DialOptions{Token: testToken})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		var lat []time.Duration
		cpu0 := cpuNow()
		for b.Loop() {
			s, read := &stamp{}, make(chan struct{})
			th.model.replies <- firstChunk(s, read)
			if err := conn.Send(&ipc.Message{Content: "x"}); err != nil {
				b.Fatal(err)
			}
			for {
				m, err := conn.Recv(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if tok, ok := m.(*ipc.Token); ok && strings.Contains(tok.Content, "first") {
					lat = append(lat, time.Since(time.Unix(0, s.at.Load())))
					close(read)
				}
				if _, ok := m.(*ipc.Done); ok {
					break
				}
			}
		}
		report(b, lat, cpu0)
	})
}

// flushDiscard is a ResponseWriter that keeps nothing and can flush.
type flushDiscard struct{ h http.Header }

func (w *flushDiscard) Header() http.Header         { return w.h }
func (w *flushDiscard) Write(p []byte) (int, error) { return len(p), nil }
func (w *flushDiscard) WriteHeader(int)             {}
func (w *flushDiscard) Flush()                      {}

// BenchmarkSSEEvent is the door's own CPU for one streamed chunk: framing
// and encoding the event and handing it to the ResponseWriter, flushed
// (the network is not in it).
func BenchmarkSSEEvent(b *testing.B) {
	for _, tc := range []struct {
		name string
		send func(s *sse) error
	}{
		{"engine-text-delta", func(s *sse) error { return s.event("text-delta", textDelta{Content: "a chunk of the reply"}) }},
		{"openai-chunk", func(s *sse) error {
			return s.data(chatCompletion{ID: "chatcmpl-0123456789abcdef01234567", Object: "chat.completion.chunk", Created: 1764150000, Model: "mnemo",
				Choices: []chatChoice{{Delta: &assistantOutput{Content: ptr("a chunk of the reply")}}}, RequestID: "req_0123456789abcdef01234567"})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r, _ := http.NewRequest("POST", "/", nil)
			s := startSSE(&call{w: &flushDiscard{h: http.Header{}}, r: r, id: "req_x"})
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.send(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
