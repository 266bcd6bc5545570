package wordvec_test

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/embed/embedtest"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/recall"
)

var _ recall.Embedder = (*wordvec.Embedder)(nil)

func TestConformance(t *testing.T) {
	m := tinyModel(t)
	for _, opts := range []wordvec.Options{{}, {RemovePC: true}} {
		t.Run(m.Embedder(opts).Name(), func(t *testing.T) {
			embedtest.RunEmbedderConformance(t, m.Embedder(opts))
		})
	}
}

func TestEmbedderIdentity(t *testing.T) {
	m := tinyModel(t)
	n := len(tinyWords())
	tests := []struct {
		opts wordvec.Options
		want string
	}{
		{wordvec.Options{}, "wordvec:wink-sg100d:" + strconv.Itoa(n)},
		{wordvec.Options{A: wordvec.DefaultA}, "wordvec:wink-sg100d:" + strconv.Itoa(n)},
		{wordvec.Options{A: -1}, "wordvec:wink-sg100d:" + strconv.Itoa(n)},
		{wordvec.Options{A: math.NaN()}, "wordvec:wink-sg100d:" + strconv.Itoa(n)},
		{wordvec.Options{A: 1e-4}, "wordvec:wink-sg100d:" + strconv.Itoa(n) + ":a=0.0001"},
		{wordvec.Options{RemovePC: true}, "wordvec:wink-sg100d:" + strconv.Itoa(n) + ":pc"},
		{wordvec.Options{A: 0.01, RemovePC: true}, "wordvec:wink-sg100d:" + strconv.Itoa(n) + ":a=0.01:pc"},
	}
	for _, tt := range tests {
		e := m.Embedder(tt.opts)
		if e.Name() != tt.want || e.Dim() != tinyDim {
			t.Errorf("Embedder(%+v): Name, Dim = %q, %d; want %q, %d", tt.opts, e.Name(), e.Dim(), tt.want, tinyDim)
		}
	}
}

// TestEmbed checks what a text's vector is made of.
func TestEmbed(t *testing.T) {
	m := tinyModel(t)
	e := m.Embedder(wordvec.Options{})
	word := func(w string) []float32 {
		v, ok := m.Vector(w)
		if !ok {
			t.Fatalf("Vector(%q) not found", w)
		}
		return unit(v)
	}
	zero := make([]float32, tinyDim)
	tests := []struct {
		name string
		text string
		want []float32
	}{
		{"one word is its own direction", "dog", word("dog")},
		{"case and punctuation do not matter", "  DOG!!! ", word("dog")},
		{"repeats do not change the direction", "dog dog, dog", word("dog")},
		{"unknown words are skipped", "zorblax dog 1234", word("dog")},
		{"non-ASCII words are found", "Café", word("café")},
		{"empty text: zero vector", "", zero},
		{"no known word: zero vector", "zorblax 42 🙂", zero},
		{"other scripts: zero vector", "東京 москва", zero},
		{"invalid UTF-8: zero vector", "\xff\xfe", zero},
	}
	for _, tt := range tests {
		got, err := e.Embed(t.Context(), []string{tt.text})
		if err != nil {
			t.Fatalf("Embed(%q): %v", tt.text, err)
		}
		if diff := cmp.Diff(tt.want, got[0], cmpopts.EquateApprox(0, 1e-6)); diff != "" {
			t.Errorf("%s: Embed(%q) (-want +got):\n%s", tt.name, tt.text, diff)
		}
	}
}

// TestSimilarity checks relations the tiny model was built with, and SIF's
// down-weighting of frequent words.
func TestSimilarity(t *testing.T) {
	m := tinyModel(t)
	tests := []struct {
		text, near, far string
	}{
		{"dog", "puppy", "tax"},
		{"kitten", "cat", "bank"},
		{"the dog", "dog", "the"}, // "the" is rank 0: weight ≈ 0.013
		{"the puppy and the kitten", "dog cat", "the money"},
		{"coffee", "tea", "money"},
	}
	for _, opts := range []wordvec.Options{{}, {RemovePC: true}, {A: 1e-4}} {
		e := m.Embedder(opts)
		for _, tt := range tests {
			vs, err := e.Embed(t.Context(), []string{tt.text, tt.near, tt.far})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			near, far := cosine(vs[0], vs[1]), cosine(vs[0], vs[2])
			if near <= far {
				t.Errorf("%s: cos(%q, %q) = %.3f, not above cos(%q, %q) = %.3f", e.Name(), tt.text, tt.near, near, tt.text, tt.far, far)
			}
		}
	}
}

// TestRemovePC checks that removing the common component leaves unit
// vectors and makes unrelated texts that share the frequent words' common
// direction less alike.
func TestRemovePC(t *testing.T) {
	m := tinyModel(t)
	texts := []string{"the dog", "the tax"}
	plain, err := m.Embedder(wordvec.Options{}).Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := m.Embedder(wordvec.Options{RemovePC: true}).Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range pc {
		if n := math.Sqrt(cosine(v, v)); math.Abs(n-1) > 1e-6 {
			t.Errorf("vector %d with RemovePC: norm %v, want 1", i, n)
		}
	}
	before, after := cosine(plain[0], plain[1]), cosine(pc[0], pc[1])
	if after >= before {
		t.Errorf("cos(the dog, the tax) = %.3f with RemovePC, %.3f without; want lower with", after, before)
	}
}

