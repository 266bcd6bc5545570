package recollect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
)

// scriptedOpener fails the first failures calls with err, then opens rs.
// Every call waits for the test to let it answer, so the test sees each
// state in between.
type scriptedOpener struct {
	rs       *system
	err      error
	failures int
	calls    atomic.Int32
	turn     chan struct{}
}

func (o *scriptedOpener) open(ctx context.Context) (*system, error) {
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

// run starts m.Run and returns what stops it and waits for it to end.
func run(m *Memory) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	return func() { cancel(); <-done }
}

// TestRunRetriesUntilItOpens: while recall cannot be opened, health says
// so without leaking the backend's details, search answers with keywords
// over the journal and nothing is injected; once it opens, search goes to
// recall. The counters say which path answered.
func TestRunRetriesUntilItOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, recs := openJournal(t, journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"})
		secret := errors.New("dial tcp 10.1.2.3:6334: connection refused (api-key sk-secret)")
		m := New(Options{Journal: j, Session: session, Settings: Settings{Embedder: "wordvec", QdrantAddr: "10.1.2.3:6334"},
			Retry: RetryPolicy{Initial: time.Millisecond, Max: 4 * time.Millisecond}, Log: testLog(t)})
		opener := &scriptedOpener{rs: newSystem(openIndex(t, docsOf(recs)...), nil, "embedded", m.o),
			err: fmt.Errorf("qdrant at 10.1.2.3:6334: %w", secret), failures: 3, turn: make(chan struct{})}
		m.opener = opener.open
		stop := run(m)
		defer stop()

		synctest.Wait()
		if h := m.Health(); !h.Opening || h.Unavailable || h.Backend != "qdrant" || h.Embedder != "wordvec" {
			t.Errorf("health during the first attempt = %+v, want opening", h)
		}
		for attempt := 1; attempt <= opener.failures; attempt++ {
			opener.turn <- struct{}{}
			synctest.Wait()
			h := m.Health()
			if h.Opening || !h.Unavailable || h.Ready || h.Failures != attempt || h.Backend != "qdrant" || h.Embedder != "wordvec" || !strings.Contains(h.Failing, "retrying") {
				t.Errorf("health after %d failures = %+v, want qdrant unavailable, retrying", attempt, h)
			}
			for _, leak := range []string{"10.1.2.3", "6334", "sk-secret", "refused"} {
				if strings.Contains(h.Failing, leak) {
					t.Errorf("health leaks %q: %q", leak, h.Failing)
				}
			}
			hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
			if err != nil || len(hits) != 1 || hits[0].ID != recs[0].ID || hits[0].Text != "we planted tomatoes" {
				t.Errorf("search while unavailable = %+v, %v, want the record by keywords", hits, err)
			}
			if s := m.Health().Searches; s != (memory.SearchCounts{Keyword: attempt}) {
				t.Errorf("searches = %+v, want %d by keywords", s, attempt)
			}
			if block := m.Relevant(t.Context(), memory.ContextRequest{Query: "tomatoes", Turns: 1000, Tools: 1000}); block != "" {
				t.Errorf("relevant memories while unavailable = %q, want none", block)
			}
		}
		opener.turn <- struct{}{}
		synctest.Wait()
		h := m.Health()
		if h.Opening || h.Unavailable || h.Failing != "" || h.Failures != 0 || h.Backend != "embedded" || !h.Ready {
			t.Errorf("health once open = %+v, want the index's own, healthy and ready", h)
		}
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 1 || hits[0].ID != recs[0].ID {
			t.Errorf("search once open = %+v, %v, want the recall hit", hits, err)
		}
		if s := m.Health().Searches; s != (memory.SearchCounts{Recall: 1, Keyword: opener.failures}) {
			t.Errorf("searches = %+v, want the last one by recall", s)
		}
		if n := opener.calls.Load(); n != 4 {
			t.Errorf("opened %d times, want 4", n)
		}
	})
}

