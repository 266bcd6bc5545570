package journal_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
)

// ignoreResponse: Tail drops the ResponseID of records after a forgotten
// one it read.
var ignoreResponse = cmpopts.IgnoreFields(journal.Record{}, "ResponseID")

// FuzzReplay feeds arbitrary bytes to the journal as a shard file. Opening,
// tailing and scanning never fail or panic because of the content; they
// return only valid records, Tail agrees with Scan, and a record appended
// afterwards is stored intact whatever the file ended with.
func FuzzReplay(f *testing.F) {
	const (
		v1 = `{"id":"01HQ0000000000000000000001","role":"user","text":"first","ts":"2024-02-01T10:00:00Z","mode":"text"}`
		v2 = `{"id":"01HQ0000000000000000000002","role":"agent","text":"second","ts":"2024-02-01T10:00:01Z","mode":"voice","incomplete":true,"model":"m"}`
		// tomb forgets v1.
		tomb = `{"id":"01HQ0000000000000000000003","role":"system","text":"","ts":"2024-02-01T10:00:02Z","mode":"","kind":"forget","forgets":["01hq0000000000000000000001"],"by":"owner"}`
		// dec is a proposal's decision: not a turn.
		dec = `{"id":"01HQ0000000000000000000004","role":"system","text":"","ts":"2024-02-01T10:00:03Z","mode":"","kind":"decision","by":"owner","decision":{"proposal":"prop_1","path":"knowledge/a.md","verdict":"applied","commit":"abc"}}`
	)
	for _, seed := range []string{
		"",
		"\n",
		v1 + "\n",
		v1 + "\n" + v2 + "\n",
		v1 + "\n" + v2,                    // last line without newline
		v1 + "\n" + v2[:40],               // torn last line
		v1 + "\nnot json\n" + v2 + "\n",   // corrupt line in the middle
		v1 + "\n\xff\xfe\n" + v2 + "\n",   // not UTF-8
		v1 + "\r\n" + v2 + "\r\n",         // hand edited on Windows
		`{"role":"user"}` + "\n" + v1,     // no id
		`{"id":"x","role":"user"}` + "\n", // id not a ULID
		`{"id":"01hq00000000000000000000zz","role":"user"}` + "\n", // lower case id
		`{"id":"7ZZZZZZZZZZZZZZZZZZZZZZZZZ","role":"user"}` + "\n", // the last ULID there is
		"null\n[]\n{}\n\"\"\n",
		v1 + "\n" + strings.Repeat("x", 70_000) + "\n" + v2 + "\n", // spans chunks
		v1 + "\n" + v2 + "\n" + tomb + "\n",                        // a tombstone forgets v1
		v1 + "\n" + tomb + "\n" + v2 + "\n",                        // … before a later record
		v1 + "\n" + `{"id":"01HQ0000000000000000000003","role":"system","kind":"forget","forgets":["x"]}` + "\n",
		v1 + "\n" + `{"id":"01HQ0000000000000000000003","role":"system","kind":"forget"}` + "\n",
		v1 + "\n" + `{"id":"01HQ0000000000000000000003","role":"system","kind":"later"}` + "\n",
		`{"id":"01HQ0000000000000000000001","role":"user","ts":"2024-02-01T10:00:00Z","redacted":true}   ` + "\n" + v2 + "\n",
		v1 + "\n" + dec + "\n" + v2 + "\n", // a decision between turns
		v1 + "\n" + `{"id":"01HQ0000000000000000000004","role":"system","kind":"decision"}` + "\n", // says nothing
		// records of two conversations, and a conv that is no id
		v1 + "\n" + `{"id":"01HQ0000000000000000000005","role":"user","text":"x","conv":"trip-1"}` + "\n" + v2 + "\n",
		`{"id":"01HQ0000000000000000000005","role":"user","text":"x","conv":"Trip 1"}` + "\n" + v2 + "\n",
		`{"id":"01HQ0000000000000000000005","role":"user","text":"x","conv":7}` + "\n",
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "2024-02-01.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		now := func() time.Time { return time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC) }
		j, err := journal.Open(dir, journal.Options{Now: now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer j.Close()

		var scanned []journal.Record
		err = j.Scan(t.Context(), func(r journal.Record) error {
			scanned = append(scanned, r)
			return nil
		})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for i, r := range scanned {
			if _, err := ulid.ParseStrict(r.ID); err != nil || r.Role == "" || !utf8.ValidString(r.Text) {
				t.Errorf("Scan returned an invalid record %d: %+v", i, r)
			}
		}
		// Scan is the live view, the tombstones and the decisions: no
		// record it visits is forgotten by a tombstone it visits, or
		// redacted; Tail is the live view of turns alone.
		forgotten := map[string]bool{}
		var live []journal.Record
		for _, r := range scanned {
			if r.IsTombstone() {
				for _, id := range r.Forgets {
					forgotten[id] = true
				}
				continue
			}
			if r.IsDecision() {
				if r.Decision == nil || r.Decision.Proposal == "" {
					t.Errorf("Scan visited a decision that says nothing: %+v", r)
				}
				continue
			}
			if !r.IsTurn() {
				t.Errorf("Scan visited a record of unknown kind: %+v", r)
			}
			live = append(live, r)
		}
		for _, r := range live {
			if forgotten[r.ID] || r.Redacted {
				t.Errorf("Scan visited %s, which is forgotten or redacted", r.ID)
			}
		}
		for _, k := range []int{0, 1, 2, len(live), len(live) + 1} {
			tail, err := j.Tail(k)
			if err != nil {
				t.Fatalf("Tail(%d): %v", k, err)
			}
			want := live[len(live)-min(k, len(live)):]
			if len(want) == 0 {
				want = nil
			}
			if diff := cmp.Diff(want, tail, ignoreResponse); diff != "" {
				t.Errorf("Tail(%d) differs from the end of Scan (-Scan +Tail):\n%s", k, diff)
			}
		}

		// TailOf is Tail of one conversation: the end of Scan's turns
		// of that conversation.
		for _, conv := range []string{"", "trip-1"} {
			var mine []journal.Record
			for _, r := range live {
				if r.Conv != "" && !journal.ValidConversation(r.Conv) {
					t.Errorf("Scan visited %s with an invalid conv %q", r.ID, r.Conv)
				}
				if r.Conv == conv {
					mine = append(mine, r)
				}
			}
			// No first bound: the fuzzed ids need not match the shard's
			// day, which the bound relies on (as ScanAfter does).
			first := ""
			for _, k := range []int{1, len(mine) + 1} {
				tail, err := j.TailOf(conv, k, first)
				if err != nil {
					t.Fatalf("TailOf(%q, %d): %v", conv, k, err)
				}
				want := mine[len(mine)-min(k, len(mine)):]
				if len(want) == 0 {
					want = nil
				}
				if diff := cmp.Diff(want, tail, ignoreResponse); diff != "" {
					t.Errorf("TailOf(%q, %d) differs from Scan's (-Scan +TailOf):\n%s", conv, k, diff)
				}
			}
		}

		rec, err := j.Append(t.Context(), journal.Record{Role: "user", Text: "after"})
		if err != nil {
			// Only a journal whose last ID is the very last ULID may refuse.
			if len(scanned) == 0 || !strings.HasPrefix(scanned[len(scanned)-1].ID, "7ZZZZZZZZZ") || errors.Is(err, journal.ErrClosed) {
				t.Fatalf("Append: %v", err)
			}
			return
		}
		if len(scanned) > 0 && rec.ID <= scanned[len(scanned)-1].ID {
			t.Errorf("appended ID %s is not after the last ID %s", rec.ID, scanned[len(scanned)-1].ID)
		}
		tail, err := j.Tail(len(live) + 1)
		if err != nil {
			t.Fatalf("Tail after Append: %v", err)
		}
		live = append(live, rec)
		if diff := cmp.Diff(live, tail, ignoreResponse); diff != "" {
			t.Errorf("Tail after Append (-want +got):\n%s", diff)
		}

		// Purge changes no live record, and leaves no forgotten record
		// with content.
		if _, err := j.Purge(t.Context()); err != nil {
			t.Fatalf("Purge: %v", err)
		}
		tail, err = j.Tail(len(live) + 1)
		if err != nil {
			t.Fatalf("Tail after Purge: %v", err)
		}
		if diff := cmp.Diff(live, tail, ignoreResponse); diff != "" {
			t.Errorf("Tail after Purge (-want +got):\n%s", diff)
		}
		data, err = os.ReadFile(filepath.Join(dir, "2024-02-01.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			var r journal.Record
			if json.Unmarshal([]byte(line), &r) != nil || r.Kind != "" {
				continue
			}
			if id, err := ulid.ParseStrict(r.ID); err == nil && forgotten[id.String()] && r.Text != "" {
				t.Errorf("forgotten record %s keeps its text after Purge", r.ID)
			}
		}
	})
}
