package wordvec

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTokens checks the tokenizer on arbitrary input: tokens are non-empty
// valid UTF-8, each is a whole token (isToken), tokenizing the tokens
// joined by spaces gives them back, and isToken(s) holds exactly when s
// tokenizes to itself alone.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{"", "Hello, World!", "don't", "Café ÉCOLE", "e\u0301t\u0301e\u0301", "\u0301x",
		"東京 москва ΣΟΦΙΑ", "🙂🐶", "\xff\xfe", "İstanbul", "ǅ ǈ", "a-b", "123", "x\u0345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokens(s)
		for _, tok := range toks {
			if tok == "" || !utf8.ValidString(tok) || !isToken(tok) {
				t.Fatalf("Tokens(%q) has token %q, not a whole token", s, tok)
			}
		}
		if again := Tokens(strings.Join(toks, " ")); !slices.Equal(again, toks) {
			t.Fatalf("Tokens(join(Tokens(%q))) = %q, want %q", s, again, toks)
		}
		if got, want := isToken(s), len(toks) == 1 && toks[0] == s; got != want {
			t.Fatalf("isToken(%q) = %v, but Tokens gives %q", s, got, toks)
		}
	})
}
