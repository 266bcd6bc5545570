package vault

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const goodID = "01JABCDEFGHJKMNPQRSTVWXYZ0"

const goodNote = `---
id: 01JABCDEFGHJKMNPQRSTVWXYZ0
title: "Interaction preferences"
type: preference
status: active
tags: [voice, ux]
confidence: 0.75
created_at: 2026-01-30T10:12:00Z
updated_at: 2026-01-30T10:40:00+01:00
sources:
  - thread: "2026-01-30"
    turn: 01JTURN
    excerpt_sha256: abc
supersedes: []
colour: blue
---
## What to do
- Prefer minimal upfront design.
`

func TestParseNote(t *testing.T) {
	n, err := ParseNote("prefs.md", []byte(goodNote))
	if err != nil {
		t.Fatal(err)
	}
	want := &Note{
		ID: goodID, Title: "Interaction preferences", Type: "preference", Status: Active,
		Tags: []string{"voice", "ux"}, Confidence: 0.75,
		CreatedAt:  time.Date(2026, 1, 30, 10, 12, 0, 0, time.UTC),
		UpdatedAt:  time.Date(2026, 1, 30, 9, 40, 0, 0, time.UTC),
		Sources:    []Source{{Thread: "2026-01-30", Turn: "01JTURN", ExcerptSHA256: "abc"}},
		Supersedes: []string{},
		Body:       []byte("## What to do\n- Prefer minimal upfront design.\n"),
	}
	if diff := cmp.Diff(want, n, cmpopts.IgnoreUnexported(Note{})); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	out := n.Format()
	if !bytes.Contains(out, []byte("colour: blue\n")) {
		t.Errorf("unknown key not kept:\n%s", out)
	}
	again, err := ParseNote("prefs.md", out)
	if err != nil {
		t.Fatalf("formatted note does not parse: %v\n%s", err, out)
	}
	if !bytes.Equal(again.Format(), out) {
		t.Errorf("format not stable:\n%s\n---\n%s", out, again.Format())
	}
}

func TestParseNoteDefaults(t *testing.T) {
	n, err := ParseNote("x.md", []byte("---\nid: "+goodID+"\ntitle: x\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "note" || n.Status != Active || len(n.Body) != 0 {
		t.Errorf("defaults: type %q status %q body %q", n.Type, n.Status, n.Body)
	}
}

func TestParseNoteErrors(t *testing.T) {
	head := "---\nid: " + goodID + "\ntitle: t\n" // lines 1-3
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"no front matter", "# hello\n", 1, "starts with a line"},
		{"empty file", "", 1, "starts with a line"},
		{"not closed", head + "body\n", 1, "not closed"},
		{"empty front matter", "---\n---\nbody", 2, "empty"},
		{"yaml syntax", head + "tags: [a, b\n---\n", 4, "front matter"},
		{"bad indentation", head + "sources:\n  - thread: a\n   turn: b\n---\n", 6, "front matter"},
		{"tab", head + "type:\tx: y\n---\n", 4, "front matter"},
		{"not a mapping", "---\n- a\n- b\n---\n", 2, "mapping"},
		{"missing id", "---\ntitle: t\n---\n", 2, "id is missing"},
		{"bad id", "---\nid: mem_1\ntitle: t\n---\n", 2, "ULID"},
		{"missing title", "---\nid: " + goodID + "\n---\n", 2, "title is missing"},
		{"bad status", head + "status: maybe\n---\n", 4, "status"},
		{"confidence too big", head + "confidence: 1.5\n---\n", 4, "0 to 1"},
		{"confidence NaN", head + "confidence: .nan\n---\n", 4, "0 to 1"},
		{"confidence text", head + "confidence: high\n---\n", 4, "0 to 1"},
		{"bad time", head + "created_at: yesterday\n---\n", 4, "created_at"},
		{"tags not list", head + "tags: a\n---\n", 4, "list"},
		{"tag not text", head + "tags:\n  - a\n  - [b]\n---\n", 6, "list of text"},
		{"source unknown key", head + "sources:\n  - thread: a\n    colour: b\n---\n", 6, "unknown key"},
		{"duplicate key", head + "title: again\n---\n", 4, "twice"},
		{"alias", head + "x: &a 1\ny: *a\n---\n", 4, "aliases"},
		{"null title", "---\nid: " + goodID + "\ntitle: ~\n---\n", 3, "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNote("knowledge/x.md", []byte(tc.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *ParseError", err)
			}
			if pe.File != "knowledge/x.md" || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("got %q (line %d), want line %d containing %q", err, pe.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestFormatNoteRoundTrip(t *testing.T) {
	n := &Note{
		ID: goodID, Title: "a: title with # and 'quotes'\nand a newline", Type: "person",
		Status: Superseded, Tags: []string{"yes", "1", ""}, Confidence: 0.1,
		CreatedAt:       time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		LastConfirmedAt: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC),
		Sources:         []Source{{Thread: "t"}, {}},
		Supersedes:      []string{"01JABCDEFGHJKMNPQRSTVWXYZ1"},
		SupersededBy:    []string{"01JABCDEFGHJKMNPQRSTVWXYZ2"},
		Body:            []byte("---\nnot front matter\n"),
	}
	out := n.Format()
	got, err := ParseNote("x.md", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if diff := cmp.Diff(n, got, cmpopts.IgnoreUnexported(Note{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got)\n%s\n%s", diff, out)
	}
}

func FuzzParseNote(f *testing.F) {
	f.Add([]byte(goodNote))
	f.Add([]byte("---\nid: " + goodID + "\ntitle: t\n---\n"))
	f.Add([]byte("---\nid: " + goodID + "\ntitle: t\nx: {a: [1, 2]}\ny: !!binary aGk=\n---\nbody"))
	f.Add([]byte("---\r\nid: " + goodID + "\r\ntitle: t\r\n...\r\n"))
	f.Add([]byte("---\n[\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseNote("f.md", b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *ParseError: %v", err)
			}
			return
		}
		out := n.Format()
		n2, err := ParseNote("f.md", out)
		if err != nil {
			t.Fatalf("formatted note does not parse: %v\n%q\nfrom %q", err, out, b)
		}
		if out2 := n2.Format(); !bytes.Equal(out, out2) {
			t.Fatalf("format not stable:\n%q\n%q", out, out2)
		}
	})
}
