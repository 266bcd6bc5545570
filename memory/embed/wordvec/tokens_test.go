package wordvec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/memory/embed/wordvec"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t\n", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"Don't panic, it's 2024!", []string{"don", "t", "panic", "it", "s", "2024"}},
		{"well-known e-mail", []string{"well", "known", "e", "mail"}},
		{"U.S. v3.2", []string{"u", "s", "v3", "2"}},
		{"snake_case and camelCase", []string{"snake", "case", "and", "camelcase"}},
		{"Café ÉCOLE naïve", []string{"café", "école", "naïve"}},
		{"Straße ΣΟΦΙΑ москва", []string{"straße", "σοφια", "москва"}},
		{"東京 is big", []string{"東京", "is", "big"}},
		{"e\u0301t\u0301e\u0301", []string{"e\u0301t\u0301e\u0301"}}, // combining marks continue a word
		{"\u0301start", []string{"start"}},                           // but never start one
		{"emoji 🙂🐶 here", []string{"emoji", "here"}},
		{"bad \xff\xfe utf8\xffx", []string{"bad", "utf8", "x"}},
		{"١٢٣ arabic digits", []string{"١٢٣", "arabic", "digits"}},
		{"```go\nfunc main() {}\n```", []string{"go", "func", "main"}},
		{strings.Repeat("ab ", 3), []string{"ab", "ab", "ab"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, wordvec.Tokens(tt.in)); diff != "" {
			t.Errorf("Tokens(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
