// Package backend wires the benchmarks to mnemo's real recall stack: the
// embedded index (memory/recall/embedded), the offline word-vector
// embedder (memory/embed/wordvec) and recall.Searcher.
package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mnemo/mnemo/bench/recallbench"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/embedded"
)

// Options configure New.
type Options struct {
	// Vectors is the word-vector model file. A missing file gives a
	// lexical-only backend (and a note saying so), not an error.
	Vectors string
	// Search is a JSON object of recall.SearchOptions fields overriding
	// the searcher's defaults, e.g. {"MMRLambda":0.7}; "" keeps them.
	Search string
}

// New returns the benchmark backend over the embedded index, with the
// word-vector embedder when o.Vectors exists. note says what was left out.
func New(o Options) (b recallbench.Backend, note string, err error) {
	base := recall.DefaultSearchOptions()
	if o.Search != "" {
		if base, err = overrides(base, o.Search); err != nil {
			return b, "", err
		}
	}
	var emb recall.Embedder
	if o.Vectors != "" {
		m, err := wordvec.Load(o.Vectors)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			note = fmt.Sprintf("no word vectors at %s: lexical only", o.Vectors)
		case err != nil:
			return b, "", fmt.Errorf("word vectors: %w", err)
		default:
			emb = m.Embedder(wordvec.Options{})
		}
	}
	dim := 0
	if emb != nil {
		dim = emb.Dim()
	}
	b = recallbench.Backend{
		Open: func(_ context.Context, dir string) (recall.Index, error) {
			return embedded.Open(dir, embedded.Options{Dim: dim})
		},
		Embedder: emb,
		Searcher: func(idx recall.Index, mode string) (recallbench.SearchFunc, error) {
			opts := base
			opts.Mode = mode
			s := &recall.Searcher{Index: idx, Embedder: emb, Opts: opts}
			if r, ok := emb.(recall.Reranker); ok {
				s.Reranker = r
			}
			return func(ctx context.Context, q recallbench.SearchQuery) ([]string, error) {
				hits, err := s.Search(ctx, recall.Query{Text: q.Text, K: q.K, At: q.At})
				if err != nil {
					return nil, err
				}
				ids := make([]string, len(hits))
				for i, h := range hits {
					ids[i] = h.Doc.ID
				}
				return ids, nil
			}, nil
		},
	}
	return b, note, nil
}

// overrides decodes a JSON object of SearchOptions fields over base.
// Unknown fields are errors; durations are nanoseconds or Go duration
// strings ("720h").
func overrides(base recall.SearchOptions, js string) (recall.SearchOptions, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		return base, fmt.Errorf("-search: %w", err)
	}
	if d, ok := raw["RecencyHalfLife"]; ok && len(d) > 0 && d[0] == '"' {
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			return base, fmt.Errorf("-search: RecencyHalfLife: %w", err)
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return base, fmt.Errorf("-search: RecencyHalfLife: %w", err)
		}
		raw["RecencyHalfLife"], _ = json.Marshal(int64(dur))
	}
	clean, err := json.Marshal(raw)
	if err != nil {
		return base, fmt.Errorf("-search: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		return base, fmt.Errorf("-search: %w", err)
	}
	return base, nil
}

// RepoRoot is the nearest directory upwards from the working directory
// that holds go.mod, else the working directory.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// DefaultVectors is where make builds the word-vector model.
func DefaultVectors(root string) string {
	return filepath.Join(root, ".cache", "vectors", "wink-sg100-100k.bin")
}
