package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
)

// newTestRecall is a lexical-only recall system over an embedded index in
// a temp dir holding docs.
func newTestRecall(t *testing.T, docs ...recall.Doc) *recallSystem {
	t.Helper()
	ix, err := embedded.Open(filepath.Join(t.TempDir(), "index"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if len(docs) > 0 {
		if err := ix.Upsert(context.Background(), docs, nil); err != nil {
			t.Fatal(err)
		}
	}
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &recallSystem{
		index:    ix,
		indexer:  indexer.New(indexer.Options{Journal: j, Index: ix, Session: conversationID}),
		searcher: &recall.Searcher{Index: ix},
		backend:  "embedded",
		log:      slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
}

// gardenDocs are n turn and n tool documents about the garden, each text
// starting with its id.
func gardenDocs(n int) []recall.Doc {
	ts := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var docs []recall.Doc
	for i := range n {
		id := fmt.Sprintf("turn%02d", i)
		docs = append(docs, recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Channel: "chat", Session: conversationID, TS: ts,
			Text: id + " we planted tomatoes in the garden " + strings.Repeat("and basil ", 5*i)})
		id = fmt.Sprintf("tool%02d", i)
		docs = append(docs, recall.Doc{ID: id, Kind: recall.KindTool, Role: "tool", Channel: "weather", Session: conversationID, TS: ts,
			Text: id + " tool weather (garden tomatoes need rain) \n" + strings.Repeat("rain tomorrow ", 5*i)})
	}
	// A long turn cut into chunks: the window holding its record excludes
	// every chunk.
	docs = append(docs, recall.Doc{ID: "chunked#1", Kind: recall.KindTurn, Role: "agent", Session: conversationID, TS: ts, Text: "chunked garden tomatoes"})
	return docs
}

// sections splits a memory block into its sections' texts by heading.
func sections(t *testing.T, block string) map[string]string {
	t.Helper()
	if block == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(block, InjectedSentinel+"\n")
	if !ok {
		t.Fatalf("block does not start with the sentinel: %q", block)
	}
	out := map[string]string{}
	for _, heading := range []string{toolsHeading, turnsHeading} {
		if i := strings.Index(rest, heading); i >= 0 {
			out[heading] = rest[i:]
			rest = rest[:i]
		}
	}
	if rest != "" {
		t.Fatalf("block has text outside its sections: %q", rest)
	}
	return out
}

func TestRecallMemories(t *testing.T) {
	rs := newTestRecall(t, gardenDocs(8)...)
	tests := []struct {
		name         string
		turns, tools int
		exclude      []string
		wantTurns    []string // ids that must be in the turns section
		wantTools    []string
		wantNoTurns  bool // no turns section
		wantNoTools  bool
		wantTruncate bool // the allowances must leave some hits out
	}{
		{name: "both sections", turns: 3600, tools: 2400, wantTurns: []string{"turn00", "turn07"}, wantTools: []string{"tool00", "tool07"}},
		{name: "the window is left out", turns: 3600, tools: 2400, exclude: []string{"turn00", "tool01", "chunked"}, wantTurns: []string{"turn01"}, wantTools: []string{"tool00"}},
		{name: "small allowances fill what fits", turns: 120, tools: 60, wantTruncate: true},
		{name: "no allowance for tools, no tools section", turns: 3600, tools: 0, wantTurns: []string{"turn00"}, wantNoTools: true},
		{name: "no allowance for turns, no turns section", turns: 0, tools: 3600, wantTools: []string{"tool00"}, wantNoTurns: true},
		{name: "an allowance too small for any line omits the section", turns: 3600, tools: 30, wantTurns: []string{"turn00"}, wantNoTools: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exclude := map[string]bool{}
			for _, id := range tt.exclude {
				exclude[id] = true
			}
			block := rs.memories(context.Background(), MemoryRequest{Query: "garden tomatoes", Exclude: exclude, Turns: tt.turns, Tools: tt.tools})
			secs := sections(t, block)
			turns, tools := secs[turnsHeading], secs[toolsHeading]
			if n := estimateTokens(turns); n > tt.turns {
				t.Errorf("turns section is %d tokens, over its allowance %d:\n%s", n, tt.turns, turns)
			}
			if n := estimateTokens(tools); n > tt.tools {
				t.Errorf("tools section is %d tokens, over its allowance %d:\n%s", n, tt.tools, tools)
			}
			if (turns == "") != tt.wantNoTurns || (tools == "") != tt.wantNoTools {
				t.Fatalf("sections: turns %v, tools %v; want turns %v, tools %v:\n%s", turns != "", tools != "", !tt.wantNoTurns, !tt.wantNoTools, block)
			}
			if strings.Contains(turns, "tool0") || strings.Contains(tools, "turn0") {
				t.Errorf("a section holds the other kind:\n%s", block)
			}
			for _, id := range tt.exclude {
				if strings.Contains(block, id) {
					t.Errorf("%s is in the window but was injected:\n%s", id, block)
				}
			}
			for _, id := range tt.wantTurns {
				if !strings.Contains(turns, "] user: "+id) {
					t.Errorf("turns section lacks %s:\n%s", id, turns)
				}
			}
			for _, id := range tt.wantTools {
				if !strings.Contains(tools, "] "+id+" tool weather") {
					t.Errorf("tools section lacks %s:\n%s", id, tools)
				}
			}
			if tt.wantTruncate {
				if turns == "" || tools == "" || strings.Count(turns, "\n- ") >= 9 || strings.Count(tools, "\n- ") >= 8 {
					t.Errorf("small allowances: want some of each kind, not all:\n%s", block)
				}
			}
		})
	}
}

func TestRecallMemoriesNothingRelevant(t *testing.T) {
	rs := newTestRecall(t, gardenDocs(2)...)
	for _, req := range []MemoryRequest{
		{Query: "quantum chromodynamics", Turns: 3600, Tools: 2400},
		{Query: "garden tomatoes", Turns: 3600, Tools: 2400, Exclude: map[string]bool{"turn00": true, "turn01": true, "tool00": true, "tool01": true, "chunked": true}},
		{Query: "garden tomatoes"},
	} {
		if block := rs.memories(context.Background(), req); block != "" {
			t.Errorf("memories(%+v) = %q, want no block", req, block)
		}
	}
}

func TestRetryPolicyDelay(t *testing.T) {
	p := retryPolicy{Initial: time.Second, Max: time.Minute}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{3, 2 * time.Second, 4 * time.Second},
		{6, 16 * time.Second, 32 * time.Second},
		{7, 30 * time.Second, time.Minute}, // capped
		{100, 30 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		for range 50 {
			if d := p.delay(tt.attempt); d < tt.min || d > tt.max {
				t.Errorf("delay(%d) = %v, want within [%v, %v]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
	if d := (retryPolicy{}).withDefaults(); d.Initial != time.Second || d.Max != time.Minute {
		t.Errorf("default policy = %+v, want 1s to 1m", d)
	}
}

// scriptedOpener fails the first failures calls with err, then opens rs.
// Every call waits for the test to let it answer, so the test sees each
// state in between.
type scriptedOpener struct {
	rs       *recallSystem
	err      error
	failures int
	calls    atomic.Int32
	turn     chan struct{}
}

func (o *scriptedOpener) open(ctx context.Context) (*recallSystem, error) {
	select {
	case <-o.turn:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if int(o.calls.Add(1)) <= o.failures {
		return nil, o.err
	}
	return o.rs, nil
}

// waitFor polls cond: the open loop runs in its own goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRecallRetriesUntilItOpens(t *testing.T) {
	rs := newTestRecall(t, recall.Doc{ID: "r1", Kind: recall.KindTurn, Role: "user", Session: conversationID, TS: time.Now(), Text: "we planted tomatoes"})
	secret := errors.New("dial tcp 10.1.2.3:6334: connection refused (api-key sk-secret)")
	opener := &scriptedOpener{rs: rs, err: fmt.Errorf("qdrant at 10.1.2.3:6334: %w", secret), failures: 3, turn: make(chan struct{})}
	var keywordCalls atomic.Int32
	lr := &lateRecall{backend: "qdrant", embedder: "wordvec", keyword: func(ctx context.Context, req tools.SearchRequest) ([]tools.Hit, error) {
		keywordCalls.Add(1)
		return []tools.Hit{{ID: "kw", Text: "keyword hit"}}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := make(chan *recallSystem, 1)
	go func() {
		opened <- lr.open(ctx, opener.open, retryPolicy{Initial: time.Millisecond, Max: 4 * time.Millisecond}, slog.New(slog.NewTextHandler(t.Output(), nil)))
	}()

	if h := lr.health(); h != nil {
		t.Errorf("health during the first attempt = %+v, want nil (opening)", h)
	}
	for attempt := 1; attempt <= opener.failures; attempt++ {
		opener.turn <- struct{}{}
		waitFor(t, fmt.Sprintf("attempt %d to be reported", attempt), func() bool { h := lr.health(); return h != nil && h.Failures == attempt })
		h := lr.health()
		if !h.Unavailable || h.Backend != "qdrant" || h.Embedder != "wordvec" || !strings.Contains(h.Failing, "retrying") {
			t.Errorf("health after %d failures = %+v, want qdrant unavailable, retrying", attempt, h)
		}
		for _, leak := range []string{"10.1.2.3", "6334", "sk-secret", "refused"} {
			if strings.Contains(h.Failing, leak) {
				t.Errorf("health leaks %q: %q", leak, h.Failing)
			}
		}
		hits, err := lr.search(ctx, tools.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 1 || hits[0].ID != "kw" {
			t.Errorf("search while unavailable = %+v, %v, want the keyword fallback", hits, err)
		}
		if block := lr.memories(ctx, MemoryRequest{Query: "tomatoes", Turns: 1000, Tools: 1000}); block != "" {
			t.Errorf("memories while unavailable = %q, want none", block)
		}
	}
	opener.turn <- struct{}{}
	if got := <-opened; got != rs {
		t.Fatalf("open returned %p, want the recall system", got)
	}
	h := lr.health()
	if h == nil || h.Unavailable || h.Failing != "" || h.Failures != 0 || h.Backend != "embedded" {
		t.Errorf("health once open = %+v, want the index's own, healthy", h)
	}
	before := keywordCalls.Load()
	hits, err := lr.search(ctx, tools.SearchRequest{Query: "tomatoes", K: 5})
	if err != nil || len(hits) != 1 || hits[0].ID != "r1" {
		t.Errorf("search once open = %+v, %v, want the recall hit", hits, err)
	}
	if keywordCalls.Load() != before {
		t.Errorf("search still went to keywords once recall was open")
	}
	if n := opener.calls.Load(); n != 4 {
		t.Errorf("opened %d times, want 4", n)
	}
}

func TestRecallConfigErrorIsNotRetried(t *testing.T) {
	_, cfgErr := newEmbedder(Options{Getenv: env(map[string]string{"MNEMO_EMBEDDER": "openai", "MNEMO_EMBED_MODEL": "m"})}, slog.New(slog.DiscardHandler))
	if cfgErr == nil || !permanent(cfgErr) || !strings.Contains(cfgErr.Error(), "MNEMO_EMBED_DIM") {
		t.Fatalf("newEmbedder without MNEMO_EMBED_DIM = %v, want a permanent configuration error naming it", cfgErr)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"embedder configuration", cfgErr},
		{"bad embedder name", func() error {
			_, err := newEmbedder(Options{Getenv: env(map[string]string{"MNEMO_EMBEDDER": "magic"})}, slog.New(slog.DiscardHandler))
			return err
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opener := &scriptedOpener{err: tc.err, failures: 1 << 30, turn: make(chan struct{}, 10)}
			for range 10 {
				opener.turn <- struct{}{}
			}
			var logs syncBuffer
			lr := &lateRecall{backend: "embedded", embedder: "openai"}
			rs := lr.open(context.Background(), opener.open, retryPolicy{Initial: time.Millisecond, Max: time.Millisecond}, slog.New(slog.NewTextHandler(&logs, nil)))
			if rs != nil {
				t.Fatal("open returned a recall system")
			}
			if n := opener.calls.Load(); n != 1 {
				t.Errorf("opened %d times, want 1 (no retry)", n)
			}
			h := lr.health()
			if h == nil || !h.Unavailable || h.Failing != msgRecallMisconfigured || h.Failures != 1 {
				t.Errorf("health = %+v, want unavailable, misconfigured", h)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "MNEMO_EMBEDDER") {
				t.Errorf("log = %q, want the configuration error once", logs.String())
			}
		})
	}
}

func TestRecallOpenStopsWithTheDaemon(t *testing.T) {
	opener := &scriptedOpener{err: errors.New("unreachable"), failures: 1 << 30, turn: make(chan struct{}, 1)}
	opener.turn <- struct{}{}
	lr := &lateRecall{backend: "qdrant"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *recallSystem)
	go func() {
		done <- lr.open(ctx, opener.open, retryPolicy{Initial: time.Hour, Max: time.Hour}, slog.New(slog.DiscardHandler))
	}()
	waitFor(t, "the first failure", func() bool { return lr.health() != nil })
	cancel()
	select {
	case rs := <-done:
		if rs != nil {
			t.Error("open returned a recall system after the daemon stopped")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("open kept waiting after the daemon stopped")
	}
	if h := lr.health(); h == nil || !h.Unavailable || h.Failures != 1 {
		t.Errorf("health = %+v", h)
	}
}

// countingEmbedder embeds every text as [1, 0] and counts its calls.
type countingEmbedder struct{ calls atomic.Int32 }

func (*countingEmbedder) Name() string { return "counting:2" }
func (*countingEmbedder) Dim() int     { return 2 }
func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

// TestRecallMemoriesEmbedOnce: the turn and tool searches of one block
// share one embedding of the query (with a remote embedder, one request
// per turn rather than two).
func TestRecallMemoriesEmbedOnce(t *testing.T) {
	docs := gardenDocs(3)
	ix, err := embedded.Open(filepath.Join(t.TempDir(), "index"), embedded.Options{Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	vecs := make([][]float32, len(docs))
	for i := range vecs {
		vecs[i] = []float32{1, 0}
	}
	if err := ix.Upsert(context.Background(), docs, vecs); err != nil {
		t.Fatal(err)
	}
	emb := &countingEmbedder{}
	rs := &recallSystem{index: ix, embedder: emb, searcher: &recall.Searcher{Index: ix, Embedder: emb}, log: slog.New(slog.DiscardHandler)}
	block := rs.memories(context.Background(), MemoryRequest{Query: "tomatoes in the garden", Turns: 500, Tools: 500})
	secs := sections(t, block)
	if secs[turnsHeading] == "" || secs[toolsHeading] == "" {
		t.Fatalf("block = %q, want both sections", block)
	}
	if n := emb.calls.Load(); n != 1 {
		t.Errorf("embedder called %d times for one block, want 1", n)
	}
}
