package wordvec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The file format, version 1. All integers are little-endian.
//
//	offset  size  field
//	0       8     magic "mnemo-wv"
//	8       4     version (1)
//	12      4     dim: the vector dimension (1..4096)
//	16      4     count: the number of words in the file
//	20      4     vocab: the size of the source vocabulary (ranks are < vocab)
//	24      8     payload length in bytes (the rest of the file, exactly)
//	32      32    SHA-256 of the payload
//	64      ...   payload: count entries in strictly increasing rank order:
//	              u8    n, the word's length in bytes (1..255)
//	              n     the word: UTF-8, one whole token of Tokens
//	              u32   rank: frequency rank in the source (0 = most frequent)
//	              dim   int8 vector components
//	              f32   scale (finite, >= 0): the vector is int8 × scale
//
// The rank is stored, rather than implied by the position, because the
// converter drops source words that Tokens can never produce (punctuation,
// hyphenated words); SIF weights need the word's true frequency rank.
const (
	magic      = "mnemo-wv"
	version    = 1
	headerSize = 64
	maxDim     = 4096
	maxWordLen = 255
)

// ErrCorrupt is wrapped by the errors of Load and Parse for a file that is
// not a valid model: wrong magic or version, a checksum mismatch, a
// truncated or malformed payload.
var ErrCorrupt = errors.New("wordvec: not a valid model file")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// entry is one word as stored.
type entry struct {
	word  string
	rank  uint32
	vec   []int8
	scale float32
}

func entrySize(wordLen, dim int) int { return 1 + wordLen + 4 + dim + 4 }

// encode serialises entries, which must be valid (see validate), into a
// complete file.
func encode(dim, vocab int, entries []entry) []byte {
	n := headerSize
	for _, e := range entries {
		n += entrySize(len(e.word), dim)
	}
	out := make([]byte, headerSize, n)
	for _, e := range entries {
		out = append(out, byte(len(e.word)))
		out = append(out, e.word...)
		out = binary.LittleEndian.AppendUint32(out, e.rank)
		for _, q := range e.vec {
			out = append(out, byte(q))
		}
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(e.scale))
	}
	copy(out, magic)
	binary.LittleEndian.PutUint32(out[8:], version)
	binary.LittleEndian.PutUint32(out[12:], uint32(dim))
	binary.LittleEndian.PutUint32(out[16:], uint32(len(entries)))
	binary.LittleEndian.PutUint32(out[20:], uint32(vocab))
	binary.LittleEndian.PutUint64(out[24:], uint64(len(out)-headerSize))
	sum := sha256.Sum256(out[headerSize:])
	copy(out[32:], sum[:])
	return out
}

// validate checks what encode needs and parse enforces.
func validate(dim, vocab int, entries []entry) error {
	if dim < 1 || dim > maxDim {
		return fmt.Errorf("wordvec: dimension %d out of range 1..%d", dim, maxDim)
	}
	if vocab < len(entries) || vocab > math.MaxUint32 {
		return fmt.Errorf("wordvec: vocabulary size %d is less than the %d words or too large", vocab, len(entries))
	}
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		switch {
		case len(e.word) > maxWordLen:
			return fmt.Errorf("wordvec: word %.20q… longer than %d bytes", e.word, maxWordLen)
		case !isToken(e.word):
			return fmt.Errorf("wordvec: %q is not a single lower-case token", e.word)
		case seen[e.word]:
			return fmt.Errorf("wordvec: duplicate word %q", e.word)
		case len(e.vec) != dim:
			return fmt.Errorf("wordvec: %q has %d components, want %d", e.word, len(e.vec), dim)
		case int64(e.rank) >= int64(vocab):
			return fmt.Errorf("wordvec: %q has rank %d, beyond the vocabulary of %d", e.word, e.rank, vocab)
		case i > 0 && e.rank <= entries[i-1].rank:
			return fmt.Errorf("wordvec: ranks not strictly increasing at %q", e.word)
		case !(e.scale >= 0) || math.IsInf(float64(e.scale), 0):
			return fmt.Errorf("wordvec: %q has scale %v", e.word, e.scale)
		}
		seen[e.word] = true
	}
	return nil
}