// gatedIndex is an index whose Upsert waits until gate is closed.
type gatedIndex struct {
	recall.Index
	gate chan struct{}
}

func (g *gatedIndex) Upsert(ctx context.Context, docs []recall.Doc, vecs [][]float32) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Index.Upsert(ctx, docs, vecs)
}

// TestReadyAfterCatchUp: recall open is not enough for Ready: a search
// then finds nothing the indexer has not stored yet (what made an
// end-to-end test flaky). Ready turns true once the indexer caught up with
// what the journal held.
func TestReadyAfterCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, _ := openJournal(t,
			journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"},
			journal.Record{Role: memory.RoleAgent, Text: "tomatoes like sun"},
			journal.Record{Role: memory.RoleUser, Text: ""}, // nothing to index
		)
		m := New(Options{Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)})
		gate := make(chan struct{})
		m.opener = func(context.Context) (*system, error) {
			return newSystem(&gatedIndex{Index: openIndex(t), gate: gate}, nil, "embedded", m.o), nil
		}
		stop := run(m)
		defer stop()

		synctest.Wait() // the indexer waits at the gate
		h := m.Health()
		if h.Opening || h.Unavailable || h.Ready || h.IndexedSinceStart != 0 {
			t.Errorf("health while catching up = %+v, want open, not ready, nothing indexed", h)
		}
		if hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5}); err != nil || len(hits) != 0 {
			t.Errorf("search while catching up = %+v, %v, want recall's nothing", hits, err)
		}
		close(gate)
		synctest.Wait()
		if h := m.Health(); !h.Ready || h.IndexedSinceStart != 2 || h.Lag != 0 {
			t.Errorf("health once caught up = %+v, want ready with 2 documents", h)
		}
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 2 {
			t.Errorf("search once ready = %+v, %v, want both turns", hits, err)
		}
		if s := m.Health().Searches; s != (memory.SearchCounts{Recall: 2}) {
			t.Errorf("searches = %+v, want 2 by recall", s)
		}

		// A committed record is indexed once memory is told.
		rec, err := j.Append(t.Context(), journal.Record{Role: memory.RoleUser, Mode: memory.ModeVoice, Text: "the tomatoes are red"})
		if err != nil {
			t.Fatal(err)
		}
		m.Notify(rec.ID)
		synctest.Wait()
		hits, err = m.Search(t.Context(), memory.SearchRequest{Query: "red", K: 5})
		if err != nil || len(hits) != 1 || hits[0].ID != rec.ID || hits[0].Mode != memory.ModeVoice || hits[0].Channel != "voice" {
			t.Errorf("search after Notify = %+v, %v, want the new voice turn", hits, err)
		}
		if h := m.Health(); h.IndexedSinceStart != 3 {
			t.Errorf("indexed %d since start, want 3", h.IndexedSinceStart)
		}
	})
}

// closeSpy is an index that records whether it was closed.
type closeSpy struct {
	recall.Index
	closed atomic.Bool
}

func (c *closeSpy) Close() error {
	c.closed.Store(true)
	return c.Index.Close()
}

