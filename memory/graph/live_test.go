package graph

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

func appendAll(t *testing.T, j *journal.Journal, texts ...string) []journal.Record {
	t.Helper()
	var out []journal.Record
	for _, s := range texts {
		r, err := j.Append(context.Background(), journal.Record{Role: memory.RoleUser, Text: s, Mode: memory.ModeText})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

type liveRun struct {
	l      *Live
	loaded chan int
	stop   func()
	done   chan error
}

func startLive(t *testing.T, j *journal.Journal, dir string) *liveRun {
	t.Helper()
	r := &liveRun{loaded: make(chan int, 4), done: make(chan error, 1)}
	r.l = NewLive(LiveOptions{IndexDir: dir, Archetype: companion(t), Journal: j, Session: "main", SaveEvery: 1, Loaded: func(n int) { r.loaded <- n }})
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = func() {
		cancel()
		if err := <-r.done; err != nil {
			t.Error(err)
		}
	}
	go func() { r.done <- r.l.Run(ctx) }()
	<-r.loaded
	return r
}

func ids(es []Entity) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestLive(t *testing.T) {
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	dir := t.TempDir()
	appendAll(t, j, "I had lunch with Ana Lima in Lisbon.", "Ana moved to Porto with Rui.")

	run := startLive(t, j, dir)
	if got := ids(run.l.Graph().Find(Query{Name: "ana"})); !reflect.DeepEqual(got, []string{"ana-lima"}) {
		t.Fatalf("after the rebuild Find(ana) = %q", got)
	}
	// A committed record is told and counted at once.
	for _, r := range appendAll(t, j, "Rui flew to Berlin.") {
		run.l.Observe(r)
	}
	if got := ids(run.l.Graph().Find(Query{Name: "berlin"})); len(got) != 1 {
		t.Errorf("an observed record's entity is not found: %q", got)
	}
	run.stop()
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); err != nil {
		t.Fatalf("no index saved: %v", err)
	}

	// Records appended while hearth was stopped are caught up from the
	// index's last event: the same graph as a rebuild from the journal.
	appendAll(t, j, "Ana and Rui visited Lisbon again.")
	run = startLive(t, j, dir)
	fresh := startLive(t, j, t.TempDir())
	if got, want := run.l.Graph().Entities(), fresh.l.Graph().Entities(); !reflect.DeepEqual(got, want) {
		t.Errorf("caught-up entities differ from a rebuild:\n%+v\n%+v", got, want)
	}
	if got, want := run.l.Graph().Relations(), fresh.l.Graph().Relations(); !reflect.DeepEqual(got, want) {
		t.Errorf("caught-up relations differ from a rebuild")
	}
	fresh.stop()

	// A forget rebuilds the graph without the forgotten turn.
	var porto string
	if err := j.Scan(context.Background(), func(r journal.Record) error {
		if r.Text == "Ana moved to Porto with Rui." {
			porto = r.ID
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tomb, err := j.Append(context.Background(), journal.Tombstone([]string{porto}, "owner"))
	if err != nil {
		t.Fatal(err)
	}
	run.l.Observe(tomb)
	<-run.loaded
	if got := run.l.Graph().Find(Query{Name: "porto"}); len(got) != 0 {
		t.Errorf("a forgotten turn's entity is still found: %q", ids(got))
	}
	run.stop()
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Load(filepath.Join(dir, IndexFile), companion(t)); err != nil || len(g.Find(Query{Name: "porto"})) != 0 {
		t.Errorf("the saved index still names the forgotten entity (err %v): %d bytes", err, len(b))
	}
}

type failingScanner struct{}

func (failingScanner) ScanAfter(context.Context, string, func(journal.Record) error) error {
	return os.ErrPermission
}

// TestLiveJournalUnreadable: Run returns the error and saves nothing, and
// the records told afterwards are counted rather than held without bound.
func TestLiveJournalUnreadable(t *testing.T) {
	dir := t.TempDir()
	l := NewLive(LiveOptions{IndexDir: dir, Archetype: companion(t), Journal: failingScanner{}})
	if err := l.Run(context.Background()); err == nil {
		t.Fatal("Run over an unreadable journal: no error")
	}
	l.Observe(journal.Record{ID: "01A", Role: memory.RoleUser, Text: "Ana is here."})
	if got := l.Graph().Find(Query{Name: "ana"}); len(got) != 1 {
		t.Errorf("a record told after the failure is not counted: %+v", got)
	}
	if l.held != nil {
		t.Errorf("%d records held", len(l.held))
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); !os.IsNotExist(err) {
		t.Errorf("an index was saved: %v", err)
	}
}