func TestEmbedCancelled(t *testing.T) {
	e := tinyModel(t).Embedder(wordvec.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, n := range []int{0, 1, 1000} {
		_, err := e.Embed(ctx, embedtest.Texts(n))
		if n > 0 && !errors.Is(err, context.Canceled) {
			t.Errorf("Embed(%d texts) with a cancelled context = %v, want context.Canceled", n, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	valid, err := os.ReadFile(tinyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte(nil), valid...)
	flipped[len(flipped)-3] ^= 1
	tests := []struct {
		name string
		path string
		is   error
		msg  string
	}{
		{"missing", filepath.Join(dir, "nope.bin"), fs.ErrNotExist, "make vectors"},
		{"empty", write("empty.bin", nil), wordvec.ErrCorrupt, "shorter than"},
		{"not a model", write("text.bin", []byte(strings.Repeat("hello world\n", 10))), wordvec.ErrCorrupt, "magic"},
		{"truncated", write("trunc.bin", valid[:len(valid)-10]), wordvec.ErrCorrupt, "truncated"},
		{"one bit flipped", write("flip.bin", flipped), wordvec.ErrCorrupt, "checksum"},
		{"a directory", dir, nil, "wordvec"},
	}
	for _, tt := range tests {
		m, err := wordvec.Load(tt.path)
		if err == nil {
			t.Errorf("%s: Load = %d words, nil; want an error", tt.name, m.Len())
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: Load error %q does not wrap %v", tt.name, err, tt.is)
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Load error %q does not mention %q", tt.name, err, tt.msg)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	words := tinyWords()
	data, err := wordvec.Encode(tinyDim, 400000, words)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	// Input order does not matter: words are stored by rank.
	rev := make([]wordvec.Word, len(words))
	for i, w := range words {
		rev[len(words)-1-i] = w
	}
	again, err := wordvec.Encode(tinyDim, 400000, rev)
	if err != nil {
		t.Fatalf("Encode reversed: %v", err)
	}
	if string(again) != string(data) {
		t.Errorf("Encode of the same words in another order gave different bytes")
	}
	m, err := wordvec.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if m.Len() != len(words) || m.Dim() != tinyDim || len(m.Checksum()) != 64 {
		t.Errorf("Len, Dim, Checksum = %d, %d, %q; want %d, %d, 64 hex digits", m.Len(), m.Dim(), m.Checksum(), len(words), tinyDim)
	}
	for _, w := range words {
		v, ok := m.Vector(w.Text)
		if !ok {
			t.Errorf("Vector(%q) not found", w.Text)
			continue
		}
		if c := cosine(v, w.Vector); c < 0.9999 {
			t.Errorf("Vector(%q): cosine with the original %.6f, want ≥ 0.9999", w.Text, c)
		}
	}
	if _, ok := m.Vector("zorblax"); ok {
		t.Errorf("Vector(zorblax) found")
	}
}

func TestEncodeErrors(t *testing.T) {
	vec := func(xs ...float32) []float32 { return append(xs, make([]float32, 2-len(xs))...) }
	tests := []struct {
		name  string
		dim   int
		vocab int
		words []wordvec.Word
	}{
		{"dimension 0", 0, 10, nil},
		{"vocabulary smaller than the words", 2, 1, []wordvec.Word{{"a", 0, vec(1)}, {"b", 1, vec(1)}}},
		{"rank beyond the vocabulary", 2, 5, []wordvec.Word{{"a", 5, vec(1)}}},
		{"negative rank", 2, 5, []wordvec.Word{{"a", -1, vec(1)}}},
		{"duplicate rank", 2, 5, []wordvec.Word{{"a", 1, vec(1)}, {"b", 1, vec(1)}}},
		{"duplicate word", 2, 5, []wordvec.Word{{"a", 1, vec(1)}, {"a", 2, vec(1)}}},
		{"upper case", 2, 5, []wordvec.Word{{"Dog", 1, vec(1)}}},
		{"two tokens", 2, 5, []wordvec.Word{{"well-known", 1, vec(1)}}},
		{"empty word", 2, 5, []wordvec.Word{{"", 1, vec(1)}}},
		{"too long", 2, 5, []wordvec.Word{{strings.Repeat("a", 256), 1, vec(1)}}},
		{"wrong length", 2, 5, []wordvec.Word{{"a", 1, []float32{1, 2, 3}}}},
		{"NaN", 2, 5, []wordvec.Word{{"a", 1, vec(float32(math.NaN()))}}},
		{"infinity", 2, 5, []wordvec.Word{{"a", 1, vec(float32(math.Inf(1)))}}},
	}
	for _, tt := range tests {
		if _, err := wordvec.Encode(tt.dim, tt.vocab, tt.words); err == nil {
			t.Errorf("%s: Encode succeeded, want an error", tt.name)
		}
	}
}
