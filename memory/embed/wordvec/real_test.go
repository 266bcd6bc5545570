package wordvec

import (
	"cmp"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// realModel loads the converted wink file named by MNEMO_WORDVEC, or skips.
func realModel(tb testing.TB) *Model {
	tb.Helper()
	path := os.Getenv("MNEMO_WORDVEC")
	if path == "" {
		tb.Skip("MNEMO_WORDVEC is not set: build the real vectors with `make vectors` and point it at .cache/vectors/wink-sg100-100k.bin")
	}
	start := time.Now()
	m, err := Load(path)
	if err != nil {
		tb.Fatalf("Load(%s): %v", path, err)
	}
	tb.Logf("loaded %d words × %d dims in %v", m.Len(), m.Dim(), time.Since(start))
	return m
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestRealSimilarity checks, on the real vectors, that related texts are
// closer than unrelated ones, with and without the common component.
func TestRealSimilarity(t *testing.T) {
	m := realModel(t)
	tests := []struct {
		text, near, far string
	}{
		{"dog", "puppy", "tax"},
		{"cat", "kitten", "parliament"},
		{"doctor", "nurse", "guitar"},
		{"I walked my dog in the park", "the puppy played on the grass", "taxes are due in April"},
		{"We went hiking in the mountains last weekend", "a trip to the hills to climb", "my laptop keyboard is broken"},
		{"She adopted a kitten from the shelter", "her new cat from the animal rescue", "the stock market fell sharply"},
		{"What did Caroline paint?", "Caroline painted a sunset over the lake", "Melanie signed up for a pottery class"},
	}
	for _, opts := range []Options{{}, {RemovePC: true}} {
		e := m.Embedder(opts)
		for _, tt := range tests {
			vs, err := e.Embed(t.Context(), []string{tt.text, tt.near, tt.far})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			near, far := dot(vs[0], vs[1]), dot(vs[0], vs[2])
			t.Logf("%s: %q ~ %q %.3f, ~ %q %.3f", e.Name(), tt.text, tt.near, near, tt.far, far)
			if near <= far {
				t.Errorf("%s: sim(%q, %q) = %.3f, not above sim(%q, %q) = %.3f", e.Name(), tt.text, tt.near, near, tt.text, tt.far, far)
			}
		}
	}
}

// TestRealNeighbours logs each probe word's nearest neighbours among the
// model's 20,000 most frequent words and checks that an expected one is
// among the ten nearest.
func TestRealNeighbours(t *testing.T) {
	m := realModel(t)
	tests := []struct{ word, want string }{
		{"dog", "cat"},
		{"coffee", "tea"},
		{"paris", "london"},
		{"happy", "glad"},
		{"guitar", "piano"},
		{"monday", "tuesday"},
		{"doctor", "physician"},
		{"birthday", "celebrate"},
	}
	for _, tt := range tests {
		got := nearest(m, tt.word, 20000, 10)
		t.Logf("%s: %s", tt.word, strings.Join(got, " "))
		if !slices.Contains(got, tt.want) {
			t.Errorf("nearest(%q) = %v, want %q among them", tt.word, got, tt.want)
		}
	}
}

// nearest returns the k words closest to word by cosine among the model's
// top most frequent words.
func nearest(m *Model, word string, top, k int) []string {
	v, ok := m.Vector(word)
	if !ok {
		return nil
	}
	type hit struct {
		w string
		s float64
	}
	var hits []hit
	for i := range min(top, m.Len()) {
		w := m.word(i)
		if w == word {
			continue
		}
		u, _ := m.Vector(w)
		var d, nu, nv float64
		for j := range u {
			d += float64(u[j]) * float64(v[j])
			nu += float64(u[j]) * float64(u[j])
			nv += float64(v[j]) * float64(v[j])
		}
		hits = append(hits, hit{w, d / math.Sqrt(nu*nv)})
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(b.s, a.s) })
	var out []string
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.w)
	}
	return out
}

// TestRealRerank checks, on the real vectors, that soft term matching puts
// a text that answers a question in other words above one that shares only
// the question's frame, the failures of exact terms it is there for.
func TestRealRerank(t *testing.T) {
	e := realModel(t).Embedder(Options{})
	tests := []struct {
		query, answer, decoy string
	}{
		{"What was her mom passionate about?", "My mom had a big passion for cooking.", "Where do you most often do yoga?"},
		{"What event did he attend in Boston?", "I went to a fancy gala in Boston yesterday.", "Gotta run, bye!"},
		{"What digestive issue did Sam have?", "I ended up in the ER with a severe stomachache, it was gastritis.", "Looks good to eat! Ginger snaps are my weakness."},
		{"Which bands has Dave enjoyed listening to?", "There were so many great bands, my favorite was Aerosmith.", "Cool, it's the logo for my rock band."},
	}
	for _, tt := range tests {
		s, err := e.Rerank(t.Context(), tt.query, []string{tt.answer, tt.decoy})
		if err != nil {
			t.Fatalf("Rerank: %v", err)
		}
		t.Logf("%q: answer %.3f, decoy %.3f", tt.query, s[0], s[1])
		if s[0] <= s[1] {
			t.Errorf("Rerank(%q): answer %q scored %.3f, not above %q at %.3f", tt.query, tt.answer, s[0], tt.decoy, s[1])
		}
	}
}
