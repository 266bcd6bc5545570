package journal_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
)

// TestTailOf: each conversation's tail holds its own live turns only,
// tombstones of any conversation apply, and the first bound keeps the
// shards before the conversation's first day unread.
func TestTailOf(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := day
	j := open(t, dir, journal.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	add := func(daysLater int, conv, text string) journal.Record {
		t.Helper()
		now = day.AddDate(0, 0, daysLater)
		r, err := j.Append(ctx, journal.Record{Role: "user", Text: text, Mode: "text", Conv: conv})
		if err != nil {
			t.Fatalf("Append(%q): %v", text, err)
		}
		return r
	}
	stray := add(0, "trip", "older trip record, before the bound") // in a shard the bound skips
	add(3, "", "m1")
	t1 := add(3, "trip", "t1")
	add(4, "", "m2")
	t2 := add(4, "trip", "t2")
	add(5, "work", "w1")
	t3 := add(5, "trip", "t3")
	now = day.AddDate(0, 0, 5)
	if _, err := j.Append(ctx, journal.Tombstone([]string{t2.ID}, "owner")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, conv, first string
		n                 int
		want              []string
	}{
		{"main", "", "", 10, []string{"m1", "m2"}},
		{"main newest", "", "", 1, []string{"m2"}},
		{"trip unbounded", "trip", "", 10, []string{"older trip record, before the bound", "t1", "t3"}},
		{"trip bounded skips older shards", "trip", t1.ID, 10, []string{"t1", "t3"}},
		{"trip newest", "trip", t1.ID, 1, []string{"t3"}},
		{"work", "work", "", 10, []string{"w1"}},
		{"unknown", "none", "", 10, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := j.TailOf(tt.conv, tt.n, tt.first)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
				t.Errorf("TailOf(%q, %d) (-want +got):\n%s", tt.conv, tt.n, diff)
			}
		})
	}
	_ = stray
	_ = t3
	// Tail is every conversation's.
	all, err := j.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Errorf("Tail: %d records, want 6: %v", len(all), texts(all))
	}
}

func TestAppendRejectsConv(t *testing.T) {
	j := open(t, t.TempDir(), journal.Options{})
	for _, conv := range []string{"Trip", "a b", "x/y", string(make([]byte, 65))} {
		if _, err := j.Append(context.Background(), journal.Record{Role: "user", Text: "x", Conv: conv}); err == nil {
			t.Errorf("Append with conv %q: no error", conv)
		}
	}
	if _, err := j.Append(context.Background(), journal.Record{Role: "user", Text: "x", Conv: "trip_2026-03"}); err != nil {
		t.Errorf("Append with a valid conv: %v", err)
	}
}

// TestScanAfterSkipsWithoutParsing: ScanAfter judges a line the writer
// wrote by its leading id without parsing it, and never skips a record
// after the cursor, whatever the line's shape.
func TestScanAfterSkipsWithoutParsing(t *testing.T) {
	dir := t.TempDir()
	// ids of the shard's day, so that the cursor's day reads it.
	id := func(n byte) string {
		var e [10]byte
		e[9] = n
		return ulid.MustNew(ulid.Timestamp(time.Date(2024, 2, 1, 10, 0, 0, 0, time.UTC)), bytes.NewReader(e[:])).String()
	}
	cursor := id(5)
	lines := []string{
		`{"id":"` + id(4) + `","role":"user","text":"before, as written"}`,
		`{"id":"` + cursor + `","role":"user","text":"the cursor"}`,
		`{"id":"` + strings.ToLower(id(6)) + `","role":"user","text":"after, lower case"}`,
		`{ "id": "` + id(7) + `", "role":"user","text":"after, hand edited"}`,
		`{"role":"user","id":"` + id(8) + `","text":"after, id not first"}`,
		`{"id":"` + id(9) + `","role":"user","text":"after, as written"}`,
	}
	var data string
	for _, l := range lines {
		data += l + "\n"
	}
	if err := os.WriteFile(dir+"/2024-02-01.jsonl", []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	j := open(t, dir, journal.Options{})
	var got []string
	if err := j.ScanAfter(context.Background(), cursor, func(r journal.Record) error {
		got = append(got, r.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"after, lower case", "after, hand edited", "after, id not first", "after, as written"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanAfter (-want +got):\n%s", diff)
	}
}
