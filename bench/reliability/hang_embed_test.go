package reliability

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/internal/nettest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/embed/embedtest"
)

// hangHealth asks hearth for its health report.
func hangHealth(t *testing.T, c *ipc.Conn) *ipc.HealthReport {
	t.Helper()
	return hangHealthy(t, c, "health")
}

// hangSearch asks hearth's memory for query and returns the results,
// failing on an error or after limit.
func hangSearch(t *testing.T, c *ipc.Conn, query, ref string, limit time.Duration) (*ipc.SearchResults, time.Duration) {
	t.Helper()
	start := time.Now()
	hangSend(t, c, &ipc.Search{Query: query, Ref: ref})
	m := hangAwait(t, c, limit, "search "+ref, func(m ipc.Msg) bool { return refOfHang(m) == ref })
	r, ok := m.(*ipc.SearchResults)
	if !ok {
		t.Fatalf("search %s: %T %+v, want results", ref, m, m)
	}
	return r, time.Since(start)
}

// refOfHang is the ref of a search's answer.
func refOfHang(m ipc.Msg) string {
	switch m := m.(type) {
	case *ipc.SearchResults:
		return m.Ref
	case *ipc.Error:
		return m.Ref
	}
	return ""
}

func hangFound(r *ipc.SearchResults, text string) bool {
	return slices.ContainsFunc(r.Results, func(h ipc.SearchHit) bool { return strings.Contains(h.Turn.Content, text) })
}

// hangEmbedded reports whether the embedder was asked for text.
func hangEmbedded(s *embedtest.Server, text string) bool {
	return slices.ContainsFunc(s.Requests(), func(r embedtest.Request) bool {
		return r.Status == http.StatusOK && slices.Contains(r.Input, text)
	})
}

// An HTTP embedder (OpenAI-compatible) that hangs or dies: turns are
// answered all the same (the memory block waits 300 ms at most), health
// answers, a search answers from keywords (the query's embedding gets
// half the search's time), and once the embedder is back the indexer
// embeds what it missed. SIGTERM while the embedder hangs ends hearth at
// once: nothing waits on the indexer.
func TestEmbedderHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	const key = "ek-test-0123456789"
	for _, tc := range []struct {
		name         string
		fault, cured func(g *nettest.Gate)
		// the search answers within; the wire's search timeout is 10 s
		within time.Duration
	}{
		{"hangs", (*nettest.Gate).Hang, (*nettest.Gate).Resume, 10 * time.Second},
		{"dies", (*nettest.Gate).Down, (*nettest.Gate).Up, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := embedtest.NewOpenAI(embedtest.Config{APIKey: key})
			srv := httptest.NewServer(emb)
			t.Cleanup(srv.Close)
			g := nettest.NewGate(t, srv.Listener.Addr().String())
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, append(hearthtest.OpenAIEnv(model), "MNEMO_EMBEDDER=openai", "MNEMO_EMBED_MODEL=tiny", "MNEMO_EMBED_DIM=8",
				"MNEMO_EMBED_BASE_URL="+g.URL()+"/v1", "MNEMO_EMBED_API_KEY="+key))
			c := dialHung(t, d)
			const said = "we adopted a puppy called Biscuit"
			m, _ := hangAsk(t, c, said, "m1", 30*time.Second)
			hangReply(t, m, "echo: "+said)
			hangWait(t, "the first turn indexed", func() bool { return hangEmbedded(emb, "echo: "+said) })

			tc.fault(g)
			const asked = "what do you remember about the garden"
			m, took := hangAsk(t, c, asked, "m2", 30*time.Second)
			hangReply(t, m, "echo: "+asked)
			if took > 8*time.Second {
				t.Errorf("a turn took %v with the embedder down, want the memory block's 300 ms bound to keep it short", took)
			}
			h := hangHealth(t, c)
			if h.Index == nil || h.Index.Unavailable {
				t.Errorf("health's index during the fault: %+v, want recall open", h.Index)
			}
			r, took := hangSearch(t, c, "puppy Biscuit", "s1", 15*time.Second)
			if !hangFound(r, said) {
				t.Errorf("search during the fault: %+v, want the keyword match %q", r.Results, said)
			}
			if took > tc.within {
				t.Errorf("search took %v during the fault, want under %v", took, tc.within)
			}
			t.Logf("turn and search during the fault: search answered in %v", took.Round(time.Millisecond))
			if hangEmbedded(emb, asked) {
				t.Error("the embedder answered during the fault")
			}

			tc.cured(g)
			hangWait(t, "the turn missed during the fault indexed", func() bool { return hangEmbedded(emb, asked) })
			r, _ = hangSearch(t, c, "garden", "s2", 15*time.Second)
			if !hangFound(r, asked) {
				t.Errorf("search after the fault: %+v, want %q", r.Results, asked)
			}

			g.Hang()
			hangSend(t, c, &ipc.Message{Content: "one more thing", Ref: "m3"})
			hangWait(t, "the indexer held at the hung embedder", func() bool { return g.Held() > 0 })
			took = hangStop(t, d, hangGrace)
			t.Logf("stopped in %v with the embedder hung", took.Round(time.Millisecond))
		})
	}
}
