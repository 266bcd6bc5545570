package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
)

// memIndex is a recall.Index in memory that records upserts and can fail.
type memIndex struct {
	mu      sync.Mutex
	docs    map[string]recall.Doc
	vecs    map[string][]float32
	meta    map[string]string
	upserts [][]string
	fail    error
}

func newMemIndex() *memIndex {
	return &memIndex{docs: map[string]recall.Doc{}, vecs: map[string][]float32{}, meta: map[string]string{}}
}

func (m *memIndex) Upsert(_ context.Context, docs []recall.Doc, vecs [][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	var ids []string
	for i, d := range docs {
		m.docs[d.ID] = d
		if vecs != nil {
			m.vecs[d.ID] = vecs[i]
		}
		ids = append(ids, d.ID)
	}
	m.upserts = append(m.upserts, ids)
	return nil
}
func (m *memIndex) Delete(_ context.Context, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.docs, id)
		delete(m.vecs, id)
	}
	return nil
}
func (m *memIndex) Lexical(context.Context, string, int, recall.Filter) ([]recall.Scored, error) {
	return nil, nil
}
func (m *memIndex) Vector(context.Context, []float32, int, recall.Filter) ([]recall.Scored, error) {
	return nil, nil
}
func (m *memIndex) Docs(context.Context, []string) ([]recall.Doc, error) { return nil, nil }
func (m *memIndex) Count(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.docs), nil
}
func (m *memIndex) Meta(_ context.Context, k string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.meta[k]
	return v, ok, nil
}
func (m *memIndex) SetMeta(_ context.Context, k, v string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta[k] = v
	return nil
}
func (m *memIndex) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.docs, m.vecs, m.meta = map[string]recall.Doc{}, map[string][]float32{}, map[string]string{}
	return nil
}
func (m *memIndex) Close() error { return nil }

func (m *memIndex) allUpserted() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []string
	for _, u := range m.upserts {
		all = append(all, u...)
	}
	return all
}

// flaky is an embedder that fails its first n calls.
type flaky struct {
	name  string
	mu    sync.Mutex
	fails int
	calls int
}