// parse validates data and decodes it into m. It allocates the int8 slab,
// the scale and rank tables, one string holding every word, and the map;
// nothing per word.
func (m *Model) parse(data []byte) error {
	if len(data) < headerSize {
		return corrupt("%d bytes, shorter than the %d-byte header", len(data), headerSize)
	}
	if string(data[:8]) != magic {
		return corrupt("bad magic %q", data[:8])
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != version {
		return corrupt("version %d, want %d", v, version)
	}
	dim := binary.LittleEndian.Uint32(data[12:])
	count := binary.LittleEndian.Uint32(data[16:])
	vocab := binary.LittleEndian.Uint32(data[20:])
	plen := binary.LittleEndian.Uint64(data[24:])
	payload := data[headerSize:]
	switch {
	case dim < 1 || dim > maxDim:
		return corrupt("dimension %d out of range 1..%d", dim, maxDim)
	case count > vocab:
		return corrupt("%d words but a vocabulary of %d", count, vocab)
	case plen != uint64(len(payload)):
		return corrupt("payload is %d bytes, header says %d (truncated or padded)", len(payload), plen)
	case uint64(count)*uint64(entrySize(1, int(dim))) > plen:
		return corrupt("%d words of dimension %d cannot fit in %d bytes", count, dim, plen)
	}
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], data[32:64]) {
		return corrupt("checksum mismatch")
	}

	d, n := int(dim), int(count)
	m.dim, m.vocab = d, int(vocab)
	m.vecs = make([]int8, n*d)
	m.scales = make([]float32, n)
	m.ranks = make([]uint32, n)
	m.index = make(map[string]int32, n)
	// First pass: validate the layout and gather the words into one string.
	wordBytes := 0
	ends := make([]uint32, n) // end of each word in the joined string
	for i, off := 0, 0; i < n; i++ {
		if off >= len(payload) {
			return corrupt("payload ends at word %d of %d", i, n)
		}
		wl := int(payload[off])
		if wl == 0 || off+entrySize(wl, d) > len(payload) {
			return corrupt("word %d: bad length or truncated entry", i)
		}
		wordBytes += wl
		ends[i] = uint32(wordBytes)
		off += entrySize(wl, d)
		if i == n-1 && off != len(payload) {
			return corrupt("%d bytes after the last word", len(payload)-off)
		}
	}
	if n == 0 && len(payload) != 0 {
		return corrupt("%d bytes of payload but no words", len(payload))
	}
	joined := make([]byte, 0, wordBytes)
	for i, off := 0, 0; i < n; i++ {
		wl := int(payload[off])
		joined = append(joined, payload[off+1:off+1+wl]...)
		off += entrySize(wl, d)
	}
	words := string(joined)
	m.words = ends
	m.joined = words

	for i, off := 0, 0; i < n; i++ {
		wl := int(payload[off])
		w := m.word(i)
		off += 1 + wl
		rank := binary.LittleEndian.Uint32(payload[off:])
		off += 4
		vec := m.vecs[i*d : (i+1)*d]
		for j := range vec {
			vec[j] = int8(payload[off+j])
		}
		off += d
		scale := math.Float32frombits(binary.LittleEndian.Uint32(payload[off:]))
		off += 4
		switch {
		case !isToken(w):
			return corrupt("word %d (%q) is not a single lower-case token", i, w)
		case rank >= vocab:
			return corrupt("word %q has rank %d, beyond the vocabulary of %d", w, rank, vocab)
		case i > 0 && rank <= m.ranks[i-1]:
			return corrupt("ranks not strictly increasing at word %q", w)
		case !(scale >= 0) || math.IsInf(float64(scale), 0):
			return corrupt("word %q has scale %v", w, scale)
		}
		if _, dup := m.index[w]; dup {
			return corrupt("duplicate word %q", w)
		}
		m.index[w] = int32(i)
		m.ranks[i] = rank
		m.scales[i] = scale
	}
	return nil
}

// entries returns the model's words as stored, for tests and re-encoding.
func (m *Model) entries() []entry {
	out := make([]entry, m.Len())
	for i := range out {
		out[i] = entry{
			word:  m.word(i),
			rank:  m.ranks[i],
			vec:   slices.Clone(m.vecs[i*m.dim : (i+1)*m.dim]),
			scale: m.scales[i],
		}
	}
	return out
}
