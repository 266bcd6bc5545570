package reliability

import (
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/internal/nettest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
)

// hangIndexed is how many documents hearth has indexed since it started.
func hangIndexed(t *testing.T, c *ipc.Conn) int {
	t.Helper()
	h := hangHealth(t, c)
	if h.Index == nil {
		return 0
	}
	return h.Index.Indexed
}

// Qdrant (the gRPC stand-in, behind a gate) that stalls or stops: turns
// are answered all the same, health answers, a search answers from
// keywords over the journal (recall gets half the search's time), and
// once Qdrant is back the indexer stores what it missed. SIGTERM while
// Qdrant stalls ends hearth at once.
func TestQdrantHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	for _, tc := range []struct {
		name         string
		fault, cured func(g *nettest.Gate)
		within       time.Duration // the search answers before
	}{
		{"stalls", (*nettest.Gate).Hang, (*nettest.Gate).Resume, 10 * time.Second},
		{"stops", (*nettest.Gate).Down, (*nettest.Gate).Up, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := qdranttest.Start(qdranttest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(q.Close)
			g := nettest.NewGate(t, q.Addr())
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, append(hearthtest.OpenAIEnv(model), "MNEMO_EMBEDDER=none", "MNEMO_QDRANT_ADDR="+g.Addr()))
			c := dialHung(t, d)
			hangWait(t, "recall open on Qdrant", func() bool {
				h := hangHealth(t, c)
				return h.Index != nil && h.Index.Backend == "qdrant" && h.Index.Ready
			})
			const said = "we adopted a puppy called Biscuit"
			m, _ := hangAsk(t, c, said, "m1", 30*time.Second)
			hangReply(t, m, "echo: "+said)
			hangWait(t, "the first turn in Qdrant", func() bool { return hangIndexed(t, c) >= 2 })
			before := hangIndexed(t, c)

			tc.fault(g)
			const asked = "what do you remember about the garden"
			m, took := hangAsk(t, c, asked, "m2", 30*time.Second)
			hangReply(t, m, "echo: "+asked)
			if took > 8*time.Second {
				t.Errorf("a turn took %v with Qdrant faulty, want the memory block's 300 ms bound to keep it short", took)
			}
			r, took := hangSearch(t, c, "puppy Biscuit", "s1", 15*time.Second)
			if !hangFound(r, said) {
				t.Errorf("search during the fault: %+v, want the keyword match %q", r.Results, said)
			}
			if took > tc.within {
				t.Errorf("search took %v during the fault, want under %v", took, tc.within)
			}
			h := hangHealth(t, c)
			t.Logf("search answered in %v; index %+v", took.Round(time.Millisecond), *h.Index)
			if h.Index.KeywordSearches < 1 {
				t.Errorf("health counts no keyword search: %+v", *h.Index)
			}

			tc.cured(g)
			hangWait(t, "the turn missed during the fault in Qdrant", func() bool { return hangIndexed(t, c) >= before+2 })
			recall := hangHealth(t, c).Index.RecallSearches
			r, _ = hangSearch(t, c, "garden", "s2", 15*time.Second)
			if !hangFound(r, asked) {
				t.Errorf("search after the fault: %+v, want %q", r.Results, asked)
			}
			if got := hangHealth(t, c).Index.RecallSearches; got != recall+1 {
				t.Errorf("recall searches %d after the fault, want %d: Qdrant answered", got, recall+1)
			}

			g.Hang()
			hangSend(t, c, &ipc.Message{Content: "one more thing", Ref: "m3"})
			hangWait(t, "the indexer held at the stalled Qdrant", func() bool { return g.Held() > 0 })
			took = hangStop(t, d, hangGrace)
			t.Logf("stopped in %v with Qdrant stalled", took.Round(time.Millisecond))
		})
	}
}
