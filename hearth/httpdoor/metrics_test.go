package httpdoor

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mnemo/mnemo/memory"
)

// scrape reads /metrics as the owner and parses its text.
func scrape(t *testing.T, th *testHearth) map[string]*dto.MetricFamily {
	t.Helper()
	resp := th.doWith(t, "GET", "/metrics", nil, testToken, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the counter's value, or the histogram's count, of the metric
// of fam whose labels include labels.
func value(fams map[string]*dto.MetricFamily, fam string, labels map[string]string) float64 {
	f := fams[fam]
	if f == nil {
		return -1
	}
	var sum float64
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		}
	}
	return sum
}

// TestMetricsAfterTraffic: known traffic (queries with and without hits,
// a wrong token, a chat turn, an MCP search), then /metrics parsed and
// its values checked.
func TestMetricsAfterTraffic(t *testing.T) {
	th := startHearth(t, func(tc *testConfig) {
		tc.Metrics = true
		tc.Hits = []memory.Hit{{ID: "01K", Kind: memory.KindKnowledge, Path: "knowledge/a.md", Text: "porto", Score: 1}}
	})
	for _, kinds := range [][]string{{"knowledge"}, {"knowledge"}, {"turn"}} {
		if resp := th.do(t, "POST", "/v1/query", map[string]any{"query": "porto", "kinds": kinds}); resp.StatusCode != 200 {
			t.Fatalf("query: %d", resp.StatusCode)
		}
	}
	if resp := th.doWith(t, "GET", "/v1/stats", nil, "wrong-token-0123456789", ""); resp.StatusCode != 401 {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	resp := th.do(t, "POST", "/v1/chat/completions", map[string]any{"model": "mnemo", "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
	cs, err := mcpConnect(t, th, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if e := callTool(t, cs, ToolMemorySearch, map[string]any{"query": "porto", "kinds": []string{"knowledge"}}, nil); e != "" {
		t.Fatal(e)
	}

	// The core's events reach the telemetry subscriber on its own
	// goroutine: wait for the reply's, with a deadline.
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; {
		fams = scrape(t, th)
		if value(fams, "mnemo_model_calls_total", nil) >= 1 || time.Now().After(deadline) {
			break
		}
		<-time.After(10 * time.Millisecond)
	}
	for _, c := range []struct {
		fam    string
		labels map[string]string
		want   float64
	}{
		{"mnemo_retrieval_searches_total", nil, 4},
		{"mnemo_retrieval_searches_hit_total", nil, 3},
		{"mnemo_auth_failures_total", map[string]string{"door": "http"}, 1},
		{"mnemo_request_duration_seconds", map[string]string{"door": "http", "route": "/v1/query", "status": "200"}, 3},
		{"mnemo_request_duration_seconds", map[string]string{"door": "http", "route": "/v1/stats", "status": "401"}, 1},
		{"mnemo_request_duration_seconds", map[string]string{"door": "http", "route": "/v1/chat/completions", "status": "200"}, 1},
		{"mnemo_model_calls_total", map[string]string{"model": "script-1", "outcome": "ok"}, 1},
		{"mnemo_model_tokens_total", map[string]string{"direction": "in"}, 3},
		{"mnemo_model_tokens_total", map[string]string{"direction": "out"}, 2},
		{"mnemo_tool_duration_seconds", map[string]string{"source": "mcp", "tool": ToolMemorySearch, "outcome": "ok"}, 1},
		{"mnemo_dropped_subscribers_total", nil, 0},
	} {
		if got := value(fams, c.fam, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.fam, c.labels, got, c.want)
		}
	}
	if n := value(fams, "mnemo_request_duration_seconds", map[string]string{"route": "/mcp"}); n < 1 {
		t.Errorf("no /mcp requests counted")
	}
}
