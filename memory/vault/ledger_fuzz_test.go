package vault

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// FuzzReadLedger feeds arbitrary bytes as audit/ledger.jsonl: reading it
// never fails or panics because of the content; every non-blank line is
// either an entry with a path or counted as skipped; and an entry
// appended afterwards reads back intact after the ones already there,
// whatever the file ended with (a torn last line spoils only itself).
func FuzzReadLedger(f *testing.F) {
	const (
		e1 = `{"ts":"2026-01-02T03:04:05Z","op":"create","path":"knowledge/a.md","author":"agent","reason":"new","after_sha":"abc","commit":"c1"}`
		e2 = `{"ts":"2026-01-02T03:04:06Z","op":"delete","path":"knowledge/a.md","author":"owner","reason":"gone","before_sha":"abc","commit_error":"disk full"}`
	)
	for _, s := range []string{
		"",
		e1 + "\n",
		e1 + "\n" + e2 + "\n",
		e1 + "\n" + e2[:50],          // torn last line after a crash
		e1 + "\n\n   \n" + e2 + "\n", // blank lines
		e1 + "\nnot json\n" + e2,     // a hand edit
		`{"op":"create"}` + "\n",     // no path
		e1 + "\r\n" + e2 + "\r\n",    // edited on Windows
		"\xff\xfe\n" + e1,
		"null\n[]\n{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		// The month's file the append below goes to.
		path := filepath.Join(dir, filepath.FromSlash(LedgerDir), "2026-02.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, skipped, err := ReadLedger(dir)
		if err != nil {
			t.Fatalf("ReadLedger: %v", err)
		}
		lines := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		if len(entries)+skipped != lines {
			t.Fatalf("%d entries + %d skipped for %d lines", len(entries), skipped, lines)
		}
		for i, e := range entries {
			if e.Path == "" {
				t.Fatalf("entry %d has no path: %+v", i, e)
			}
		}
		next := Entry{TS: time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC), Op: OpUpdate, Path: "knowledge/b.md", Author: "owner", Reason: "after"}
		if err := appendLedger(dir, next.TS, next); err != nil {
			t.Fatalf("appendLedger: %v", err)
		}
		after, _, err := ReadLedger(dir)
		if err != nil {
			t.Fatalf("ReadLedger after append: %v", err)
		}
		if len(after) == 0 || !reflect.DeepEqual(after[len(after)-1], next) {
			t.Fatalf("the appended entry did not read back last: %+v", after)
		}
		// The entries already there are all still there, and nothing else:
		// terminating a torn last line neither spoils nor revives it.
		if len(after) != len(entries)+1 || (len(entries) > 0 && !reflect.DeepEqual(after[:len(entries)], entries)) {
			t.Fatalf("entries before the append changed:\n%+v\n%+v", entries, after)
		}
	})
}
