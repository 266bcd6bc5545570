package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// vectorsArgs passes the word vectors to hearth when make built them
// (MNEMO_WORDVEC); without them recall runs lexical only, which these tests
// also cover.
func vectorsArgs() []string {
	if p := os.Getenv("MNEMO_WORDVEC"); p != "" {
		return []string{"-vectors", p}
	}
	return nil
}

// searchUntil asks hearth's memory until a hit contains want: indexing is
// asynchronous, so the first searches may come before the indexer.
func searchUntil(t *testing.T, c *ipc.Conn, query, want string) []ipc.SearchHit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if err := c.Send(&ipc.Search{Query: query, Ref: "s"}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := c.Recv(ctx)
			if err != nil {
				t.Fatalf("search %q: %v", query, err)
			}
			if r, ok := m.(*ipc.SearchResults); ok {
				for _, h := range r.Results {
					if strings.Contains(h.Turn.Content, want) {
						return r.Results
					}
				}
				break
			}
			if e, ok := m.(*ipc.Error); ok {
				t.Fatalf("search %q: %+v", query, e)
			}
		}
		time.Sleep(50 * time.Millisecond) // polling the asynchronous indexer
	}
	t.Fatalf("search %q never found %q", query, want)
	return nil
}

// indexUntil asks hearth's health until its index satisfies ok.
func indexUntil(t *testing.T, c *ipc.Conn, what string, ok func(*ipc.IndexHealth) bool) *ipc.IndexHealth {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ix := health(t, c).Index; ix != nil && ok(ix) {
			return ix
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 60s: %+v", what, health(t, c).Index)
		}
		time.Sleep(20 * time.Millisecond) // polling recall's counters
	}
}

func TestRecallIndexesSearchesAndRebuilds(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model), vectorsArgs()...)
	c := mustDial(t, d.Addr)
	for _, said := range []string{
		"We planted tomatoes and basil in the raised garden bed in May.",
		"My sister Ana is moving to Lisbon next spring.",
		"The dentist appointment is on Thursday at nine.",
	} {
		c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: said})
	}
	// Wait on recall's own counters, not on a lucky search: ready (open
	// and caught up) with the three turns indexed.
	ix := indexUntil(t, c, "recall ready with 3 documents", func(ix *ipc.IndexHealth) bool { return ix.Ready && ix.Indexed >= 3 })
	before := ix.RecallSearches
	hits := searchUntil(t, c, "what grows in the garden", "tomatoes")
	if ix := health(t, c).Index; ix.RecallSearches <= before {
		t.Errorf("the search was not answered by recall: %+v", ix)
	}
	if out := runMnemo(t, d.Addr, "status"); !strings.Contains(out, "recall: embedded index") || !strings.Contains(out, "3 documents indexed") {
		t.Errorf("mnemo status printed %q", out)
	}
	if !strings.Contains(hits[0].Turn.Content, "tomatoes") {
		t.Errorf("best hit = %q, want the garden turn", hits[0].Turn.Content)
	}
	d.Stop(t)

	// A corrupt index is detected at start and rebuilt from the journal.
	files, _ := filepath.Glob(filepath.Join(root, "index", "embedded", "*"))
	if len(files) == 0 {
		t.Fatal("no index files under index/embedded")
	}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("garbage, not an index"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d = startDaemon(t, root, openaiEnv(model), vectorsArgs()...)
	c = mustDial(t, d.Addr)
	searchUntil(t, c, "Lisbon", "Ana")
	d.Stop(t)

	// hearth reindex rebuilds it on demand.
	cmd := exec.Command(bins.Hearth, append(append([]string{"-root", root}, vectorsArgs()...), "reindex")...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "indexed 3 documents") {
		t.Errorf("hearth reindex: %v\n%s", err, out)
	}
}

// TestCacheStoreIsRecalled: the agent keeps a tool result with cache_store,
// and memory search finds it (seed 004's tool cache).
func TestCacheStoreIsRecalled(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, t.TempDir(), openaiEnv(model), vectorsArgs()...)
	c := mustDial(t, d.Addr)
	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "k1", Name: "cache_store", Arguments: `{"content":"The boiler reset code is 4471.","label":"boiler manual","reason":"the owner will need it again"}`}}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Noted."}}},
	)
	c.Send(&ipc.Message{Content: "remember the boiler code 4471"})
	for _, m := range collect(t, c) {
		if r, ok := m.(*ipc.ToolResult); ok && !strings.HasPrefix(r.Result, "stored in memory as ") {
			t.Errorf("cache_store result = %+v", r)
		}
	}
	hits := searchUntil(t, c, "boiler reset code", "reset code is 4471")
	for _, h := range hits {
		if strings.Contains(h.Turn.Content, "reset code is 4471") && h.Turn.Role != ipc.RoleTool {
			t.Errorf("cached memory came back as %+v", h.Turn)
		}
	}
}