// TestRunStopsWithTheContext: Run stops opening, or indexing, when its
// context ends; it closes the index it opened, and search goes back to
// keywords.
func TestRunStopsWithTheContext(t *testing.T) {
	t.Run("while retrying", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := New(Options{Session: session, Retry: RetryPolicy{Initial: time.Hour, Max: time.Hour}, Log: testLog(t)})
			var calls atomic.Int32
			m.opener = func(context.Context) (*system, error) { calls.Add(1); return nil, errors.New("unreachable") }
			stop := run(m)
			synctest.Wait()
			if h := m.Health(); !h.Unavailable || h.Failures != 1 {
				t.Errorf("health after the first failure = %+v", h)
			}
			stop()
			if h := m.Health(); !h.Unavailable || h.Failing != msgRecallStopped {
				t.Errorf("health once stopped = %+v", h)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("opened %d times, want 1", n)
			}
		})
	})
	t.Run("once open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j, _ := openJournal(t, journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"})
			m := New(Options{Journal: j, Session: session, Log: testLog(t)})
			spy := &closeSpy{Index: openIndex(t)}
			m.opener = func(context.Context) (*system, error) { return newSystem(spy, nil, "embedded", m.o), nil }
			stop := run(m)
			synctest.Wait()
			if h := m.Health(); !h.Ready {
				t.Fatalf("health = %+v, want ready", h)
			}
			stop()
			if !spy.closed.Load() {
				t.Error("the index was not closed")
			}
			if h := m.Health(); !h.Unavailable || h.Ready || h.Failing != msgRecallStopped {
				t.Errorf("health once stopped = %+v", h)
			}
			if hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5}); err != nil || len(hits) != 1 {
				t.Errorf("search once stopped = %+v, %v", hits, err)
			}
			if s := m.Health().Searches; s != (memory.SearchCounts{Keyword: 1}) {
				t.Errorf("searches = %+v, want 1 by keywords", s)
			}
			m.Notify("01ANY") // no index to tell: nothing happens
		})
	})
}

// TestSettingsErrorsAreNotRetried: a wrong setting is logged once, health
// says recall is misconfigured, and Run returns without retrying.
func TestSettingsErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		root      string
		settings  Settings
		wantLog   string
		noJournal bool
	}{
		{"openai without a dimension", "root", Settings{Embedder: "openai", EmbedModel: "m"}, "MNEMO_EMBED_DIM", false},
		{"ollama without a model", "root", Settings{Embedder: "ollama", EmbedDim: 8}, "MNEMO_EMBED_MODEL", false},
		{"unknown embedder", "root", Settings{Embedder: "magic"}, "MNEMO_EMBEDDER", false},
		{"word vectors asked for and missing", "root", Settings{Embedder: "wordvec", Vectors: "/nonexistent/vectors.bin"}, "word vectors", false},
		{"embedded index without a root", "", Settings{Embedder: "none"}, "memory root", false},
		{"no journal", "root", Settings{Embedder: "none"}, "recall needs the journal", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			root := tc.root
			if root != "" {
				root = t.TempDir()
			}
			var j *journal.Journal
			if !tc.noJournal {
				j, _ = openJournal(t)
			}
			m := New(Options{Root: root, Journal: j, Session: session, Settings: tc.settings,
				Retry: RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var calls atomic.Int32
			open := m.opener
			m.opener = func(ctx context.Context) (*system, error) {
				if calls.Add(1) > 1 {
					cancel() // a retry: stop it
				}
				return open(ctx)
			}
			m.Run(ctx)
			if n := calls.Load(); n != 1 {
				t.Errorf("opened %d times, want 1 (no retry)", n)
			}
			h := m.Health()
			if !h.Unavailable || h.Failing != msgRecallMisconfigured || h.Failures != 1 {
				t.Errorf("health = %+v, want unavailable, misconfigured", h)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log = %q, want the configuration error naming %q once", logs.String(), tc.wantLog)
			}
		})
	}
}

// searchRecords are journal records of every role, kind and channel, each
// naming tomatoes, a day apart at noon.
func searchRecords() []journal.Record {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	return []journal.Record{
		{Role: memory.RoleUser, Mode: memory.ModeText, TS: day(1), Text: "u1: we planted tomatoes in the raised bed"},
		{Role: memory.RoleAgent, Mode: memory.ModeText, TS: day(2), Text: "a2: tomatoes like full sun"},
		{Role: memory.RoleTool, Mode: memory.ModeText, TS: day(3), Text: "t3: rain tomorrow, good for the tomatoes", Tool: &journal.ToolResult{CallID: "c1", Name: "weather"}},
		{Role: memory.RoleUser, Mode: memory.ModeVoice, TS: day(4), Text: "u4: the tomatoes are turning red"},
	}
}

