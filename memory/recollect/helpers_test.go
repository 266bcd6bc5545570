package recollect

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/indexer"
)

// session is the conversation id of the tests' documents and hits.
const session = "main"

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// openJournal is a journal in a temp dir holding recs, closed when the
// test ends; it returns the records as stored.
func openJournal(t testing.TB, recs ...journal.Record) (*journal.Journal, []journal.Record) {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var stored []journal.Record
	for _, r := range recs {
		if r.Mode == "" {
			r.Mode = memory.ModeText
		}
		got, err := j.Append(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got)
	}
	return j, stored
}

// openIndex is a lexical-only embedded index in a temp dir holding docs,
// closed when the test ends.
func openIndex(t *testing.T, docs ...recall.Doc) *embedded.Index {
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
	return ix
}

// openMemory is a Memory over j whose recall is already open on a
// lexical-only index holding docs.
func openMemory(t *testing.T, j *journal.Journal, docs ...recall.Doc) *Memory {
	t.Helper()
	o := Options{Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)}
	m := New(o)
	m.rs = newSystem(openIndex(t, docs...), nil, "embedded", m.o)
	return m
}

// gardenDocs are n turn and n tool documents about the garden, each text
// starting with its id.
func gardenDocs(n int) []recall.Doc {
	ts := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var docs []recall.Doc
	for i := range n {
		id := fmt.Sprintf("turn%02d", i)
		docs = append(docs, recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Channel: "chat", Session: session, TS: ts,
			Text: id + " we planted tomatoes in the garden " + strings.Repeat("and basil ", 5*i)})
		id = fmt.Sprintf("tool%02d", i)
		docs = append(docs, recall.Doc{ID: id, Kind: recall.KindTool, Role: "tool", Channel: "weather", Session: session, TS: ts,
			Text: id + " tool weather (garden tomatoes need rain) \n" + strings.Repeat("rain tomorrow ", 5*i)})
	}
	// A long turn cut into chunks: the window holding its record excludes
	// every chunk.
	docs = append(docs, recall.Doc{ID: "chunked#1", Kind: recall.KindTurn, Role: "agent", Session: session, TS: ts, Text: "chunked garden tomatoes"})
	return docs
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// docsOf are the documents the indexer makes of recs.
func docsOf(recs []journal.Record) []recall.Doc {
	var docs []recall.Doc
	for _, r := range recs {
		docs = append(docs, indexer.Docs(r, session)...)
	}
	return docs
}
