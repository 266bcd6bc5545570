package backend

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/bench/recallbench"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/recall"
)

func TestOverrides(t *testing.T) {
	def := recall.DefaultSearchOptions()
	tests := []struct {
		name    string
		js      string
		want    func(o *recall.SearchOptions)
		wantErr bool
	}{
		{"empty object", `{}`, func(*recall.SearchOptions) {}, false},
		{"weights", `{"VectorWeight":0.25,"MMRLambda":0}`, func(o *recall.SearchOptions) { o.VectorWeight, o.MMRLambda = 0.25, 0 }, false},
		{"duration string", `{"RecencyHalfLife":"720h"}`, func(o *recall.SearchOptions) { o.RecencyHalfLife = 720 * time.Hour }, false},
		{"duration ns", `{"RecencyHalfLife":1000}`, func(o *recall.SearchOptions) { o.RecencyHalfLife = 1000 }, false},
		{"unknown field", `{"VectorWieght":1}`, nil, true},
		{"bad duration", `{"RecencyHalfLife":"soon"}`, nil, true},
		{"not an object", `[1]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := overrides(def, tt.js)
			if (err != nil) != tt.wantErr {
				t.Fatalf("overrides(%s): error %v, want error %v", tt.js, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			want := recall.DefaultSearchOptions()
			tt.want(&want)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(recall.SearchOptions{}, "Now")); diff != "" {
				t.Errorf("overrides(%s) mismatch (-want +got):\n%s", tt.js, diff)
			}
		})
	}
}

// tinyModel writes a word-vector model of a few words to a file.
func tinyModel(t *testing.T) string {
	t.Helper()
	words := []wordvec.Word{
		{Text: "balcony", Rank: 0, Vector: []float32{1, 0, 0, 0}},
		{Text: "terrace", Rank: 1, Vector: []float32{0.9, 0.1, 0, 0}},
		{Text: "report", Rank: 2, Vector: []float32{0, 0, 1, 0}},
		{Text: "lemon", Rank: 3, Vector: []float32{0, 1, 0, 0.2}},
	}
	b, err := wordvec.Encode(4, 1000, words)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNew(t *testing.T) {
	docs := []recall.Doc{
		{ID: "a", Kind: recall.KindTurn, Text: "the balcony gets sun", TS: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "b", Kind: recall.KindTurn, Text: "the report is due", TS: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
	}
	tests := []struct {
		name     string
		vectors  string
		modes    []string
		wantNote bool
		query    string
		want     string // first result of every mode
	}{
		{"lexical only", filepath.Join(t.TempDir(), "missing.bin"), []string{recallbench.ModeLexical}, true, "report", "b"},
		{"with vectors", tinyModel(t), recallbench.AllModes(), false, "terrace balcony", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, note, err := New(Options{Vectors: tt.vectors, Search: `{"RecencyWeight":0}`})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if (note != "") != tt.wantNote || (b.Embedder == nil) != tt.wantNote {
				t.Errorf("New: note %q, embedder %v; want a note %v", note, b.Embedder, tt.wantNote)
			}
			ctx := context.Background()
			idx, err := b.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer idx.Close()
			if _, err := recallbench.IndexDocs(ctx, idx, b.Embedder, docs, 1); err != nil {
				t.Fatalf("IndexDocs: %v", err)
			}
			for _, mode := range tt.modes {
				search, err := b.Searcher(idx, mode)
				if err != nil {
					t.Fatalf("Searcher(%s): %v", mode, err)
				}
				ids, err := search(ctx, recallbench.SearchQuery{Text: tt.query, K: 5})
				if err != nil {
					t.Fatalf("%s search: %v", mode, err)
				}
				if len(ids) == 0 || ids[0] != tt.want {
					t.Errorf("%s search %q: got %v, want %s first", mode, tt.query, ids, tt.want)
				}
			}
		})
	}
}

func TestNewBadSearch(t *testing.T) {
	if _, _, err := New(Options{Search: `{"Nope":1}`}); err == nil {
		t.Errorf("New with an unknown search option: no error")
	}
}
