package recall

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestIndexText(t *testing.T) {
	tests := []struct {
		doc  Doc
		want string
	}{
		{Doc{Text: "hello"}, "hello"},
		{Doc{Text: "hello", Context: "before"}, "hello\nbefore"},
		{Doc{Context: "only context"}, "\nonly context"},
	}
	for _, tt := range tests {
		if got := IndexText(tt.doc); got != tt.want {
			t.Errorf("IndexText(%+v) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestIndexTokens(t *testing.T) {
	text := []string{"carolin", "paint", "sunset"} // Tokens("Caroline paints sunsets")
	ctx := []string{"dog", "ran", "home"}          // Tokens("the dogs ran home")
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	spare := make([]string, 2, 64)
	spare[0], spare[1] = "keep", "me"
	tests := []struct {
		name string
		dst  []string
		doc  Doc
		want []string
	}{
		{"text counts TextWeight times, then the context", nil,
			Doc{Text: "Caroline paints sunsets", Context: "the dogs ran home"},
			cat(slices.Repeat(text, TextWeight), ctx)},
		{"empty text: the context alone", nil, Doc{Context: "the dogs ran home"}, ctx},
		{"empty context: the text alone", nil, Doc{Text: "Caroline paints sunsets"}, slices.Repeat(text, TextWeight)},
		{"stopwords only: nothing", nil, Doc{Text: "the and of", Context: "I"}, nil},
		{"both empty: nothing", nil, Doc{}, nil},
		{"appends to dst", []string{"keep", "me"},
			Doc{Text: "Caroline paints sunsets", Context: "the dogs ran home"},
			cat([]string{"keep", "me"}, slices.Repeat(text, TextWeight), ctx)},
		{"appends to dst with spare capacity", spare,
			Doc{Text: "Caroline paints sunsets", Context: "the dogs ran home"},
			cat([]string{"keep", "me"}, slices.Repeat(text, TextWeight), ctx)},
		{"dst kept when there is nothing to add", []string{"keep", "me"}, Doc{Text: "the"}, []string{"keep", "me"}},
		{"dst kept with an empty text", []string{"keep"}, Doc{Context: "the dogs ran home"}, cat([]string{"keep"}, ctx)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.dst)
			got := IndexTokens(tt.dst, tt.doc)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("IndexTokens(%q, %+v) mismatch (-want +got):\n%s", before, tt.doc, diff)
			}
			// What dst held is untouched, in place too.
			if diff := cmp.Diff(before, tt.dst, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("IndexTokens changed dst (-before +after):\n%s", diff)
			}
			// The terms are Tokens' own.
			want := cat(before, slices.Repeat(Tokens(tt.doc.Text), TextWeight), Tokens(tt.doc.Context))
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("IndexTokens differs from Tokens (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreceding(t *testing.T) {
	long := strings.Repeat("é", ContextTurnBytes) // 2 bytes a rune
	tests := []struct {
		name   string
		n      int
		pushes []string
		want   []string // Context before each push, then after the last
	}{
		{"none kept", 0, []string{"a", "b"}, []string{"", "", ""}},
		{"negative keeps none", -1, []string{"a"}, []string{"", ""}},
		{"one", 1, []string{"a", "b", "c"}, []string{"", "a", "b", "c"}},
		{"two, oldest first", 2, []string{"a", "b", "c"}, []string{"", "a", "a\nb", "b\nc"}},
		{"blank turns are skipped", 2, []string{"a", " \n", "b"}, []string{"", "a", "a", "a\nb"}},
		{"long turns are cut at a rune boundary", 1, []string{"x" + long}, []string{"", "x" + long[:ContextTurnBytes-2]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPreceding(tt.n)
			var got []string
			for _, s := range tt.pushes {
				got = append(got, p.Context())
				p.Push(s)
			}
			got = append(got, p.Context())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("contexts (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("clone and reset", func(t *testing.T) {
		p := NewPreceding(2)
		p.Push("a")
		c := p.Clone()
		p.Push("b")
		c.Push("c")
		if got, want := p.Context(), "a\nb"; got != want {
			t.Errorf("original = %q, want %q", got, want)
		}
		if got, want := c.Context(), "a\nc"; got != want {
			t.Errorf("clone = %q, want %q", got, want)
		}
		p.Reset()
		if got := p.Context(); got != "" {
			t.Errorf("after Reset = %q, want empty", got)
		}
		var zero Preceding
		zero.Push("x")
		if got := zero.Context(); got != "" {
			t.Errorf("zero value = %q, want empty", got)
		}
	})
}
