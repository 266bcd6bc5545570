package recallbench

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const validJSONL = `{"type":"meta","name":"tiny","separate":["5"],"categories":{"1":"multi-hop"}}
# comments and blank lines are skipped

{"type":"query","group":"g1","id":"q1","text":"Where did I park?","date":"2023-05-09","relevant":["d2","d2","d1"],"category":"1"}
{"type":"doc","group":"g1","id":"d1","text":"I parked on level 3.","ts":"2023-05-08T13:56:00Z","speaker":"Ada","session":"1"}
{"type":"doc","group":"g1","id":"d2","text":"Near the blue door.","ts":"2023-05-08T13:56:01+02:00"}
{"type":"doc","group":"g2","id":"d1","text":"Other group, same id."}
{"type":"query","group":"g2","id":"q1","text":"Same query id, other group","relevant":["d1"],"category":"5"}
`

func validDataset() *Dataset {
	return &Dataset{
		Name:       "tiny",
		Separate:   []string{"5"},
		Categories: map[string]string{"1": "multi-hop"},
		Groups: []*Group{
			{
				ID: "g1",
				Docs: []Doc{
					{ID: "d1", Text: "I parked on level 3.", TS: time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC), Speaker: "Ada", Session: "1"},
					{ID: "d2", Text: "Near the blue door.", TS: time.Date(2023, 5, 8, 11, 56, 1, 0, time.UTC)},
				},
				Queries: []Query{{ID: "q1", Text: "Where did I park?", Date: time.Date(2023, 5, 9, 0, 0, 0, 0, time.UTC), Relevant: []string{"d2", "d1"}, Category: "1"}},
			},
			{
				ID:      "g2",
				Docs:    []Doc{{ID: "d1", Text: "Other group, same id."}},
				Queries: []Query{{ID: "q1", Text: "Same query id, other group", Relevant: []string{"d1"}, Category: "5"}},
			},
		},
	}
}