func (f *flaky) Name() string { return f.name }
func (f *flaky) Dim() int     { return 2 }
func (f *flaky) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fails > 0 {
		f.fails--
		return nil, errors.New("embedder down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func openJournal(t *testing.T) *journal.Journal {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func add(t *testing.T, j *journal.Journal, recs ...journal.Record) []string {
	t.Helper()
	var ids []string
	for _, r := range recs {
		if r.Mode == "" {
			r.Mode = "text"
		}
		got, err := j.Append(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got.ID)
	}
	return ids
}

func TestDocs(t *testing.T) {
	ts := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	long := strings.Repeat("word ", 2000) // 10,000 bytes
	tests := []struct {
		name string
		rec  journal.Record
		want []recall.Doc
	}{
		{"user turn", journal.Record{ID: "A", Role: "user", Text: "hello", Mode: "text", TS: ts},
			[]recall.Doc{{ID: "A", Kind: "turn", Role: "user", Mode: "text", Channel: "chat", Session: "main", Text: "hello", TS: ts}}},
		{"voice transcript", journal.Record{ID: "B", Role: "agent", Text: "hi", Mode: "voice", TS: ts},
			[]recall.Doc{{ID: "B", Kind: "turn", Role: "agent", Mode: "voice", Channel: "voice", Session: "main", Text: "hi", TS: ts}}},
		{"empty", journal.Record{ID: "C", Role: "user", Text: "  \n", Mode: "text"}, nil},
		{"injected context is never harvested", journal.Record{ID: "D", Role: "agent", Text: "x " + InjectedSentinel, Mode: "text"}, nil},
		{"an agent step that only called tools", journal.Record{ID: "E", Role: "agent", Mode: "text", ToolCalls: []journal.ToolCall{{ID: "c", Name: "t"}}}, nil},
		{"tool outcome", journal.Record{ID: "F", Role: "tool", Text: "42 °C", Mode: "text", TS: ts, Tool: &journal.ToolResult{CallID: "c", Name: "weather", Reason: "owner asked", Arguments: []byte(`{"city":"Oslo"}`)}},
			[]recall.Doc{{ID: "F", Kind: "tool", Role: "tool", Mode: "text", Channel: "weather", Session: "main", Text: "tool weather (owner asked) {\"city\":\"Oslo\"}\n42 °C", TS: ts}}},
		{"tool error", journal.Record{ID: "G", Role: "tool", Text: "boom", Mode: "text", Tool: &journal.ToolResult{Name: "t", Error: "boom"}},
			[]recall.Doc{{ID: "G", Kind: "tool", Role: "tool", Mode: "text", Channel: "t", Session: "main", Text: "tool t\nerror: boom"}}},
		{"non-UTF-8 is repaired", journal.Record{ID: "H", Role: "user", Text: "caf\xe9 ☕", Mode: "text"},
			[]recall.Doc{{ID: "H", Kind: "turn", Role: "user", Mode: "text", Channel: "chat", Session: "main", Text: "caf\uFFFD ☕"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Docs(tt.rec, "main")); diff != "" {
				t.Errorf("Docs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a long record is chunked on word breaks", func(t *testing.T) {
		docs := Docs(journal.Record{ID: "L", Role: "user", Text: long, Mode: "text"}, "main")
		if len(docs) != 3 {
			t.Fatalf("%d chunks, want 3", len(docs))
		}
		var joined string
		for i, d := range docs {
			if d.ID != fmt.Sprintf("L#%d", i) || len(d.Text) > ChunkBytes || strings.HasPrefix(d.Text, "ord") {
				t.Errorf("chunk %d = %s, %d bytes, starts %.5q", i, d.ID, len(d.Text), d.Text)
			}
			joined += d.Text
		}
		if joined != long {
			t.Errorf("chunks do not add up to the record")
		}
	})
	t.Run("an enormous record is bounded", func(t *testing.T) {
		docs := Docs(journal.Record{ID: "X", Role: "user", Text: strings.Repeat("é", 1<<20), Mode: "text"}, "main")
		if len(docs) != maxChunks {
			t.Errorf("%d chunks, want %d", len(docs), maxChunks)
		}
	})
}

func TestCatchUpResumesWithoutGapsOrDuplicates(t *testing.T) {
	j := openJournal(t)
	idx := newMemIndex()
	emb := &flaky{name: "test:2"}
	ids := add(t, j,
		journal.Record{Role: "user", Text: "one"},
		journal.Record{Role: "agent", Text: "two"},
		journal.Record{Role: "user", Text: ""},
		journal.Record{Role: "user", Text: "four"},
	)
	ix := New(Options{Journal: j, Index: idx, Embedder: emb, Session: "main", Batch: 2})
	if err := ix.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ids[0], ids[1], ids[3]}, idx.allUpserted()); diff != "" {
		t.Errorf("indexed (-want +got):\n%s", diff)
	}
	if c := idx.meta[MetaCursor]; c != ids[3] {
		t.Errorf("cursor = %s, want %s", c, ids[3])
	}
	// A new indexer (a restart) over the same index indexes only what is new.
	more := add(t, j, journal.Record{Role: "user", Text: "five"})
	ix = New(Options{Journal: j, Index: idx, Embedder: emb, Session: "main"})
	if err := ix.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ids[0], ids[1], ids[3], more[0]}, idx.allUpserted()); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
	if st := ix.Status(); st.Cursor != more[0] || st.Lag != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestOutagesBackOffAndCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := openJournal(t)
		idx := newMemIndex()
		emb := &flaky{name: "test:2", fails: 3}
		ids := add(t, j, journal.Record{Role: "user", Text: "a"}, journal.Record{Role: "user", Text: "b"})
		ix := New(Options{Journal: j, Index: idx, Embedder: emb, MinBackoff: time.Second, MaxBackoff: 4 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- ix.Run(ctx) }()

		synctest.Wait()
		if st := ix.Status(); st.Failures != 1 || st.LastError == "" || st.Cursor != "" {
			t.Errorf("while the embedder is down: %+v", st)
		}
		// New turns arrive meanwhile; they do not cut the backoff short.
		ids = append(ids, add(t, j, journal.Record{Role: "user", Text: "c"})...)
		ix.Notify(ids[2])
		time.Sleep(1*time.Second + 2*time.Second + 4*time.Second) // the backoff: 1s, 2s, 4s
		synctest.Wait()
		if diff := cmp.Diff(ids, idx.allUpserted()); diff != "" {
			t.Errorf("after the outage (-want +got):\n%s", diff)
		}
		if st := ix.Status(); st.Failures != 0 || st.LastError != "" || st.Cursor != ids[2] {
			t.Errorf("recovered status = %+v", st)
		}
		// The index goes down: the cursor stays put until it is back.
		idx.mu.Lock()
		idx.fail = errors.New("index unreachable")
		idx.mu.Unlock()
		late := add(t, j, journal.Record{Role: "user", Text: "d"})
		ix.Notify(late[0])
		synctest.Wait()
		if st := ix.Status(); st.Cursor != ids[2] || st.Latest != late[0] || st.Lag <= 0 || st.LastError == "" {
			t.Errorf("with the index down: %+v", st)
		}
		idx.mu.Lock()
		idx.fail = nil
		idx.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if got := idx.allUpserted(); !slices.Contains(got, late[0]) || len(got) != 4 {
			t.Errorf("after the index came back: %v", got)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	})
}

func TestEmbedderChangeReindexes(t *testing.T) {
	j := openJournal(t)
	idx := newMemIndex()
	add(t, j, journal.Record{Role: "user", Text: "a"}, journal.Record{Role: "user", Text: "b"})
	if err := New(Options{Journal: j, Index: idx, Embedder: &flaky{name: "old:2"}}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := New(Options{Journal: j, Index: idx, Embedder: &flaky{name: "new:2"}}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(idx.allUpserted()); n != 4 {
		t.Errorf("upserts = %d, want both records twice (re-embedded)", n)
	}
	if idx.meta[MetaEmbedder] != "new:2" {
		t.Errorf("embedder tag = %q", idx.meta[MetaEmbedder])
	}
	// Lexical only is an embedder change too.
	if err := New(Options{Journal: j, Index: idx}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tag, ok := idx.meta[MetaEmbedder]; !ok || tag != "" || len(idx.vecs) != 0 {
		t.Errorf("lexical only: tag %q (%v), %d vectors", tag, ok, len(idx.vecs))
	}
}

func TestTokenizerChangeReindexes(t *testing.T) {
	j := openJournal(t)
	idx := newMemIndex()
	add(t, j, journal.Record{Role: "user", Text: "a"}, journal.Record{Role: "user", Text: "b"})
	emb := &flaky{name: "test:2"}
	if err := New(Options{Journal: j, Index: idx, Embedder: emb}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := idx.meta[MetaTerms]; got != recall.TermsVersion {
		t.Fatalf("terms tag = %q, want %q", got, recall.TermsVersion)
	}
	// Same embedder and terms: nothing to redo.
	if err := New(Options{Journal: j, Index: idx, Embedder: emb}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(idx.allUpserted()); n != 2 {
		t.Fatalf("upserts = %d, want 2 (nothing re-indexed)", n)
	}
	// An index made by another tokenizer (or before the tag existed) is
	// rebuilt.
	for _, old := range []string{"light-stemmer", ""} {
		if old == "" {
			delete(idx.meta, MetaTerms)
		} else {
			idx.meta[MetaTerms] = old
		}
		before := len(idx.allUpserted())
		if err := New(Options{Journal: j, Index: idx, Embedder: emb}).CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(idx.allUpserted()) - before; n != 2 {
			t.Errorf("terms %q: %d upserts, want both records again", old, n)
		}
		if got := idx.meta[MetaTerms]; got != recall.TermsVersion {
			t.Errorf("terms tag = %q, want %q", got, recall.TermsVersion)
		}
	}
}

func TestTurnContext(t *testing.T) {
	j := openJournal(t)
	idx := newMemIndex()
	emb := &flaky{name: "test:2"}
	ids := add(t, j,
		journal.Record{Role: "user", Text: "my sister moved to Lisbon"},
		journal.Record{Role: "agent", Text: "how does she like it?"},
		journal.Record{Role: "user", Text: " "}, // skipped: no context either
		journal.Record{Role: "tool", Text: "sunny", Tool: &journal.ToolResult{Name: "weather"}},
		journal.Record{Role: "user", Text: "she loves the trams"},
	)
	ix := New(Options{Journal: j, Index: idx, Embedder: emb, Session: "main", Batch: 2})
	if err := ix.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A failed batch is retried with the context it had.
	more := add(t, j, journal.Record{Role: "agent", Text: "trams are fun"})
	idx.mu.Lock()
	idx.fail = errors.New("index down")
	idx.mu.Unlock()
	if err := ix.CatchUp(context.Background()); err == nil {
		t.Fatal("CatchUp with a failing index succeeded")
	}
	idx.mu.Lock()
	idx.fail = nil
	idx.mu.Unlock()
	if err := ix.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A restart keeps the context: the turns before the cursor are read
	// back from the journal.
	after := add(t, j, journal.Record{Role: "user", Text: "after a restart"})
	if err := New(Options{Journal: j, Index: idx, Embedder: emb, Session: "main"}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	// So does an indexer told to keep none.
	none := add(t, j, journal.Record{Role: "user", Text: "no context wanted"})
	if err := New(Options{Journal: j, Index: idx, Embedder: emb, Session: "main", ContextTurns: -1}).CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{
		ids[0]: "",
		ids[1]: "my sister moved to Lisbon",
		ids[3]: "", // tool documents get none
		// The question just before a turn is repeated: the turn answers it.
		ids[4]:   "my sister moved to Lisbon\nhow does she like it?\nhow does she like it?\nhow does she like it?",
		more[0]:  "how does she like it?\nshe loves the trams",
		after[0]: "she loves the trams\ntrams are fun",
		none[0]:  "",
	}
	got := map[string]string{}
	for id, d := range idx.docs {
		got[id] = d.Context
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
	// Vectors embed the text alone: flaky's first component is its length.
	if v := idx.vecs[ids[4]]; v[0] != float32(len("she loves the trams")) {
		t.Errorf("vector of %s = %v: not of the text alone", ids[4], v)
	}
}

// conversation has everything that feeds the turns' context and everything
// that does not: a question, skipped records, tool outcomes, a long turn
// that is chunked and cut short in the context, text that is not UTF-8.
func conversation() []journal.Record {
	return []journal.Record{
		{Role: "user", Text: "my sister moved to Lisbon"},
		{Role: "agent", Text: "how does she like it?"},
		{Role: "user", Text: " \n"},
		{Role: "agent", ToolCalls: []journal.ToolCall{{ID: "c1", Name: "weather"}}},
		{Role: "tool", Text: "sunny", Tool: &journal.ToolResult{CallID: "c1", Name: "weather"}},
		{Role: "agent", Text: "recalled: " + InjectedSentinel},
		{Role: "user", Text: "she loves the trams", Mode: "voice"},
		{Role: "agent", Text: strings.Repeat("trams rattle up the hills ", 400)},
		{Role: "user", Text: "caf\xe9 or pastel?"},
		{Role: "tool", Tool: &journal.ToolResult{Name: "search", Error: "offline"}},
		{Role: "tool", Text: "no outcome: skipped"},
		{Role: "agent", Text: "pastéis de nata, surely"},
		{Role: "user", Text: "what about the food?"},
		{Role: "agent", Text: "fish, mostly"},
	}
}

func TestRestartKeepsContext(t *testing.T) {
	for _, turns := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("ContextTurns=%d", turns), func(t *testing.T) {
			ctx := context.Background()
			j := openJournal(t)
			emb := &flaky{name: "test:2"}
			opts := func(idx *memIndex) Options {
				return Options{Journal: j, Index: idx, Embedder: emb, Session: "main", ContextTurns: turns}
			}
			steady, restarted, once := newMemIndex(), newMemIndex(), newMemIndex()
			ix := New(opts(steady))
			for _, r := range conversation() {
				add(t, j, r)
				if err := ix.CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				// A restart before every record.
				if err := New(opts(restarted)).CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := New(opts(once)).CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(once.docs, steady.docs); diff != "" {
				t.Errorf("indexed as it came vs all at once (-once +steady):\n%s", diff)
			}
			if diff := cmp.Diff(steady.docs, restarted.docs); diff != "" {
				t.Errorf("with a restart before every record (-without +with):\n%s", diff)
			}
			withContext := 0
			for _, d := range steady.docs {
				if d.Context != "" {
					withContext++
				}
			}
			if withContext < 6 {
				t.Errorf("only %d documents have a context", withContext)
			}
		})
	}
}

// tailCounter is a journal that records how many records each Tail asks for.
type tailCounter struct {
	*journal.Journal
	tails []int
}

func (c *tailCounter) Tail(n int) ([]journal.Record, error) {
	c.tails = append(c.tails, n)
	return c.Journal.Tail(n)
}

func TestRestartContextIsBounded(t *testing.T) {
	const total = 100
	window := primeRecords * recall.ContextTurns
	turn := func(i int) journal.Record { return journal.Record{Role: "user", Text: fmt.Sprintf("turn %d", i)} }
	for _, tt := range []struct {
		name   string
		cursor int    // the last record indexed before the restart
		want   string // the context of the one after it
	}{
		{"cursor at the end", total - 2, "turn 97\nturn 98"},
		{"cursor with its turns in reach", total - window + 1, fmt.Sprintf("turn %d\nturn %d", total-window, total-window+1)},
		{"cursor the oldest record in reach", total - window, fmt.Sprintf("turn %d", total-window)},
		{"cursor just out of reach", total - window - 1, ""},
		{"cursor far back", 5, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			j := openJournal(t)
			idx := newMemIndex()
			var ids []string
			for i := range tt.cursor + 1 {
				ids = append(ids, add(t, j, turn(i))...)
			}
			if err := New(Options{Journal: j, Index: idx}).CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			for i := tt.cursor + 1; i < total; i++ {
				ids = append(ids, add(t, j, turn(i))...)
			}
			tc := &tailCounter{Journal: j}
			if err := New(Options{Journal: tc, Index: idx}).CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if got := idx.docs[ids[tt.cursor+1]].Context; got != tt.want {
				t.Errorf("context after the restart = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff([]int{window}, tc.tails); diff != "" {
				t.Errorf("records read back (-want +got):\n%s", diff)
			}
			if len(idx.docs) != total {
				t.Errorf("%d documents, want %d", len(idx.docs), total)
			}
		})
	}
	t.Run("no context wanted reads nothing back", func(t *testing.T) {
		j := openJournal(t)
		idx := newMemIndex()
		add(t, j, turn(0))
		if err := New(Options{Journal: j, Index: idx}).CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		add(t, j, turn(1))
		tc := &tailCounter{Journal: j}
		if err := New(Options{Journal: tc, Index: idx, ContextTurns: -1}).CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(tc.tails) != 0 || len(idx.docs) != 2 {
			t.Errorf("Tail calls %v, %d documents", tc.tails, len(idx.docs))
		}
	})
}

// scanOnly is a journal that cannot be read backwards.
type scanOnly struct{ j *journal.Journal }

func (s scanOnly) ScanAfter(ctx context.Context, id string, fn func(journal.Record) error) error {
	return s.j.ScanAfter(ctx, id, fn)
}

func TestRestartWithoutContext(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	j, err := journal.Open(t.TempDir(), journal.Options{Now: func() time.Time {
		now = now.Add(time.Second) // only the writer goroutine calls it
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	ctx := context.Background()
	idx := newMemIndex()
	ids := add(t, j, journal.Record{Role: "user", Text: "one"}, journal.Record{Role: "agent", Text: "two"})
	if err := New(Options{Journal: j, Index: idx}).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("the cursor's record is gone", func(t *testing.T) {
		// A cursor between two records, as if its record had been cut
		// from the journal by hand.
		var gone ulid.ULID
		if err := gone.SetTime(ulid.MustParseStrict(ids[1]).Time() + 500); err != nil {
			t.Fatal(err)
		}
		if err := idx.SetMeta(ctx, MetaCursor, gone.String()); err != nil {
			t.Fatal(err)
		}
		next := add(t, j, journal.Record{Role: "user", Text: "three"})
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if err := New(Options{Journal: j, Index: idx, Log: log}).CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		d, ok := idx.docs[next[0]]
		if !ok || d.Context != "" {
			t.Errorf("indexed %v, context %q; want no context", ok, d.Context)
		}
		if !strings.Contains(logs.String(), "level=DEBUG") || !strings.Contains(logs.String(), gone.String()) {
			t.Errorf("logs = %q, want a debug line naming the cursor", logs.String())
		}
	})
	t.Run("the journal cannot be read backwards", func(t *testing.T) {
		next := add(t, j, journal.Record{Role: "user", Text: "four"})
		if err := New(Options{Journal: scanOnly{j}, Index: idx}).CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if d, ok := idx.docs[next[0]]; !ok || d.Context != "" {
			t.Errorf("indexed %v, context %q; want no context", ok, d.Context)
		}
	})
}

// TestCaughtUp: Status.CaughtUp turns true once a CatchUp reaches the end
// of the journal, never while a batch fails, and stays true afterwards.
func TestCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records int
		batch   int
	}{
		{"empty journal", 0, 0},
		{"one batch", 3, 0},
		{"several batches", 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := openJournal(t)
			for i := range tc.records {
				add(t, j, journal.Record{Role: "user", Text: fmt.Sprintf("turn %d", i)})
			}
			idx := newMemIndex()
			ix := New(Options{Journal: j, Index: idx, Batch: tc.batch})
			if ix.Status().CaughtUp {
				t.Fatal("caught up before any CatchUp")
			}
			if tc.records > 0 {
				idx.mu.Lock()
				idx.fail = errors.New("index unreachable")
				idx.mu.Unlock()
				if err := ix.CatchUp(t.Context()); err == nil {
					t.Fatal("CatchUp with the index down succeeded")
				}
				if ix.Status().CaughtUp {
					t.Fatal("caught up although the batch failed")
				}
				idx.mu.Lock()
				idx.fail = nil
				idx.mu.Unlock()
			}
			if err := ix.CatchUp(t.Context()); err != nil {
				t.Fatal(err)
			}
			if st := ix.Status(); !st.CaughtUp || st.Indexed != tc.records {
				t.Fatalf("after CatchUp: %+v, want caught up with %d documents", st, tc.records)
			}
			// A later failure leaves it caught up; Failures tells the rest.
			add(t, j, journal.Record{Role: "user", Text: "late"})
			idx.mu.Lock()
			idx.fail = errors.New("index unreachable")
			idx.mu.Unlock()
			if err := ix.CatchUp(t.Context()); err == nil {
				t.Fatal("CatchUp with the index down succeeded")
			}
			if !ix.Status().CaughtUp {
				t.Error("no longer caught up after a later failure")
			}
		})
	}
}

// A decision record is not a turn: the indexer indexes nothing of it, and
// its cursor passes it.
func TestDecisionNotIndexed(t *testing.T) {
	j := openJournal(t)
	idx := newMemIndex()
	ids := add(t, j,
		journal.Record{Role: "user", Text: "one"},
		journal.DecisionRecord(journal.Decision{Proposal: "prop_1", Path: "knowledge/a.md", Verdict: "applied", Why: "low risk", Commit: "abc"}, "policy"),
		journal.Record{Role: "agent", Text: "two"},
		journal.DecisionRecord(journal.Decision{Proposal: "prop_2", Path: "knowledge/b.md", Verdict: "rejected", Why: "no source"}, "policy"),
	)
	ix := New(Options{Journal: j, Index: idx, Embedder: &flaky{name: "test:2"}, Session: "main"})
	if err := ix.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ids[0], ids[2]}, idx.allUpserted()); diff != "" {
		t.Errorf("indexed (-want +got):\n%s", diff)
	}
	if c := idx.meta[MetaCursor]; c != ids[3] {
		t.Errorf("cursor = %s, want the last decision's %s", c, ids[3])
	}
}
