package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"
)

type line struct {
	Text    string
	TooLong bool
}

func collectForward(r io.Reader) ([]line, error) {
	var lines []line
	err := forwardLines(r, func(_ int, l []byte, tooLong bool) error {
		lines = append(lines, line{string(l), tooLong})
		return nil
	})
	return lines, err
}

func collectReverse(r io.ReaderAt, size int64) ([]line, error) {
	var lines []line
	err := reverseLines(r, size, func(_ int64, l []byte, tooLong bool) bool {
		lines = append(lines, line{string(l), tooLong})
		return true
	})
	slices.Reverse(lines)
	return lines, err
}

// The two line readers must agree, whatever the line lengths relative to
// the chunk size and the line limit, and however the reader splits reads.
func TestLinesAgree(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name string
		data string
		want []line
	}{
		{"empty", "", nil},
		{"one line", "a\n", []line{{"a", false}}},
		{"no final newline", "a\nb", []line{{"a", false}, {"b", false}}},
		{"empty lines", "\n\na\n", []line{{"", false}, {"", false}, {"a", false}}},
		{"at chunk size", x(chunkSize-1) + "\n" + x(chunkSize) + "\nb\n",
			[]line{{x(chunkSize - 1), false}, {x(chunkSize), false}, {"b", false}}},
		{"spans chunks", "a\n" + x(3*chunkSize+7) + "\nb",
			[]line{{"a", false}, {x(3*chunkSize + 7), false}, {"b", false}}},
		{"at the limit", "a\n" + x(maxLine) + "\nb\n",
			[]line{{"a", false}, {x(maxLine), false}, {"b", false}}},
		{"over the limit", "a\n" + x(maxLine+1) + "\nb\n",
			[]line{{"a", false}, {"", true}, {"b", false}}},
		{"over the limit, first and last", x(maxLine+1) + "\na\n" + x(maxLine+chunkSize),
			[]line{{"", true}, {"a", false}, {"", true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readers := map[string]io.Reader{
				"plain":    strings.NewReader(tt.data),
				"half":     iotest.HalfReader(strings.NewReader(tt.data)),
				"one byte": iotest.OneByteReader(strings.NewReader(tt.data)),
			}
			for name, r := range readers {
				if name == "one byte" && len(tt.data) > 1<<20 {
					continue // correct but slow
				}
				got, err := collectForward(r)
				if err != nil {
					t.Errorf("forwardLines(%s): %v", name, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("forwardLines(%s) (-want +got):\n%s", name, diff)
				}
			}
			got, err := collectReverse(strings.NewReader(tt.data), int64(len(tt.data)))
			if err != nil {
				t.Errorf("reverseLines: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reverseLines (-want +got):\n%s", diff)
			}
		})
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func TestReverseLinesReadsFromTheEnd(t *testing.T) {
	var data bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&data, `{"id":"%d","text":"some ordinary turn of conversation"}`+"\n", i)
	}
	r := &countingReaderAt{r: bytes.NewReader(data.Bytes())}
	var got []string
	err := reverseLines(r, int64(data.Len()), func(_ int64, l []byte, _ bool) bool {
		if len(l) > 0 {
			got = append(got, string(l))
		}
		return len(got) < 3
	})
	if err != nil {
		t.Fatalf("reverseLines: %v", err)
	}
	want := []string{
		`{"id":"99999","text":"some ordinary turn of conversation"}`,
		`{"id":"99998","text":"some ordinary turn of conversation"}`,
		`{"id":"99997","text":"some ordinary turn of conversation"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("last lines (-want +got):\n%s", diff)
	}
	if n := r.n.Load(); n > chunkSize {
		t.Errorf("read %d bytes of %d for 3 lines, want at most one chunk (%d)", n, data.Len(), chunkSize)
	}
}

type errReaderAt struct{ err error }

func (r errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, r.err }

func TestReverseLinesReadError(t *testing.T) {
	boom := errors.New("boom")
	err := reverseLines(errReaderAt{boom}, 10, func(int64, []byte, bool) bool { return true })
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}

func TestIDGen(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	id := func(ms uint64, entropy byte) ulid.ULID {
		var u ulid.ULID
		if err := u.SetTime(ms); err != nil {
			panic(err)
		}
		for i := 6; i < 16; i++ {
			u[i] = entropy
		}
		return u
	}
	tests := []struct {
		name    string
		last    ulid.ULID
		now     time.Time
		want    ulid.ULID
		wantErr error
	}{
		{"fresh", ulid.ULID{}, at(1000), id(1000, 0x11), nil},
		{"later millisecond", id(999, 0x22), at(1000), id(1000, 0x11), nil},
		{"same millisecond", id(1000, 0x22), at(1000), func() ulid.ULID { u := id(1000, 0x22); u[15]++; return u }(), nil},
		{"clock went back", id(5000, 0x22), at(1000), func() ulid.ULID { u := id(5000, 0x22); u[15]++; return u }(), nil},
		{"entropy used up", id(1000, 0xff), at(1000), id(1001, 0x11), nil},
		{"before 1970", ulid.ULID{}, at(-5), id(0, 0x11), nil},
		{"out of ULIDs", id(ulid.MaxTime(), 0xff), at(1000), ulid.ULID{}, errIDSpace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := idGen{last: tt.last, entropy: bytes.NewReader(bytes.Repeat([]byte{0x11}, 10))}
			got, err := g.next(tt.now)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("next: got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("next = %s, want %s", got, tt.want)
			}
			if err == nil && got.Compare(tt.last) <= 0 {
				t.Errorf("next = %s, not after %s", got, tt.last)
			}
		})
	}
}
