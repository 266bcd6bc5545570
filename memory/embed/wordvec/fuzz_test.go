package wordvec

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader (Load is os.ReadFile plus
// Parse): it never panics, fails only with ErrCorrupt, and loads only
// valid files: whatever loads re-encodes to exactly the same bytes, and
// embeds text without panicking. Each input is also tried with its
// header's length and checksum fixed, so the fuzzer reaches the payload
// checks behind the SHA-256.
func FuzzLoad(f *testing.F) {
	valid := fixture()
	f.Add(valid)
	f.Add([]byte{})
	f.Add([]byte(magic))
	f.Add(valid[:headerSize])
	f.Add(append(fixture(), 0))
	f.Add(encode(1, 1, nil))
	f.Add(encode(2, 5, []entry{{word: "é", rank: 4, vec: []int8{0, 0}, scale: 0}}))
	for _, mutate := range []func([]byte){
		func(b []byte) { b[headerSize] = 0 },
		func(b []byte) { b[word0] = 'C' },
		func(b []byte) { copy(b[word1:], "cat") },
		func(b []byte) { b[rank1] = 1 },
	} {
		b := fixture()
		mutate(b)
		f.Add(reseal(b))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, reseal(bytes.Clone(data))} {
			m, err := Parse(in)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Parse error %v does not wrap ErrCorrupt", err)
				}
				continue
			}
			entries := m.entries()
			if err := validate(m.dim, m.vocab, entries); err != nil {
				t.Fatalf("Parse accepted a model that Encode would refuse: %v", err)
			}
			if out := encode(m.dim, m.vocab, entries); !bytes.Equal(out, in) {
				t.Fatalf("a loaded file does not re-encode to the same bytes:\n in  %x\n out %x", in, out)
			}
			for _, opts := range []Options{{}, {RemovePC: true}} {
				vs, err := m.Embedder(opts).Embed(t.Context(), []string{m.joined, "", "x"})
				if err != nil || len(vs) != 3 || len(vs[0]) != m.dim {
					t.Fatalf("Embed = %d vectors, %v", len(vs), err)
				}
			}
		}
	})
}
