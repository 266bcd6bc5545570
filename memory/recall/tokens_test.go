package recall

import (
	"hash/fnv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"stopwords only", "What did I do with it?", nil},
		{"lower case and punctuation", "Hello, World! Coffee-time.", []string{"hello", "world", "coffe", "time"}},
		{"numbers kept", "On 7 May 2023 at 10:30", []string{"7", "may", "2023", "10", "30"}},
		{"plurals", "parties party cookies cookie boxes box classes class", []string{"parti", "parti", "cooki", "cooki", "box", "box", "class", "class"}},
		{"ing and ed", "hiking hiked hike running stopped played needed", []string{"hike", "hike", "hike", "run", "stop", "play", "need"}},
		{"derivations", "passionate passion generously generous", []string{"passion", "passion", "generous", "generous"}},
		{"short words not stemmed", "bed red ties yes", []string{"bed", "red", "tie", "yes"}},
		{"no vowel stem kept", "string spring thing", []string{"string", "spring", "thing"}},
		{"possessive", "Caroline's dog, Melanie\u2019s cat", []string{"carolin", "dog", "melani", "cat"}},
		{"apostrophe joins", "I can't and won't", []string{"cant", "wont"}},
		{"quotes separate", "'quoted' words'", []string{"quot", "word"}},
		{"unicode letters", "Café MÜNCHEN straße", []string{"café", "münchen", "straße"}},
		{"han one token per rune", "我喜欢咖啡", []string{"我", "喜", "欢", "咖", "啡"}},
		{"emoji separates", "pizza🍕night 👍", []string{"pizza", "night"}},
		{"invalid utf-8 separates", "abc\xffdef\xc3", []string{"abc", "def"}},
		{"code block", "```go\nfmt.Println(x)\n```", []string{"go", "fmt", "println", "x"}},
		{"mixed alnum not stemmed", "mp3s 7th", []string{"mp3s", "7th"}},
		{"combining mark kept", "cafe\u0301", []string{"cafe\u0301"}},
		{"leading mark dropped", "\u0301abc", []string{"abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokens(tt.text)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tokens(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestTokensBounds(t *testing.T) {
	long := strings.Repeat("x", 10*MaxTokenBytes)
	got := Tokens(long)
	if len(got) != 1 || len(got[0]) != MaxTokenBytes {
		t.Errorf("Tokens(long word): got %d tokens of len %d, want 1 of %d", len(got), len(got[0]), MaxTokenBytes)
	}
	// A multi-byte word is cut at a rune boundary.
	got = Tokens(strings.Repeat("é", MaxTokenBytes))
	if len(got) != 1 || !utf8.ValidString(got[0]) || len(got[0]) > MaxTokenBytes {
		t.Errorf("Tokens(long multi-byte word) = %q, want one valid token of at most %d bytes", got, MaxTokenBytes)
	}
	huge := strings.Repeat("word ", 2*MaxTokenizeBytes/5)
	if n, max := len(Tokens(huge)), MaxTokenizeBytes/5+1; n > max {
		t.Errorf("Tokens(huge): got %d tokens, want at most %d", n, max)
	}
}

func TestTermID(t *testing.T) {
	for _, tok := range []string{"", "coffee", "münchen", "2023"} {
		h := fnv.New32a()
		h.Write([]byte(tok))
		if got, want := TermID(tok), h.Sum32(); got != want {
			t.Errorf("TermID(%q) = %#x, want %#x", tok, got, want)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "I can't", "abc\xffdef", "我喜欢", "cafe\u0301", "'s'", "a's", "x'\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokens(s) {
			if tok == "" || len(tok) > MaxTokenBytes || !utf8.ValidString(tok) {
				t.Fatalf("Tokens(%q) produced bad token %q", s, tok)
			}
			if tok != strings.ToLower(tok) {
				t.Fatalf("Tokens(%q) produced non-lower-case token %q", s, tok)
			}
		}
	})
}

func BenchmarkTokens(b *testing.B) {
	text := "Caroline: I went hiking with my friends last weekend, and we saw some amazing waterfalls near the lake. The kids loved it!"
	b.SetBytes(int64(len(text)))
	var dst []string
	for b.Loop() {
		dst = AppendTokens(dst[:0], text)
	}
}
