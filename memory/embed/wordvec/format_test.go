package wordvec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// fixture is a small valid model: two words of the same length, so a test
// can make them equal.
func fixture() []byte {
	return encode(3, 10, []entry{
		{word: "cat", rank: 2, vec: []int8{1, -2, 127}, scale: 0.5},
		{word: "dog", rank: 7, vec: []int8{-127, 0, 3}, scale: 0.25},
	})
}

// reseal rewrites the header's payload length and checksum, so that a
// mutated file reaches the payload checks.
func reseal(data []byte) []byte {
	if len(data) < headerSize {
		return data
	}
	binary.LittleEndian.PutUint64(data[24:], uint64(len(data)-headerSize))
	sum := sha256.Sum256(data[headerSize:])
	copy(data[32:], sum[:])
	return data
}

// Offsets in fixture().
const (
	word0 = headerSize + 1 // "cat"
	rank0 = word0 + 3      // its rank
	scal0 = rank0 + 4 + 3  // its scale
	len1  = scal0 + 4      // "dog"'s length byte
	word1 = len1 + 1       // "dog"
	rank1 = word1 + 3      // its rank
	scal1 = rank1 + 4 + 3  // its scale
	total = scal1 + 4      // file size
)

func TestParseCorrupt(t *testing.T) {
	u32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	f32 := func(off int, v float32) func([]byte) []byte { return u32(off, math.Float32bits(v)) }
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		reseal bool
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, false, "shorter than"},
		{"header only, cut", func(b []byte) []byte { return b[:40] }, false, "shorter than"},
		{"bad magic", func(b []byte) []byte { b[0] = 'M'; return b }, false, "magic"},
		{"version 2", u32(8, 2), false, "version"},
		{"dimension 0", u32(12, 0), true, "dimension"},
		{"dimension too large", u32(12, maxDim+1), true, "dimension"},
		{"more words than the vocabulary", u32(20, 1), true, "vocabulary"},
		{"count cannot fit", func(b []byte) []byte { u32(16, 1<<31)(b); return u32(20, 1<<32-1)(b) }, true, "cannot fit"},
		{"padded", func(b []byte) []byte { return append(b, 0) }, false, "padded"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, false, "truncated"},
		{"checksum", func(b []byte) []byte { b[rank1] ^= 1; return b }, false, "checksum"},
		{"trailing byte after the last word", func(b []byte) []byte { return append(b, 0) }, true, "after the last word"},
		{"truncated entry", func(b []byte) []byte { return b[:len(b)-2] }, true, "truncated entry"},
		{"no words but a payload", u32(16, 0), true, "no words"},
		{"zero-length word", func(b []byte) []byte { b[headerSize] = 0; return b }, true, "bad length"},
		{"word length past the end", func(b []byte) []byte { b[len1] = 200; return b }, true, "bad length"},
		{"upper-case word", func(b []byte) []byte { b[word0] = 'C'; return b }, true, "not a single lower-case token"},
		{"word of two tokens", func(b []byte) []byte { b[word0+1] = '-'; return b }, true, "not a single lower-case token"},
		{"word not UTF-8", func(b []byte) []byte { b[word0] = 0xff; return b }, true, "not a single lower-case token"},
		{"duplicate word", func(b []byte) []byte { copy(b[word1:], "cat"); return b }, true, "duplicate"},
		{"ranks not increasing", u32(rank1, 2), true, "not strictly increasing"},
		{"rank beyond the vocabulary", u32(rank1, 10), true, "beyond the vocabulary"},
		{"NaN scale", f32(scal0, float32(math.NaN())), true, "scale"},
		{"infinite scale", f32(scal1, float32(math.Inf(1))), true, "scale"},
		{"negative scale", f32(scal0, -1), true, "scale"},
	}
	if n := len(fixture()); n != total {
		t.Fatalf("fixture is %d bytes, offsets assume %d", n, total)
	}
	if _, err := Parse(fixture()); err != nil {
		t.Fatalf("Parse(fixture) = %v", err)
	}
	for _, tt := range tests {
		data := tt.mutate(fixture())
		if tt.reseal {
			data = reseal(data)
		}
		_, err := Parse(data)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Parse = %v, want ErrCorrupt", tt.name, err)
			continue
		}
		if !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
			t.Errorf("%s: Parse error %q does not mention %q", tt.name, err, tt.want)
		}
	}
}

func TestHarmonic(t *testing.T) {
	for _, n := range []int{1, 2, 10, 999, 1000, 1001, 5000, 341479} {
		exact := 0.0
		for r := n; r >= 1; r-- {
			exact += 1 / float64(r)
		}
		if got := harmonic(n); math.Abs(got-exact) > 1e-12*exact {
			t.Errorf("harmonic(%d) = %.17g, want %.17g", n, got, exact)
		}
	}
}