// recordName is the name searchRecords gave the record whose text (a tool
// document's starts with the tool) is text.
func recordName(text string) string {
	for _, f := range strings.Fields(text) {
		if name, ok := strings.CutSuffix(f, ":"); ok {
			return name
		}
	}
	return text
}

// TestSearchPathsAgree runs the same filtered searches over recall and
// over the keyword fallback on the same journal: both keep only what
// passes the filters, with the same provenance.
func TestSearchPathsAgree(t *testing.T) {
	j, recs := openJournal(t, searchRecords()...)
	byName := map[string]memory.Hit{}
	for _, r := range recs {
		byName[recordName(r.Text)] = Provenance(r, session)
	}
	paths := map[string]*Memory{
		"recall":   openMemory(t, j, docsOf(recs)...),
		"keywords": New(Options{Journal: j, Session: session, Log: testLog(t)}),
	}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	for _, path := range []string{"recall", "keywords"} {
		m := paths[path]
		t.Run(path, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				req  memory.SearchRequest
				want []string // hits' record names, sorted
			}{
				{"no filter", memory.SearchRequest{}, []string{"a2", "t3", "u1", "u4"}},
				{"roles user: the user's turns only", memory.SearchRequest{Roles: []string{memory.RoleUser}}, []string{"u1", "u4"}},
				{"roles agent or tool", memory.SearchRequest{Roles: []string{memory.RoleAgent, memory.RoleTool}}, []string{"a2", "t3"}},
				{"kinds turn", memory.SearchRequest{Kinds: []string{memory.KindTurn}}, []string{"a2", "u1", "u4"}},
				{"kinds tool", memory.SearchRequest{Kinds: []string{memory.KindTool}}, []string{"t3"}},
				{"since", memory.SearchRequest{Since: day(3)}, []string{"t3", "u4"}},
				{"until", memory.SearchRequest{Until: day(3)}, []string{"a2", "u1"}},
				{"range and role", memory.SearchRequest{Roles: []string{memory.RoleUser}, Since: day(2), Until: day(5)}, []string{"u4"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					req := tc.req
					req.Query, req.K = "tomatoes", 10
					hits, err := m.Search(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					var names []string
					for _, h := range hits {
						name := recordName(h.Text)
						names = append(names, name)
						want := byName[name]
						h.Text, h.Score, want.Text = "", 0, ""
						if diff := cmp.Diff(want, h); diff != "" {
							t.Errorf("hit %s provenance (-want +got):\n%s", name, diff)
						}
					}
					slices.Sort(names)
					if diff := cmp.Diff(tc.want, names); diff != "" {
						t.Errorf("hits (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
	if s := paths["recall"].Health().Searches; s.Keyword != 0 || s.Recall == 0 {
		t.Errorf("recall path searches = %+v", s)
	}
	if s := paths["keywords"].Health().Searches; s.Recall != 0 || s.Keyword == 0 {
		t.Errorf("keyword path searches = %+v", s)
	}
}

// filterSpy is a recall index that records the filters of the lexical
// searches it answers.
type filterSpy struct {
	recall.Index
	mu      sync.Mutex
	filters []recall.Filter
}

func (s *filterSpy) Lexical(ctx context.Context, q string, k int, f recall.Filter) ([]recall.Scored, error) {
	s.mu.Lock()
	s.filters = append(s.filters, f)
	s.mu.Unlock()
	return s.Index.Lexical(ctx, q, k, f)
}

// TestRecallSearchFilter checks that a search request's filters reach
// recall as its Filter, with the note statuses among the roles, and that the hits pass them and carry
// their documents' provenance.
func TestRecallSearchFilter(t *testing.T) {
	spy := &filterSpy{Index: openIndex(t, gardenDocs(3)...)}
	m := New(Options{Session: session, Log: testLog(t)})
	m.rs = newSystem(spy, nil, "embedded", m.o)
	ts := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC) // gardenDocs' time
	for _, tc := range []struct {
		name    string
		req     memory.SearchRequest
		want    recall.Filter
		wantAny bool // some hits expected
	}{
		// A search that may find knowledge notes narrows them by status
		// (active only by default) through the roles filter: a note's
		// role is its status.
		{"none", memory.SearchRequest{}, recall.Filter{Roles: []string{"user", "agent", "tool", "active"}}, true},
		{"roles", memory.SearchRequest{Roles: []string{"user", "agent"}}, recall.Filter{Roles: []string{"user", "agent", "active"}}, true},
		{"kinds", memory.SearchRequest{Kinds: []string{"tool"}}, recall.Filter{Kinds: []string{"tool"}}, true},
		{"knowledge", memory.SearchRequest{Kinds: []string{"knowledge"}, Statuses: []string{"active", "draft"}},
			recall.Filter{Kinds: []string{"knowledge"}, Roles: []string{"active", "draft"}}, false},
		{"since", memory.SearchRequest{Since: ts}, recall.Filter{Roles: []string{"user", "agent", "tool", "active"}, Since: ts}, true},
		{"until excludes", memory.SearchRequest{Until: ts}, recall.Filter{Roles: []string{"user", "agent", "tool", "active"}, Until: ts}, false},
		{"all", memory.SearchRequest{Roles: []string{"tool"}, Kinds: []string{"tool"}, Since: ts.Add(-time.Hour), Until: ts.Add(time.Hour)},
			recall.Filter{Roles: []string{"tool"}, Kinds: []string{"tool"}, Since: ts.Add(-time.Hour), Until: ts.Add(time.Hour)}, true},
		{"role and kind that never meet", memory.SearchRequest{Roles: []string{"user"}, Kinds: []string{"tool"}}, recall.Filter{Roles: []string{"user"}, Kinds: []string{"tool"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spy.mu.Lock()
			spy.filters = nil
			spy.mu.Unlock()
			req := tc.req
			req.Query, req.K = "tomatoes", 20
			hits, err := m.Search(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			spy.mu.Lock()
			got := spy.filters
			spy.mu.Unlock()
			if diff := cmp.Diff([]recall.Filter{tc.want}, got); diff != "" {
				t.Errorf("filters the index got (-want +got):\n%s", diff)
			}
			if (len(hits) > 0) != tc.wantAny {
				t.Errorf("%d hits, want some: %v", len(hits), tc.wantAny)
			}
			for _, h := range hits {
				if !req.Matches(h.Kind, h.Role, h.TS) {
					t.Errorf("hit %s (%s, %s, %s) does not pass the filters", h.ID, h.Kind, h.Role, h.TS)
				}
				if h.Session != session || h.Kind == "" || h.Mode != memory.ModeText || (h.Kind == memory.KindTool && h.Channel != "weather") {
					t.Errorf("hit %s lacks provenance: %+v", h.ID, h)
				}
			}
		})
	}
}

// TestSearchRefusesBadFilters: neither path runs a search that fails
// Validate, and its error is Validate's.
func TestSearchRefusesBadFilters(t *testing.T) {
	j, recs := openJournal(t, searchRecords()...)
	for name, m := range map[string]*Memory{
		"recall":   openMemory(t, j, docsOf(recs)...),
		"keywords": New(Options{Journal: j, Session: session}),
	} {
		_, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5, Roles: []string{"assistant"}})
		if err == nil || err.Error() != `unknown role "assistant": use user, agent or tool` {
			t.Errorf("%s: Search with a bad role = %v", name, err)
		}
		if s := m.Health().Searches; s != (memory.SearchCounts{}) {
			t.Errorf("%s: searches = %+v, want none", name, s)
		}
	}
}
