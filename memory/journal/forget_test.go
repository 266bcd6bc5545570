package journal_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/journal"
)

func appendTurns(t *testing.T, j *journal.Journal, texts ...string) []journal.Record {
	t.Helper()
	var out []journal.Record
	for _, text := range texts {
		r, err := j.Append(t.Context(), journal.Record{Role: "user", Text: text, Mode: "text"})
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func ids(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func scanIDs(t *testing.T, j *journal.Journal) (live, tombs []string) {
	t.Helper()
	err := j.Scan(t.Context(), func(r journal.Record) error {
		if r.IsTombstone() {
			tombs = append(tombs, r.ID)
		} else {
			live = append(live, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return live, tombs
}

// A tombstone takes the records it names out of the live view — Tail,
// Scan, Find — across shards and across a reopen.
func TestTombstoneLiveView(t *testing.T) {
	dir := t.TempDir()
	// A day a record: the tombstone lands in a later shard than b.
	clk := newClock("2026-03-01T10:00:00Z", 24*time.Hour)
	j := open(t, dir, journal.Options{Now: clk.Now})
	recs := appendTurns(t, j, "a", "b", "c")
	a, b, c := recs[0], recs[1], recs[2]
	tomb, err := j.Append(t.Context(), journal.Tombstone([]string{strings.ToLower(b.ID)}, "owner"))
	if err != nil {
		t.Fatalf("Append tombstone: %v", err)
	}
	if !tomb.IsTombstone() || !slices.Equal(tomb.Forgets, []string{b.ID}) || tomb.By != "owner" {
		t.Fatalf("tombstone stored as %+v", tomb)
	}
	d := appendTurns(t, j, "d")[0]

	check := func(t *testing.T, j *journal.Journal) {
		tail, err := j.Tail(10)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(tail), []string{a.ID, c.ID, d.ID}; !slices.Equal(got, want) {
			t.Errorf("Tail = %v, want %v", got, want)
		}
		tail, err = j.Tail(3)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(tail), []string{a.ID, c.ID, d.ID}; !slices.Equal(got, want) {
			t.Errorf("Tail(3) = %v, want %v (the tombstone and b take no room)", got, want)
		}
		live, tombs := scanIDs(t, j)
		if want := []string{a.ID, c.ID, d.ID}; !slices.Equal(live, want) {
			t.Errorf("Scan live = %v, want %v", live, want)
		}
		if want := []string{tomb.ID}; !slices.Equal(tombs, want) {
			t.Errorf("Scan tombstones = %v, want %v", tombs, want)
		}
		// ScanAfter from a cursor before b leaves b out too.
		var after []string
		if err := j.ScanAfter(t.Context(), a.ID, func(r journal.Record) error { after = append(after, r.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if want := []string{c.ID, tomb.ID, d.ID}; !slices.Equal(after, want) {
			t.Errorf("ScanAfter(a) = %v, want %v", after, want)
		}
		found, err := j.Find(t.Context(), []string{a.ID, b.ID, "not-an-id", "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[a.ID].Text != "a" {
			t.Errorf("Find = %v, want only a", found)
		}
	}
	check(t, j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2 := open(t, dir, journal.Options{Now: clk.Now})
	check(t, j2)
	// The next id still follows the tombstone's, the newest but one.
	e := appendTurns(t, j2, "e")[0]
	if e.ID <= d.ID {
		t.Errorf("id after reopen %s is not after %s", e.ID, d.ID)
	}
}

func TestTombstoneRefused(t *testing.T) {
	j := open(t, t.TempDir(), journal.Options{})
	for name, rec := range map[string]journal.Record{
		"no ids":       journal.Tombstone(nil, "owner"),
		"not a ULID":   journal.Tombstone([]string{"x"}, "owner"),
		"unknown kind": {Role: "user", Kind: "later"},
	} {
		if _, err := j.Append(t.Context(), rec); err == nil {
			t.Errorf("%s: Append accepted %+v", name, rec)
		}
	}
}

// Purge removes the text of forgotten records from disk and nothing else:
// the line keeps its length, every other line its bytes; the shard is
// replaced whole (0600, no temporary file left), appends go on in it, and
// a reopen sees the same live view.
func TestPurge(t *testing.T) {
	dir := t.TempDir()
	clk := newClock("2026-03-01T10:00:00Z", time.Second)
	j := open(t, dir, journal.Options{Now: clk.Now})
	recs := appendTurns(t, j, "keep this", "my secret pin is 4711", "and this")
	if _, err := j.Append(t.Context(), journal.Tombstone([]string{recs[1].ID}, "owner")); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "2026-03-01.jsonl")
	before, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}

	rep, err := j.Purge(t.Context())
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if rep != (journal.PurgeReport{Records: 1, Shards: 1}) {
		t.Errorf("Purge = %+v, want 1 record in 1 shard", rep)
	}
	after, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(after, []byte("secret")) || bytes.Contains(after, []byte("4711")) {
		t.Errorf("the forgotten text is still on disk:\n%s", after)
	}
	if len(after) != len(before) {
		t.Errorf("shard is %d bytes after Purge, %d before: offsets moved", len(after), len(before))
	}
	bl, al := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	for i := range bl {
		if i == 1 {
			if !strings.Contains(al[i], `"redacted":true`) || !strings.Contains(al[i], recs[1].ID) {
				t.Errorf("redacted line = %q", al[i])
			}
			continue
		}
		if bl[i] != al[i] {
			t.Errorf("line %d changed:\n%q\n%q", i+1, bl[i], al[i])
		}
	}
	if st, err := os.Stat(shard); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("shard mode after Purge: %v, %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Purge, want the shard alone", len(entries))
	}

	next := appendTurns(t, j, "later")[0]
	want := []string{recs[0].ID, recs[2].ID, next.ID}
	tail, err := j.Tail(10)
	if err != nil || !slices.Equal(ids(tail), want) {
		t.Errorf("Tail after Purge and Append = %v, %v; want %v", ids(tail), err, want)
	}
	if rep, err := j.Purge(context.Background()); err != nil || rep != (journal.PurgeReport{}) {
		t.Errorf("second Purge = %+v, %v; want nothing to do", rep, err)
	}
	j.Close()
	j2 := open(t, dir, journal.Options{Now: clk.Now})
	tail, err = j2.Tail(10)
	if err != nil || !slices.Equal(ids(tail), want) {
		t.Errorf("Tail after reopen = %v, %v; want %v", ids(tail), err, want)
	}
}

// A provider's stored state made after a forgotten turn holds it: the live
// view does not offer it to continue from.
func TestForgetDropsLaterResponseIDs(t *testing.T) {
	j := open(t, t.TempDir(), journal.Options{})
	before, err := j.Append(t.Context(), journal.Record{Role: "agent", Text: "hi", ResponseID: "resp_1"})
	if err != nil {
		t.Fatal(err)
	}
	secret := appendTurns(t, j, "secret")[0]
	after, err := j.Append(t.Context(), journal.Record{Role: "agent", Text: "noted", ResponseID: "resp_2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(t.Context(), journal.Tombstone([]string{secret.ID}, "owner")); err != nil {
		t.Fatal(err)
	}
	tail, err := j.Tail(10)
	if err != nil || len(tail) != 2 {
		t.Fatalf("Tail = %v, %v", tail, err)
	}
	if tail[0].ID != before.ID || tail[0].ResponseID != "resp_1" {
		t.Errorf("the response before the forgotten turn: %+v", tail[0])
	}
	if tail[1].ID != after.ID || tail[1].ResponseID != "" {
		t.Errorf("the response after the forgotten turn keeps its id: %+v", tail[1])
	}
}

// A decision record is not a turn: Tail, Find and ReadShards leave it out,
// Scan and ScanAfter visit it, and a forget naming it forgets nothing.
func TestDecisionIsNotATurn(t *testing.T) {
	dir := t.TempDir()
	clk := newClock("2026-03-01T10:00:00Z", time.Second)
	j := open(t, dir, journal.Options{Now: clk.Now})
	a := appendTurns(t, j, "a")[0]
	dec, err := j.Append(t.Context(), journal.DecisionRecord(journal.Decision{Proposal: "prop_1", Path: "knowledge/x.md", Verdict: "applied", Why: "low risk", Commit: "abc"}, "policy"))
	if err != nil {
		t.Fatalf("Append decision: %v", err)
	}
	if !dec.IsDecision() || dec.IsTurn() || dec.IsTombstone() || dec.Decision.Commit != "abc" || dec.By != "policy" {
		t.Fatalf("decision stored as %+v", dec)
	}
	b := appendTurns(t, j, "b")[0]

	check := func(t *testing.T, j *journal.Journal) {
		tail, err := j.Tail(2)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(tail), []string{a.ID, b.ID}; !slices.Equal(got, want) {
			t.Errorf("Tail(2) = %v, want %v (the decision takes no room)", got, want)
		}
		var scanned []journal.Record
		if err := j.Scan(t.Context(), func(r journal.Record) error { scanned = append(scanned, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if got, want := ids(scanned), []string{a.ID, dec.ID, b.ID}; !slices.Equal(got, want) {
			t.Fatalf("Scan = %v, want %v", got, want)
		}
		if d := scanned[1].Decision; d == nil || *d != *dec.Decision {
			t.Errorf("Scan read the decision back as %+v, want %+v", d, dec.Decision)
		}
		found, err := j.Find(t.Context(), []string{a.ID, dec.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := found[dec.ID]; ok || len(found) != 1 {
			t.Errorf("Find = %v, want only a", found)
		}
		read, err := j.ReadShards(t.Context(), map[string]int64{"2026-03-01.jsonl": 0})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(read["2026-03-01.jsonl"].Records), []string{a.ID, b.ID}; !slices.Equal(got, want) {
			t.Errorf("ReadShards records = %v, want %v", got, want)
		}
	}
	check(t, j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, open(t, dir, journal.Options{Now: clk.Now}))
}

func TestDecisionRefused(t *testing.T) {
	j := open(t, t.TempDir(), journal.Options{})
	for name, rec := range map[string]journal.Record{
		"no decision":   {Role: journal.RoleSystem, Kind: journal.KindDecision},
		"no proposal":   journal.DecisionRecord(journal.Decision{Verdict: "applied"}, "owner"),
		"no verdict":    journal.DecisionRecord(journal.Decision{Proposal: "prop_1"}, "owner"),
		"forgets turns": {Role: journal.RoleSystem, Kind: journal.KindDecision, Decision: &journal.Decision{Proposal: "p", Verdict: "applied"}, Forgets: []string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}},
	} {
		if _, err := j.Append(t.Context(), rec); err == nil {
			t.Errorf("%s: Append accepted %+v", name, rec)
		}
	}
}
