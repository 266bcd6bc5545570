package tui

import (
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"
	"github.com/muesli/termenv"
)

func testMarkdown() *markdown {
	return newMarkdown("dark", termenv.Ascii, slog.New(slog.DiscardHandler))
}

const sampleReply = "# Plan\n\nYou decided to plant **tomatoes** and `basil`.\n\n" +
	"1. dig the bed\n2. water it\n\n3. plant, a loose item\n\n   with a continuation paragraph\n\n" +
	"- one\n- two\n\n" +
	"```go\nfunc main() {\n\n\tprintln(\"blank line above is inside the fence\")\n}\n```\n\n" +
	"> a quote\n\nA closing paragraph with a [link](https://example.com).\n"

func TestDocBlocks(t *testing.T) {
	d := newDoc(sampleReply)
	d.cut()
	var got []string
	for _, b := range d.blocks {
		got = append(got, strings.TrimSpace(b.src))
	}
	want := []string{
		"# Plan",
		"You decided to plant **tomatoes** and `basil`.",
		"1. dig the bed\n2. water it\n\n3. plant, a loose item\n\n   with a continuation paragraph\n\n- one\n- two",
		"```go\nfunc main() {\n\n\tprintln(\"blank line above is inside the fence\")\n}\n```",
		"> a quote",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if tail := d.String()[d.blockStart:]; tail != "A closing paragraph with a [link](https://example.com).\n" {
		t.Errorf("open block = %q", tail)
	}
}

// A reply rendered while it streams, in chunks of any size, ends up
// exactly as the same text rendered at once.
func TestDocStreamingMatchesFinal(t *testing.T) {
	md := testMarkdown()
	long := sampleReply + "```\n" + strings.Repeat("code line\n", 150) + "```\n\n" + strings.Repeat("para line\n", 200)
	for _, text := range []string{sampleReply, long} {
		want := newDoc(text).lines(md, 60)
		r := rand.New(rand.NewPCG(1, 2))
		for trial := range 5 {
			d := newDoc("")
			for rest := text; rest != ""; {
				n := min(1+r.IntN(40), len(rest))
				d.append(rest[:n])
				rest = rest[n:]
				if r.IntN(3) == 0 {
					d.lines(md, 60)
				}
			}
			if diff := cmp.Diff(want, d.lines(md, 60)); diff != "" {
				t.Fatalf("trial %d: streamed rendering differs (-final +streamed):\n%s", trial, diff)
			}
		}
	}
}

func TestDocLongFenceIsCutAndReopened(t *testing.T) {
	text := "```python\n" + strings.Repeat("print('x')\n", maxFenceLines*3) + "```\n"
	d := newDoc(text)
	lines := d.lines(testMarkdown(), 80)
	if len(d.blocks) < 3 {
		t.Fatalf("a %d-line fence made %d blocks", maxFenceLines*3, len(d.blocks))
	}
	for i, b := range d.blocks {
		if !strings.HasPrefix(b.src, "```python\n") || !strings.HasSuffix(b.src, "```\n") {
			t.Errorf("block %d is not a closed fence: %.30q … %.30q", i, b.src, b.src[max(len(b.src)-30, 0):])
		}
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(ansi.Strip(l), "print('x')") {
			n++
		}
	}
	if n != maxFenceLines*3 {
		t.Errorf("rendered %d code lines, want %d", n, maxFenceLines*3)
	}
}

func TestDocHugeLineRendersPlainWhileOpen(t *testing.T) {
	d := newDoc(strings.Repeat("word ", maxPlainTail/4))
	lines := d.lines(testMarkdown(), 40)
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 40 {
			t.Fatalf("line %d is %d wide", i, w)
		}
	}
	if len(lines) < 100 {
		t.Errorf("%d lines for %d bytes", len(lines), d.Len())
	}
}

func TestRenderFitsWidth(t *testing.T) {
	md := testMarkdown()
	text := "| a | b |\n|---|---|\n| " + strings.Repeat("wide ", 30) + " | x |\n\n```\n" + strings.Repeat("y", 200) + "\n```\n"
	for _, w := range []int{20, 40, 80} {
		for i, l := range newDoc(text).lines(md, w) {
			if got := ansi.StringWidth(l); got > w {
				t.Errorf("width %d: line %d is %d wide", w, i, got)
			}
		}
	}
}

func TestListItemDetection(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"- a", true}, {"* a", true}, {"+ a", true}, {"1. a", true}, {"12) a", true},
		{"-a", false}, {"1.a", false}, {"text", false}, {"**bold**", false}, {"", false},
	} {
		if got := isListItem(tt.line); got != tt.want {
			t.Errorf("isListItem(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestFences(t *testing.T) {
	for _, tt := range []struct {
		line   string
		open   bool
		indent int
	}{
		{"```", true, 0}, {"```go", true, 0}, {"~~~~", true, 0}, {"   ```", true, 3},
		{"    ```", false, 0}, {"``", false, 0}, {"```a`b", false, 0},
	} {
		_, _, indent, ok := fenceOpen(tt.line)
		if ok != tt.open || (ok && indent != tt.indent) {
			t.Errorf("fenceOpen(%q) = %v indent %d, want %v indent %d", tt.line, ok, indent, tt.open, tt.indent)
		}
	}
	if !isFenceClose("````", '`', 3) || isFenceClose("``", '`', 3) || isFenceClose("``` x", '`', 3) {
		t.Errorf("isFenceClose wrong")
	}
}

func FuzzDoc(f *testing.F) {
	f.Add(sampleReply, 7)
	f.Add("```\nunclosed", 3)
	f.Add("- a\n\n  b\n\n```\n\n```\n~~~\n", 1)
	md := testMarkdown()
	f.Fuzz(func(t *testing.T, text string, chunk int) {
		if chunk <= 0 || len(text) > 4096 {
			return
		}
		chunk = max(chunk, len(text)/32+1) // at most 32 renders
		d := newDoc("")
		for i := 0; i < len(text); i += chunk {
			d.append(text[i:min(i+chunk, len(text))])
			for _, l := range d.lines(md, 30) {
				if w := ansi.StringWidth(l); w > 30 {
					t.Fatalf("line %d wide: %q", w, l)
				}
			}
		}
		if d.String() != text {
			t.Fatalf("text changed")
		}
	})
}
