package recollect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/embed/wordvec"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall/embedded"
	"github.com/mnemo/mnemo/memory/recall/qdrant"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
	"github.com/mnemo/mnemo/memory/vault"
)

func TestRetryPolicyDelay(t *testing.T) {
	p := RetryPolicy{Initial: time.Second, Max: time.Minute}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{3, 2 * time.Second, 4 * time.Second},
		{6, 16 * time.Second, 32 * time.Second},
		{7, 30 * time.Second, time.Minute}, // capped
		{100, 30 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		for range 50 {
			if d := p.delay(tt.attempt); d < tt.min || d > tt.max {
				t.Errorf("delay(%d) = %v, want within [%v, %v]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
	if d := (RetryPolicy{}).withDefaults(); d.Initial != time.Second || d.Max != time.Minute {
		t.Errorf("default policy = %+v, want 1s to 1m", d)
	}
	if d := (RetryPolicy{Initial: 2 * time.Minute}).withDefaults(); d.Max != 2*time.Minute {
		t.Errorf("policy with Initial over the default Max = %+v, want Max = Initial", d)
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a setting", configErrorf("MNEMO_EMBEDDER=%q: use wordvec, openai, ollama or none", "magic"), true},
		{"a wrapped setting", fmt.Errorf("open: %w", configErrorf("bad")), true},
		{"a refused key", fmt.Errorf("qdrant at q:6334: %w", qdrant.ErrUnauthorized), true},
		{"a foreign schema", fmt.Errorf("qdrant at q:6334: %w", qdrant.ErrSchema), true},
		{"an unreachable backend", errors.New("dial tcp: connection refused"), false},
		{"a timeout", fmt.Errorf("qdrant at q:6334: %w", context.DeadlineExceeded), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("%s: permanent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// vectorsFile writes a tiny word-vector model and returns its path.
func vectorsFile(t *testing.T) string {
	t.Helper()
	const dim = 4
	var words []wordvec.Word
	for i, w := range []string{"the", "tomato", "garden", "rain"} {
		v := make([]float32, dim)
		v[i%dim] = 1
		words = append(words, wordvec.Word{Text: w, Rank: i, Vector: v})
	}
	data, err := wordvec.Encode(dim, 1000, words)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vectors.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewEmbedder(t *testing.T) {
	vectors := vectorsFile(t)
	missing := filepath.Join(t.TempDir(), "none.bin")
	for _, tc := range []struct {
		name     string
		settings Settings
		want     string // the embedder's name prefix; "" lexical only
		wantKind string // embedderKind
		wantWarn bool
		wantErr  string // "": no error
	}{
		{"default with vectors", Settings{Vectors: vectors}, "wordvec", "wordvec", false, ""},
		{"default without vectors: lexical only, with a warning", Settings{Vectors: missing}, "", "wordvec", true, ""},
		{"wordvec", Settings{Embedder: "WordVec", Vectors: vectors}, "wordvec", "wordvec", false, ""},
		{"wordvec asked for, missing", Settings{Embedder: "wordvec", Vectors: missing}, "", "wordvec", false, "word vectors"},
		{"none", Settings{Embedder: "none"}, "", "none (lexical only)", false, ""},
		{"openai", Settings{Embedder: "openai", EmbedModel: "text-embedding-3-small", EmbedDim: 1536}, "openai:text-embedding-3-small:1536", "openai", false, ""},
		{"ollama", Settings{Embedder: "Ollama", EmbedModel: "qwen3-embedding:0.6b", EmbedDim: 1024, EmbedBaseURL: "http://gpu:11434"}, "ollama:qwen3-embedding:0.6b:1024", "ollama", false, ""},
		{"openai without a dimension", Settings{Embedder: "openai", EmbedModel: "m"}, "", "openai", false, "MNEMO_EMBEDDER=openai needs MNEMO_EMBED_DIM"},
		{"ollama without a model", Settings{Embedder: "ollama", EmbedDim: 8}, "", "ollama", false, "MNEMO_EMBEDDER=ollama needs MNEMO_EMBED_MODEL"},
		{"unknown", Settings{Embedder: "magic"}, "", "unknown", false, `MNEMO_EMBEDDER="magic": use wordvec, openai, ollama or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			emb, err := newEmbedder(tc.settings, slog.New(slog.NewTextHandler(&logs, nil)))
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !permanent(err) {
					t.Errorf("err = %v, want a configuration error containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && emb != nil:
				t.Errorf("embedder %s, want none", emb.Name())
			case tc.want != "" && (emb == nil || !strings.HasPrefix(emb.Name(), tc.want)):
				t.Errorf("embedder %v, want %s", emb, tc.want)
			}
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != tc.wantWarn {
				t.Errorf("warned %v, want %v: %s", warned, tc.wantWarn, logs.String())
			}
			if got := embedderKind(tc.settings); got != tc.wantKind {
				t.Errorf("embedderKind = %q, want %q", got, tc.wantKind)
			}
		})
	}
	if b := backendName(Settings{QdrantAddr: "q:6334"}); b != "qdrant" {
		t.Errorf("backend with a Qdrant address = %q", b)
	}
	if b := backendName(Settings{}); b != "embedded" {
		t.Errorf("backend without a Qdrant address = %q", b)
	}
}

// TestOpenEmbedded: the embedded index lives under the root, and one that
// cannot be read is rebuilt from the journal rather than failing.
func TestOpenEmbedded(t *testing.T) {
	root := t.TempDir()
	j, _ := openJournal(t, journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"})
	o := Options{Root: root, Journal: j, Session: session, Settings: Settings{Embedder: "none"}, Log: testLog(t)}
	rs, err := openSystem(t.Context(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.indexer.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs.index.Close()
	dir := filepath.Join(root, "index", "embedded")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("nothing under %s: %v", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte("not an index"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	var logs syncBuffer
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	rs, err = openSystem(t.Context(), o, nil)
	if err != nil {
		t.Fatalf("open over a corrupt index: %v", err)
	}
	if !strings.Contains(logs.String(), "rebuilding it from the journal") {
		t.Errorf("log = %q, want the rebuild", logs.String())
	}
	defer rs.index.Close()
	if err := rs.indexer.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	hits, err := rs.search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("search after the rebuild = %+v, %v", hits, err)
	}
}

func TestReindex(t *testing.T) {
	root := t.TempDir()
	j, _ := openJournal(t,
		journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"},
		journal.Record{Role: memory.RoleAgent, Text: "they like sun"},
		journal.Record{Role: memory.RoleUser, Text: "  "},
	)
	writeNote(t, root, "knowledge/people/ana.md", note(vault.NewNoteID(), "active", 0.9, "## Garden\n\nAna grows tomatoes.\n"))
	o := Options{Root: root, Journal: j, Session: session, Settings: Settings{Embedder: "none"}}
	for range 2 { // the second run starts from an index holding everything
		var out bytes.Buffer
		if err := Reindex(t.Context(), o, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "indexed 2 documents from the journal (1 records had nothing to index) and 1 knowledge notes") || !strings.Contains(out.String(), "backend embedded, embedder none (lexical only)") {
			t.Errorf("Reindex said %q", out.String())
		}
	}
	ix, err := embedded.Open(filepath.Join(root, "index", "embedded"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if n, err := ix.Count(t.Context()); err != nil || n != 3 {
		t.Errorf("index holds %d documents (%v), want 3 (two turns, one note's section)", n, err)
	}
	if err := Reindex(t.Context(), Options{Root: root, Settings: Settings{Embedder: "none"}}, &bytes.Buffer{}); err == nil {
		t.Error("Reindex without a journal succeeded")
	}
	if err := Reindex(t.Context(), Options{Root: root, Journal: j, Settings: Settings{Embedder: "magic"}}, &bytes.Buffer{}); err == nil || !permanent(err) {
		t.Errorf("Reindex with a bad embedder = %v, want the configuration error", err)
	}
}

// TestQdrant: with a Qdrant address the index is there; a key Qdrant
// refuses is not retried.
func TestQdrant(t *testing.T) {
	q, err := qdranttest.Start(qdranttest.Options{APIKey: "right-key"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	j, _ := openJournal(t, journal.Record{Role: memory.RoleUser, Text: "we planted tomatoes"})

	t.Run("refused key", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		m := New(Options{Journal: j, Session: session, Settings: Settings{Embedder: "none", QdrantAddr: q.Addr(), QdrantAPIKey: "wrong-key"},
			Retry: RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}, Log: testLog(t)})
		open := m.opener
		calls := 0
		m.opener = func(ctx context.Context) (*system, error) {
			if calls++; calls > 1 {
				cancel()
			}
			return open(ctx)
		}
		m.Run(ctx)
		if h := m.Health(); calls != 1 || h.Failing != msgRecallMisconfigured || h.Backend != "qdrant" || strings.Contains(h.Failing, "wrong-key") {
			t.Errorf("after %d attempts, health = %+v, want one attempt, misconfigured", calls, h)
		}
	})
	t.Run("open", func(t *testing.T) {
		m := New(Options{Journal: j, Session: session, Settings: Settings{Embedder: "none", QdrantAddr: q.Addr(), QdrantAPIKey: "right-key"}, Log: testLog(t)})
		rs, err := m.opener(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.indexer.CatchUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		m.rs = rs
		defer rs.index.Close()
		hits, err := m.Search(t.Context(), memory.SearchRequest{Query: "tomatoes", K: 5})
		if err != nil || len(hits) != 1 || q.Calls("/qdrant.Points/Query") == 0 {
			t.Errorf("search = %+v, %v with %d Qdrant queries, want the turn from Qdrant", hits, err, q.Calls("/qdrant.Points/Query"))
		}
		if h := m.Health(); h.Backend != "qdrant" || !h.Ready || h.Searches.Recall != 1 {
			t.Errorf("health = %+v", h)
		}
	})
}

// TestLexicalNote: recall that fell back to lexical only for want of the
// default word vectors says so in its health, with the path it looked
// at; recall configured lexical, or with vectors, has no note.
func TestLexicalNote(t *testing.T) {
	vectors := vectorsFile(t)
	missing := filepath.Join(t.TempDir(), "none.bin")
	for _, tc := range []struct {
		name     string
		settings Settings
		want     string // a substring of the note; "" no note
	}{
		{"default without vectors", Settings{Vectors: missing}, missing},
		{"default with vectors", Settings{Vectors: vectors}, ""},
		{"lexical asked for", Settings{Embedder: "none", Vectors: missing}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := openJournal(t)
			o := Options{Root: t.TempDir(), Journal: j, Session: session, Settings: tc.settings, Log: testLog(t)}
			rs, err := opener(o)(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer rs.index.Close()
			note := rs.health().Note
			if tc.want == "" && note != "" || tc.want != "" && !strings.Contains(note, tc.want) {
				t.Errorf("note = %q, want one naming %q", note, tc.want)
			}
		})
	}
}
