package ipc_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/ipc"
)

func FuzzDecode(f *testing.F) {
	for _, s := range samples {
		line, err := ipc.Encode(s.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSuffix(line, []byte("\n")))
	}
	for _, c := range decodeCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ipc.Decode(line)
		if err != nil {
			var se *ipc.SyntaxError
			var ue *ipc.UnknownTypeError
			if !errors.As(err, &se) && !errors.As(err, &ue) {
				t.Errorf("Decode(%q): got error %v (%T), want *SyntaxError or *UnknownTypeError", line, err, err)
			}
			if m != nil {
				t.Errorf("Decode(%q): got message %#v with error %v, want nil", line, m, err)
			}
			return
		}
		checkRoundTrip(t, m)
	})
}

// checkRoundTrip checks that m encodes to one line that decodes to an
// equal message and encodes again to the same line.
func checkRoundTrip(t *testing.T, m ipc.Msg) {
	t.Helper()
	line, err := ipc.Encode(m)
	if errors.Is(err, ipc.ErrLineTooLong) {
		return // escaping may grow a line past the limit; Encode says so
	}
	if err != nil {
		t.Errorf("Encode(%#v): %v", m, err)
		return
	}
	if !bytes.HasPrefix(line, []byte(`{"type":`)) || bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Errorf("Encode(%#v) = %q, want one line starting with the type", m, line)
		return
	}
	m2, err := ipc.Decode(line[:len(line)-1])
	if err != nil {
		t.Errorf("Decode(Encode(m)) = %v; line %q", err, line)
		return
	}
	// A nil and an empty list are the same message: omitempty writes
	// neither (`"roles":[]` comes back without roles). The lines must
	// still be identical, below.
	if !cmp.Equal(m, m2, cmpopts.EquateEmpty()) {
		t.Errorf("Decode(Encode(m)) mismatch (-want +got):\n%s", cmp.Diff(m, m2, cmpopts.EquateEmpty()))
	}
	line2, err := ipc.Encode(m2)
	if err != nil || !bytes.Equal(line, line2) {
		t.Errorf("Encode(Decode(line)) = %q, %v; want %q", line2, err, line)
	}
}

// refLine is what a reader must return for one line.
type refLine struct {
	Line    string
	TooLong bool
}

// refLines splits data as Reader.ReadLine must: on "\n", dropping one
// "\r" before it, skipping blank lines, refusing lines over max bytes.
func refLines(data []byte, max int) []refLine {
	var out []refLine
	for rest := data; len(rest) > 0; {
		line := rest
		rest = nil
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, rest = line[:i], line[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) > max:
			out = append(out, refLine{TooLong: true})
		case len(bytes.TrimSpace(line)) > 0:
			out = append(out, refLine{Line: string(line)})
		}
	}
	return out
}

func FuzzReader(f *testing.F) {
	for _, c := range readerCases {
		if len(c.in) <= 8192 {
			f.Add([]byte(c.in))
		}
	}
	var all bytes.Buffer
	for _, s := range samples {
		line, err := ipc.Encode(s.msg)
		if err != nil {
			f.Fatal(err)
		}
		all.Write(line)
	}
	f.Add(all.Bytes())
	var lines []string
	for _, c := range decodeCases {
		lines = append(lines, c.line)
	}
	f.Add([]byte(strings.Join(lines, "\n")))
	f.Add([]byte(strings.Join(lines, "\r\n")))

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range []int{4096, 16} {
			want := refLines(data, max)

			// ReadLine splits as the reference does, within the limit.
			r := ipc.NewReaderSize(bytes.NewReader(data), max)
			var got []refLine
			for range len(want) + 1 {
				line, err := r.ReadLine()
				if err != nil {
					if errors.Is(err, ipc.ErrLineTooLong) {
						got = append(got, refLine{TooLong: true})
						continue
					}
					if errKind(err) != "EOF" {
						t.Errorf("max %d: ReadLine: got error %v, want EOF or ErrLineTooLong", max, err)
					}
					break
				}
				if len(line) > max {
					t.Errorf("max %d: ReadLine returned %d bytes", max, len(line))
				}
				got = append(got, refLine{Line: string(line)})
			}
			if !slices.Equal(want, got) {
				t.Fatalf("max %d: ReadLine of %q mismatch (-want +got):\n%s", max, data, cmp.Diff(want, got))
			}

			// Read decodes each line as Decode does.
			var wantKeys []string
			for _, l := range want {
				if l.TooLong {
					wantKeys = append(wantKeys, stepKey(long))
					continue
				}
				m, err := ipc.Decode([]byte(l.Line))
				wantKeys = append(wantKeys, stepKey(step{Msg: m, Err: errKind(err)}))
			}
			wantKeys = append(wantKeys, stepKey(eof))
			steps := readSteps(ipc.NewReaderSize(bytes.NewReader(data), max))
			if keys := stepKeys(steps); !slices.Equal(wantKeys, keys) {
				t.Fatalf("max %d: Read of %q mismatch (-want +got):\n%s", max, data, cmp.Diff(wantKeys, keys))
			}
			// Every message round-trips.
			if max == 4096 {
				for _, s := range steps {
					if s.Msg != nil {
						checkRoundTrip(t, s.Msg)
					}
				}
			}

			// A timeout midway is reported once and changes nothing else.
			fr := &faultReader{r: iotest.HalfReader(bytes.NewReader(data)), at: len(data) / 2, err: iotest.ErrTimeout}
			steps = readSteps(ipc.NewReaderSize(fr, max))
			n := len(steps)
			steps = slices.DeleteFunc(steps, func(s step) bool { return s.Err == "timeout" })
			if n-len(steps) != 1 {
				t.Errorf("max %d: fault at %d: got %d timeouts, want 1", max, fr.at, n-len(steps))
			}
			if keys := stepKeys(steps); !slices.Equal(wantKeys, keys) {
				t.Errorf("max %d: fault at %d: Read of %q mismatch (-want +got):\n%s", max, fr.at, data, cmp.Diff(wantKeys, keys))
			}
		}
	})
}

// stepKey is a comparable form of a step: the error kind, or the
// message's encoding, which round-trips (checkRoundTrip).
func stepKey(s step) string {
	if s.Msg == nil {
		return "error " + s.Err
	}
	line, err := ipc.Encode(s.Msg)
	if err != nil {
		return fmt.Sprintf("unencodable %#v: %v", s.Msg, err)
	}
	return "message " + string(line)
}

func stepKeys(steps []step) []string {
	keys := make([]string, len(steps))
	for i, s := range steps {
		keys[i] = stepKey(s)
	}
	return keys
}
