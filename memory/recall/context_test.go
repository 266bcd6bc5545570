package recall

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
