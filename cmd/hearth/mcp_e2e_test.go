package main_test

import (
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// The real hearth with -http: the go-sdk MCP client lists /mcp's tools and
// lists the notes; a chat turn over HTTP; then /metrics, parsed, shows the
// turn's model call, the MCP requests and the Go runtime's metrics.
func TestMCPAndMetricsE2E(t *testing.T) {
	llm := llmtest.NewOpenAI(t, "sk-test")
	_, base := startHTTP(t, llm)
	client := &http.Client{Transport: bearer{hearthtest.Token}}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"memory_list", "memory_propose", "memory_read", "memory_search"}) {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "memory_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("memory_list: %v %+v", err, res)
	}

	llm.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "counted"}}})
	resp, err := client.Post(base+"/v1/chat/completions", "application/json",
		stringsReader(`{"model":"mnemo","messages":[{"role":"user","content":"count me"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}

	// The reply reaches telemetry on its own goroutine: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		calls := 0.0
		if f := fams["mnemo_model_calls_total"]; f != nil {
			for _, m := range f.Metric {
				calls += m.Counter.GetValue()
			}
		}
		if calls >= 1 {
			if fams["go_goroutines"] == nil || fams["mnemo_request_duration_seconds"] == nil {
				t.Fatalf("metrics missing: %v", slices.Sorted(mapsKeys(fams)))
			}
			mcpSeen := false
			for _, m := range fams["mnemo_request_duration_seconds"].Metric {
				for _, l := range m.Label {
					if l.GetName() == "route" && l.GetValue() == "/mcp" {
						mcpSeen = true
					}
				}
			}
			if !mcpSeen {
				t.Fatal("no /mcp requests in the metrics")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no model call counted")
		}
		<-time.After(20 * time.Millisecond)
	}

	// Someone without the token: 401, then 401 again or, while the
	// throttle the doors share makes the source wait, 429.
	for i, p := range []string{"/metrics", "/mcp"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.StatusCode; c != http.StatusUnauthorized && (i == 0 || c != http.StatusTooManyRequests) {
			t.Errorf("%s without a token: %d", p, resp.StatusCode)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func mapsKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }
