package journal_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/journal"
)

// jumpClock reads its times in order, then repeats the last.
type jumpClock struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.times[0]
	if len(c.times) > 1 {
		c.times = c.times[1:]
	}
	return t
}

// The clock jumping back while hearth runs (NTP stepping it, a suspended
// laptop's RTC) keeps appends in order: ids still increase, Tail and Scan
// give the records as appended, and a jump back across midnight keeps
// writing the newest shard.
func TestClockJumpsWhileRunning(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name  string
		times []string
		files []string
	}{
		{"back an hour", []string{"2026-03-01T10:00:00Z", "2026-03-01T09:00:00Z", "2026-03-01T09:00:01Z"}, []string{"2026-03-01.jsonl"}},
		{"back across midnight", []string{"2026-03-02T00:10:00Z", "2026-03-01T23:50:00Z", "2026-03-01T23:59:59Z"}, []string{"2026-03-02.jsonl"}},
		{"forward a year, then back", []string{"2026-03-01T10:00:00Z", "2027-03-01T10:00:00Z", "2026-03-01T10:00:01Z"}, []string{"2026-03-01.jsonl", "2027-03-01.jsonl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &jumpClock{}
			for _, s := range tc.times {
				c.times = append(c.times, at(s))
			}
			dir := t.TempDir()
			j := open(t, dir, journal.Options{Now: c.Now})
			var want []journal.Record
			for _, text := range []string{"one", "two", "three"} {
				want = append(want, appendTexts(t, j, text)...)
			}
			if err := idsIncrease(want); err != nil {
				t.Errorf("ids across the jumps: %v", err)
			}
			got, err := j.Tail(10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Tail (-want +got):\n%s", diff)
			}
			all, err := scanAll(j)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, all); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.files, shardNames(t, dir)); diff != "" {
				t.Errorf("shards (-want +got):\n%s", diff)
			}
		})
	}
}
