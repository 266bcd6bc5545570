package journal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/internal/logtest"
	"github.com/mnemo/mnemo/memory/journal"
)

// clock is an injectable clock that moves step forward at every reading.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func newClock(start string, step time.Duration) *clock {
	t, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		panic(err) // a typo in a test constant
	}
	return &clock{t: t, step: step}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

// logBuffer collects log output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, nil))
}

func open(t *testing.T, dir string, opts journal.Options) *journal.Journal {
	t.Helper()
	j, err := journal.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func appendTexts(t *testing.T, j *journal.Journal, texts ...string) []journal.Record {
	t.Helper()
	var recs []journal.Record
	for _, text := range texts {
		rec, err := j.Append(t.Context(), journal.Record{Role: "user", Text: text, Mode: "text"})
		if err != nil {
			t.Fatalf("Append(%q): %v", text, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

func scanAll(j *journal.Journal) ([]journal.Record, error) {
	var recs []journal.Record
	err := j.Scan(context.Background(), func(r journal.Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

func texts(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

func shardNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// idsIncrease reports the first position where IDs do not strictly increase.
func idsIncrease(recs []journal.Record) error {
	for i := 1; i < len(recs); i++ {
		if recs[i].ID <= recs[i-1].ID {
			return fmt.Errorf("record %d: id %s not after %s", i, recs[i].ID, recs[i-1].ID)
		}
	}
	return nil
}

func TestAppendTail(t *testing.T) {
	dir := t.TempDir()
	clk := newClock("2024-03-09T23:59:57Z", time.Second)
	j := open(t, dir, journal.Options{Now: clk.Now})
	appended := appendTexts(t, j, "a", "b", "c", "d", "e")

	if diff := cmp.Diff([]string{"2024-03-09.jsonl", "2024-03-10.jsonl"}, shardNames(t, dir)); diff != "" {
		t.Errorf("shards (-want +got):\n%s", diff)
	}
	if err := idsIncrease(appended); err != nil {
		t.Errorf("appended IDs: %v", err)
	}
	for i, rec := range appended {
		want := time.Date(2024, 3, 9, 23, 59, 57+i, 0, time.UTC)
		if !rec.TS.Equal(want) || rec.TS.Location() != time.UTC {
			t.Errorf("record %d: TS = %v, want %v", i, rec.TS, want)
		}
	}

	tests := []struct {
		n    int
		want []string
	}{
		{n: -1, want: nil},
		{n: 0, want: nil},
		{n: 1, want: []string{"e"}},
		{n: 2, want: []string{"d", "e"}},
		{n: 3, want: []string{"c", "d", "e"}}, // crosses midnight
		{n: 5, want: []string{"a", "b", "c", "d", "e"}},
		{n: 100, want: []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d", tt.n), func(t *testing.T) {
			got, err := j.Tail(tt.n)
			if err != nil {
				t.Fatalf("Tail(%d): %v", tt.n, err)
			}
			if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
				t.Errorf("Tail(%d) texts (-want +got):\n%s", tt.n, diff)
			}
			if diff := cmp.Diff(appended[len(appended)-len(got):], got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tail(%d) records differ from what Append returned (-want +got):\n%s", tt.n, diff)
			}
		})
	}

	got, err := scanAll(j)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if diff := cmp.Diff(appended, got); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
}

func TestAppendAssigns(t *testing.T) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	given := time.Date(2024, 5, 1, 12, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		name   string
		rec    journal.Record
		wantTS time.Time
	}{
		{"zero TS is now", journal.Record{Role: "user", Text: "hi"}, now},
		{"given TS kept in UTC", journal.Record{Role: "agent", TS: given}, given.UTC()},
		{"caller ID replaced", journal.Record{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Role: "user"}, now},
		{"all fields", journal.Record{Role: "agent", Text: "x", Mode: "voice", Incomplete: true, Model: "m"}, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := open(t, t.TempDir(), journal.Options{Now: func() time.Time { return now }})
			got, err := j.Append(t.Context(), tt.rec)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			want := tt.rec
			want.ID, want.TS = got.ID, tt.wantTS
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Append (-want +got):\n%s", diff)
			}
			if got.ID == tt.rec.ID || len(got.ID) != 26 {
				t.Errorf("ID = %q, want a new ULID", got.ID)
			}
			if got.TS.Location() != time.UTC {
				t.Errorf("TS location = %v, want UTC", got.TS.Location())
			}
			stored, err := j.Tail(1)
			if err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if diff := cmp.Diff([]journal.Record{got}, stored); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendRejects(t *testing.T) {
	tests := []struct {
		name string
		rec  journal.Record
	}{
		{"no role", journal.Record{Text: "hi"}},
		{"larger than a line may be", journal.Record{Role: "user", Text: strings.Repeat("x", 5<<20)}},
		{"TS beyond year 9999", journal.Record{Role: "user", TS: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := open(t, t.TempDir(), journal.Options{})
			if _, err := j.Append(t.Context(), tt.rec); err == nil {
				t.Errorf("Append succeeded, want an error")
			}
			// The journal still works, and holds only the good record.
			good := appendTexts(t, j, "ok")
			got, err := scanAll(j)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if diff := cmp.Diff(good, got); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConcurrentAppend(t *testing.T) {
	const writers, each = 8, 50
	dir := t.TempDir()
	j := open(t, dir, journal.Options{})

	var wg sync.WaitGroup
	results := make([][]journal.Record, writers)
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec, err := j.Append(context.Background(), journal.Record{Role: "user", Text: fmt.Sprintf("w%d-%d", w, i)})
				if err != nil {
					errs[w] = err
					return
				}
				results[w] = append(results[w], rec)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Append: %v", err)
	}

	var acked []journal.Record
	for w, recs := range results {
		if err := idsIncrease(recs); err != nil {
			t.Errorf("writer %d: %v", w, err)
		}
		acked = append(acked, recs...)
	}
	slices.SortFunc(acked, func(a, b journal.Record) int { return strings.Compare(a.ID, b.ID) })

	tail, err := j.Tail(writers * each * 2)
	if err != nil {
		t.Fatalf("Tail: %v", err)
	}
	scanned, err := scanAll(j)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	for name, got := range map[string][]journal.Record{"Tail": tail, "Scan": scanned} {
		if err := idsIncrease(got); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if diff := cmp.Diff(acked, got); diff != "" {
			t.Errorf("%s differs from the acknowledged records (-want +got):\n%s", name, diff)
		}
	}
}

func TestReopen(t *testing.T) {
	tests := []struct {
		name      string
		reopenAt  string
		wantFiles []string
	}{
		{"later day", "2024-06-02T08:00:00Z", []string{"2024-06-01.jsonl", "2024-06-02.jsonl"}},
		{"same millisecond", "2024-06-01T12:00:02Z", []string{"2024-06-01.jsonl"}},
		{"clock went back a day", "2024-05-31T12:00:00Z", []string{"2024-06-01.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			j, err := journal.Open(dir, journal.Options{Now: newClock("2024-06-01T12:00:00Z", time.Second).Now})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			before := appendTexts(t, j, "a", "b", "c")
			if err := j.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			j = open(t, dir, journal.Options{Now: newClock(tt.reopenAt, 0).Now})
			got, err := j.Tail(10)
			if err != nil {
				t.Fatalf("Tail after reopen: %v", err)
			}
			if diff := cmp.Diff(before, got); diff != "" {
				t.Errorf("Tail after reopen (-want +got):\n%s", diff)
			}
			after := appendTexts(t, j, "d", "e")
			all, err := scanAll(j)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if diff := cmp.Diff(append(before, after...), all); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
			if err := idsIncrease(all); err != nil {
				t.Errorf("IDs after reopen: %v", err)
			}
			if diff := cmp.Diff(tt.wantFiles, shardNames(t, dir)); diff != "" {
				t.Errorf("shards (-want +got):\n%s", diff)
			}
		})
	}
}

// IDs are parsed case-insensitively, as ULIDs are, and returned in their
// canonical upper case, so that string order is ID order.
func TestLowerCaseID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "2024-02-01.jsonl"), `{"id":"01hq00000000000000000000zz","role":"user","text":"by hand"}`+"\n")
	j := open(t, dir, journal.Options{Now: newClock("2024-02-01T00:00:00Z", 0).Now})
	appendTexts(t, j, "new")
	got, err := j.Tail(2)
	if err != nil {
		t.Fatalf("Tail: %v", err)
	}
	if len(got) != 2 || got[0].ID != "01HQ00000000000000000000ZZ" || got[1].ID <= got[0].ID {
		t.Errorf("Tail = %+v, want the hand-written record with its ID in upper case, then a later ID", got)
	}
}

func TestAppendAfterClose(t *testing.T) {
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	appendTexts(t, j, "a")
	for i := range 2 {
		if err := j.Close(); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := j.Append(t.Context(), journal.Record{Role: "user"}); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Append after Close: got %v, want %v", err, journal.ErrClosed)
	}
	got, err := j.Tail(5)
	if err != nil {
		t.Fatalf("Tail after Close: %v", err)
	}
	if diff := cmp.Diff([]string{"a"}, texts(got)); diff != "" {
		t.Errorf("Tail after Close (-want +got):\n%s", diff)
	}
}

func TestCloseFlushesPending(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = j.Append(context.Background(), journal.Record{Role: "user"})
		})
	}
	closeErr := j.Close()
	wg.Wait()
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	// Every Append either made it in before Close, or got ErrClosed.
	stored := 0
	for _, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, journal.ErrClosed):
			t.Errorf("Append: %v", err)
		}
	}
	j = open(t, dir, journal.Options{})
	got, err := scanAll(j)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if len(got) != stored {
		t.Errorf("stored %d records, want %d (the acknowledged ones)", len(got), stored)
	}
}

func TestAppendCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The writer blocks in Now until the test lets it go, so that
		// records can be caught waiting, or being written.
		gate := make(chan struct{})
		now := func() time.Time {
			<-gate
			return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		j, err := journal.Open(t.TempDir(), journal.Options{Now: now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer j.Close()

		// "taken" is taken by the writer, which then blocks in Now.
		takenCtx, cancelTaken := context.WithCancel(t.Context())
		takenErr := make(chan error, 1)
		go func() {
			_, err := j.Append(takenCtx, journal.Record{Role: "user", Text: "taken"})
			takenErr <- err
		}()
		synctest.Wait()

		// "waiting" is queued behind it.
		waitingCtx, cancelWaiting := context.WithCancel(t.Context())
		waitingErr := make(chan error, 1)
		go func() {
			_, err := j.Append(waitingCtx, journal.Record{Role: "user", Text: "waiting"})
			waitingErr <- err
		}()
		synctest.Wait()

		cancelWaiting()
		cancelTaken()
		synctest.Wait()
		select {
		case err := <-waitingErr:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Append of a waiting record after cancel: got %v, want %v", err, context.Canceled)
			}
		default:
			t.Errorf("Append of a waiting record still blocked after cancel")
		}
		select {
		case err := <-takenErr:
			t.Errorf("Append of a record being written returned %v on cancel, want it to wait for the write", err)
		default:
		}

		gate <- struct{}{} // let the writer write "taken"
		if err := <-takenErr; err != nil {
			t.Errorf("Append of a record being written, canceled: got %v, want success", err)
		}

		got, err := scanAll(j)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if diff := cmp.Diff([]string{"taken"}, texts(got)); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := j.Append(ctx, journal.Record{Role: "user"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Append with a canceled context: got %v, want %v", err, context.Canceled)
		}
	})
}

func TestScanStops(t *testing.T) {
	j := open(t, t.TempDir(), journal.Options{})
	appendTexts(t, j, "a", "b", "c")
	stop := errors.New("stop")

	var seen []string
	err := j.Scan(t.Context(), func(r journal.Record) error {
		seen = append(seen, r.Text)
		if r.Text == "b" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("Scan: got %v, want %v", err, stop)
	}
	if diff := cmp.Diff([]string{"a", "b"}, seen); diff != "" {
		t.Errorf("Scan visited (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = j.Scan(ctx, func(journal.Record) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a canceled context: got %v, want %v", err, context.Canceled)
	}
}

func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	clk := newClock("2024-02-01T10:00:00Z", time.Millisecond)
	j, err := journal.Open(dir, journal.Options{Now: clk.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	before := appendTexts(t, j, "a", "b", "c")
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A crash in the middle of writing a line.
	const fragment = `{"id":"01HQ0000000000000000000000","role":"user","text":"SECRET tor`
	shard := filepath.Join(dir, "2024-02-01.jsonl")
	appendBytes(t, shard, []byte(fragment))

	var logs logBuffer
	j = open(t, dir, journal.Options{Now: clk.Now, Log: logs.logger()})
	after := appendTexts(t, j, "d")

	want := append(before, after...)
	got, err := j.Tail(10)
	if err != nil {
		t.Fatalf("Tail: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
	scanned, err := scanAll(j)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if diff := cmp.Diff(want, scanned); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}

	// The fragment is kept, as a line of its own.
	data, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("\n"+fragment+"\n{")) {
		t.Errorf("shard does not hold the fragment as its own line:\n%s", data)
	}
	if !strings.Contains(logs.String(), "torn last line") {
		t.Errorf("log does not report the torn line:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("log quotes the journal's content:\n%s", logs.String())
	}
}

func TestCorruptLine(t *testing.T) {
	const (
		valid1 = `{"id":"01HQ0000000000000000000001","role":"user","text":"first","ts":"2024-02-01T10:00:00Z","mode":"text"}`
		valid2 = `{"id":"01HQ0000000000000000000002","role":"agent","text":"second","ts":"2024-02-01T10:00:01Z","mode":"text"}`
	)
	tests := []struct {
		name    string
		line    string
		wantLog bool
	}{
		{"not JSON", "SECRET not json", true},
		{"truncated JSON", `{"id":"01HQ0000000000000000000009","role":"user","text":"SECRET`, true},
		{"not UTF-8", "{\"id\":\"01HQ0000000000000000000009\",\"role\":\"user\",\"text\":\"SECRET \xff\xfe\"}", true},
		{"no id", `{"role":"user","text":"SECRET"}`, true},
		{"id not a ULID", `{"id":"SECRET","role":"user"}`, true},
		{"no role", `{"id":"01HQ0000000000000000000009","text":"SECRET"}`, true},
		{"wrong type", `{"id":"01HQ0000000000000000000009","role":"user","text":["SECRET"]}`, true},
		{"bad time", `{"id":"01HQ0000000000000000000009","role":"user","ts":"SECRET"}`, true},
		{"JSON array", `["SECRET"]`, true},
		{"null", `null`, true},
		{"blank", `   `, true},
		{"empty line", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "2024-02-01.jsonl"), valid1+"\n"+tt.line+"\n"+valid2+"\n")
			log, logs := logtest.New()
			j := open(t, dir, journal.Options{Log: log})

			got, err := j.Tail(10)
			if err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if diff := cmp.Diff([]string{"first", "second"}, texts(got)); diff != "" {
				t.Errorf("Tail (-want +got):\n%s", diff)
			}
			scanned, err := scanAll(j)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if diff := cmp.Diff(got, scanned); diff != "" {
				t.Errorf("Scan differs from Tail (-Tail +Scan):\n%s", diff)
			}
			// Tail meets the line first, and warns; Scan meets it again,
			// and says so at debug level only.
			warns := logs.Lines(slog.LevelWarn, "skipping line")
			if want := map[bool]int{true: 1, false: 0}[tt.wantLog]; len(warns) != want {
				t.Errorf("warnings of a skipped line = %q, want %d", warns, want)
			}
			if tt.wantLog && len(logs.Lines(slog.LevelDebug, "line=2")) != 1 {
				t.Errorf("log does not give the line number 2 from Scan:\n%s", logs)
			}
			if strings.Contains(logs.String(), "SECRET") {
				t.Errorf("log quotes the journal's content:\n%s", logs)
			}
		})
	}
}

func TestLongLine(t *testing.T) {
	const (
		valid1 = `{"id":"01HQ0000000000000000000001","role":"user","text":"first"}`
		valid2 = `{"id":"01HQ0000000000000000000002","role":"user","text":"second"}`
	)
	tests := []struct {
		name     string
		text     int
		wantText []string
	}{
		{"spans chunks, kept", 200 << 10, []string{"first", "long", "second"}},
		{"just under the limit, kept", 4<<20 - 100, []string{"first", "long", "second"}},
		{"over the limit, skipped", 5 << 20, []string{"first", "second"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			long := `{"id":"01HQ0000000000000000000003","role":"user","text":"long","model":"` + strings.Repeat("x", tt.text) + `"}`
			writeFile(t, filepath.Join(dir, "2024-02-01.jsonl"), valid1+"\n"+long+"\n"+valid2+"\n")
			j := open(t, dir, journal.Options{})
			got, err := j.Tail(10)
			if err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if diff := cmp.Diff(tt.wantText, texts(got)); diff != "" {
				t.Errorf("Tail (-want +got):\n%s", diff)
			}
			scanned, err := scanAll(j)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if diff := cmp.Diff(tt.wantText, texts(scanned)); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGarbageAfterCrash stands in for kill -9: whatever a crash leaves at
// the end of the shard, every acknowledged record survives, and appending
// goes on.
func TestGarbageAfterCrash(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := t.TempDir()
			clk := newClock("2024-04-01T09:00:00Z", time.Millisecond)
			j, err := journal.Open(dir, journal.Options{Now: clk.Now})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var acked []journal.Record
			for i := range 20 {
				acked = append(acked, appendTexts(t, j, fmt.Sprintf("turn %d", i))...)
			}
			j.Close()

			rng := rand.New(rand.NewPCG(seed, seed))
			garbage := make([]byte, 1+rng.IntN(4096))
			for i := range garbage {
				garbage[i] = byte(rng.Uint32())
			}
			if garbage[len(garbage)-1] == '\n' {
				garbage[len(garbage)-1] = '{'
			}
			appendBytes(t, filepath.Join(dir, "2024-04-01.jsonl"), garbage)

			j = open(t, dir, journal.Options{Now: clk.Now})
			acked = append(acked, appendTexts(t, j, "after the crash")...)
			got, err := scanAll(j)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if diff := cmp.Diff(acked, got); diff != "" {
				t.Errorf("Scan (-acknowledged +got):\n%s", diff)
			}
			tail, err := j.Tail(len(acked))
			if err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if diff := cmp.Diff(acked, tail); diff != "" {
				t.Errorf("Tail (-acknowledged +got):\n%s", diff)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "threads")
	j := open(t, dir, journal.Options{Now: newClock("2024-07-01T00:00:00Z", 0).Now})
	// Files that are not shards are left alone.
	writeFile(t, filepath.Join(dir, "notes.txt"), "SECRET not a shard\n")
	writeFile(t, filepath.Join(dir, "2024-13-01.jsonl"), "SECRET not a date\n")
	appendTexts(t, j, "a <&>")

	got, err := scanAll(j)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if diff := cmp.Diff([]string{"a <&>"}, texts(got)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	// One record, one line, readable by hand.
	shard, err := os.ReadFile(filepath.Join(dir, "2024-07-01.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(shard, []byte("\n")) || bytes.Count(shard, []byte("\n")) != 1 || !bytes.Contains(shard, []byte(`"text":"a <&>"`)) {
		t.Errorf("shard = %q, want one line with the text unescaped", shard)
	}
	if runtime.GOOS == "windows" {
		return
	}
	for path, want := range map[string]fs.FileMode{
		dir:                                    fs.ModeDir | 0o700,
		filepath.Join(dir, "2024-07-01.jsonl"): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("Stat: %v", err)
			continue
		}
		if got := st.Mode(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestScanAfter(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	now := day
	j, err := journal.Open(dir, journal.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var ids []string
	for i := range 6 {
		now = day.Add(time.Duration(i) * 12 * time.Hour) // spans four shards
		rec, err := j.Append(context.Background(), journal.Record{Role: "user", Text: fmt.Sprint(i), Mode: "text"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	for _, tt := range []struct {
		after string
		want  []string
	}{
		{"", ids},
		{ids[0], ids[1:]},
		{ids[3], ids[4:]},
		{ids[5], nil},
	} {
		var got []string
		if err := j.ScanAfter(context.Background(), tt.after, func(r journal.Record) error {
			got = append(got, r.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ScanAfter(%q) (-want +got):\n%s", tt.after, diff)
		}
	}
}