// timeEqual compares instants, not locations.
var timeEqual = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"whole", strings.NewReader(validJSONL)},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(validJSONL))},
		{"half reads", iotest.HalfReader(strings.NewReader(validJSONL))},
		{"CRLF", strings.NewReader(strings.ReplaceAll(validJSONL, "\n", "\r\n"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSONL(tt.r, ReadOptions{})
			if err != nil {
				t.Fatalf("ReadJSONL: %v", err)
			}
			if diff := cmp.Diff(validDataset(), got, timeEqual); diff != "" {
				t.Errorf("ReadJSONL mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadJSONLErrors(t *testing.T) {
	doc := `{"type":"doc","group":"g","id":"d1","text":"hello"}` + "\n"
	tests := []struct {
		name     string
		in       string
		maxLine  int
		wantLine int // 0: not a LineError
		wantErr  error
	}{
		{"bad json", doc + "{\"type\":\n", 0, 2, nil},
		{"two values", doc + `{"type":"meta"} {"type":"meta"}`, 0, 2, nil},
		{"unknown field", `{"type":"doc","group":"g","id":"d","text":"x","speeker":"Ada"}`, 0, 1, nil},
		{"unknown type", `{"type":"turn","group":"g","id":"d","text":"x"}`, 0, 1, nil},
		{"missing type", `{"group":"g","id":"d","text":"x"}`, 0, 1, nil},
		{"doc without group", `{"type":"doc","id":"d","text":"x"}`, 0, 1, nil},
		{"doc without id", `{"type":"doc","group":"g","text":"x"}`, 0, 1, nil},
		{"doc without text", `{"type":"doc","group":"g","id":"d","text":"  "}`, 0, 1, nil},
		{"doc with relevant", `{"type":"doc","group":"g","id":"d","text":"x","relevant":["d"]}`, 0, 1, nil},
		{"bad ts", `{"type":"doc","group":"g","id":"d","text":"x","ts":"yesterday"}`, 0, 1, nil},
		{"duplicate doc", doc + "\n" + doc, 0, 3, nil},
		{"query without relevant", doc + `{"type":"query","group":"g","id":"q","text":"x"}`, 0, 2, nil},
		{"query with empty relevant id", doc + `{"type":"query","group":"g","id":"q","text":"x","relevant":[""]}`, 0, 2, nil},
		{"query with ts", doc + `{"type":"query","group":"g","id":"q","text":"x","relevant":["d1"],"ts":"2023-01-01"}`, 0, 2, nil},
		{"bad date", doc + `{"type":"query","group":"g","id":"q","text":"x","relevant":["d1"],"date":"May 8"}`, 0, 2, nil},
		{"duplicate query", doc + `{"type":"query","group":"g","id":"q","text":"x","relevant":["d1"]}` + "\n" + `{"type":"query","group":"g","id":"q","text":"y","relevant":["d1"]}`, 0, 3, nil},
		{"unknown relevant id", `{"type":"query","group":"g","id":"q","text":"x","relevant":["d9"]}` + "\n" + doc, 0, 1, nil},
		{"meta with doc fields", `{"type":"meta","id":"x"}`, 0, 1, nil},
		{"line too long", doc + `{"type":"doc","group":"g","id":"d2","text":"` + strings.Repeat("x", 100) + `"}`, 80, 2, ErrLineTooLong},
		{"long line of spaces", doc + strings.Repeat(" ", 200), 80, 2, ErrLineTooLong},
		{"queries without docs", `{"type":"query","group":"g","id":"q","text":"x","relevant":["d1"]}`, 0, 1, nil},
		{"empty", "", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(tt.in), ReadOptions{MaxLine: tt.maxLine})
			if err == nil {
				t.Fatalf("ReadJSONL(%q): no error", tt.in)
			}
			var le *LineError
			switch {
			case tt.wantLine == 0 && errors.As(err, &le):
				t.Errorf("ReadJSONL: got line error %v, want an error about the whole file", err)
			case tt.wantLine != 0 && !errors.As(err, &le):
				t.Errorf("ReadJSONL: got %v, want a *LineError", err)
			case tt.wantLine != 0 && le.Line != tt.wantLine:
				t.Errorf("ReadJSONL: got error on line %d (%v), want line %d", le.Line, err, tt.wantLine)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadJSONL: got %v, want errors.Is %v", err, tt.wantErr)
			}
		})
	}
}

func TestReadJSONLLineLimit(t *testing.T) {
	// A line of exactly MaxLine bytes is accepted.
	l := `{"type":"doc","group":"g","id":"d","text":"x"}`
	if _, err := ReadJSONL(strings.NewReader(l+"\n"+`{"type":"query","group":"g","id":"q","text":"x","relevant":["d"]}`), ReadOptions{MaxLine: 70}); err != nil {
		t.Errorf("ReadJSONL with a line at the limit: %v", err)
	}
	if _, err := ReadJSONL(strings.NewReader(l), ReadOptions{MaxLine: len(l)}); err != nil {
		t.Errorf("ReadJSONL with MaxLine %d and a line of %d bytes: %v", len(l), len(l), err)
	}
	if _, err := ReadJSONL(strings.NewReader(l), ReadOptions{MaxLine: len(l) - 1}); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("ReadJSONL with MaxLine %d and a line of %d bytes: got %v, want ErrLineTooLong", len(l)-1, len(l), err)
	}
}

func TestReadPath(t *testing.T) {
	dir := t.TempDir()
	// Docs and queries split over two files in one directory; a file of
	// another extension is ignored.
	lines := strings.SplitAfter(validJSONL, "\n")
	files := map[string]string{
		"a-queries.jsonl": lines[0] + lines[3] + lines[6],
		"b-docs.jsonl":    lines[4] + lines[5] + lines[7],
		"notes.txt":       "not a dataset",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadPath(dir, ReadOptions{})
	if err != nil {
		t.Fatalf("ReadPath(dir): %v", err)
	}
	want := validDataset()
	// Groups appear in first-seen order: g1 (a query), then g2.
	if diff := cmp.Diff(want, got, timeEqual); diff != "" {
		t.Errorf("ReadPath(dir) mismatch (-want +got):\n%s", diff)
	}

	// An error names the file and line.
	bad := filepath.Join(dir, "c-bad.jsonl")
	if err := os.WriteFile(bad, []byte("\n{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadPath(dir, ReadOptions{})
	var le *LineError
	if !errors.As(err, &le) || le.File != bad || le.Line != 2 {
		t.Errorf("ReadPath with a bad file: got %v, want a *LineError at %s:2", err, bad)
	}

	if _, err := ReadPath(filepath.Join(dir, "missing.jsonl"), ReadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadPath(missing): got %v, want os.ErrNotExist", err)
	}
	if _, err := ReadPath(t.TempDir(), ReadOptions{}); err == nil {
		t.Errorf("ReadPath(empty dir): no error")
	}
}

func TestWriteJSONLRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, validDataset()); err != nil {
		t.Fatalf("WriteJSONL: %v", err)
	}
	got, err := ReadJSONL(&buf, ReadOptions{})
	if err != nil {
		t.Fatalf("ReadJSONL(WriteJSONL(ds)): %v", err)
	}
	if diff := cmp.Diff(validDataset(), got, timeEqual); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add(validJSONL, 0)
	f.Add(`{"type":"doc","group":"g","id":"d","text":"x"}`+"\n"+`{"type":"query","group":"g","id":"q","text":"x","relevant":["d"],"date":"2023-01-02"}`, 64)
	f.Add("{\"type\":\n", 8)
	f.Add(strings.Repeat("x", 300), 100)
	f.Fuzz(func(t *testing.T, in string, maxLine int) {
		ds, err := ReadJSONL(strings.NewReader(in), ReadOptions{MaxLine: maxLine % 4096})
		if err != nil {
			return
		}
		// Whatever it accepts, it writes back and reads the same.
		var buf bytes.Buffer
		if err := WriteJSONL(&buf, ds); err != nil {
			t.Fatalf("WriteJSONL: %v", err)
		}
		again, err := ReadJSONL(&buf, ReadOptions{})
		if err != nil {
			t.Fatalf("ReadJSONL(WriteJSONL(ds)): %v\n%s", err, buf.String())
		}
		if diff := cmp.Diff(ds, again, timeEqual); diff != "" {
			t.Errorf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}
