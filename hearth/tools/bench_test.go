package tools

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// BenchmarkMCPCall measures one Call of an echo tool end to end: reading
// gateway.json, finding the pooled session, the MCP round trip and the
// conversion of the result. It reports the median and 99th percentile.
func BenchmarkMCPCall(b *testing.B) {
	h := startHTTPServer(b)
	for _, bc := range []struct {
		name  string
		entry map[string]any
	}{
		{"http", httpEntry("bench", h.URL, nil)},
		{"stdio", stdioEntry(b, "bench", nil)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := newGateway(b)
			g.set(bc.entry)
			r := newTestRegistry(b, Options{GatewayPath: g.path})
			args := json.RawMessage(`{"text":"ping"}`)
			// Connect before measuring.
			if res, err := r.Call(b.Context(), "bench__echo", args); err != nil || res.IsError {
				b.Fatalf("warm-up call = %+v, %v", res, err)
			}
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := r.Call(b.Context(), "bench__echo", args)
				lat = append(lat, time.Since(start))
				if err != nil || res.IsError {
					b.Fatalf("Call = %+v, %v", res, err)
				}
			}
			slices.Sort(lat)
			us := func(q float64) float64 {
				return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3
			}
			b.ReportMetric(us(0.50), "p50-µs")
			b.ReportMetric(us(0.99), "p99-µs")
		})
	}
}
