package tui

import (
	"log/slog"
	"strings"

	"github.com/charmbracelet/glamour"
	gansi "github.com/charmbracelet/glamour/ansi"
	gstyles "github.com/charmbracelet/glamour/styles"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// markdown renders Markdown with glamour. It keeps one renderer per wrap
// width (building one is the expensive part) and is used from the UI
// goroutine only.
type markdown struct {
	style     gansi.StyleConfig
	profile   termenv.Profile
	log       *slog.Logger
	renderers map[int]*glamour.TermRenderer
}

// newMarkdown returns a renderer for a glamour standard style ("dark",
// "light", "notty", "ascii", …). The style is fixed here, never "auto":
// the caller detects the background once, before the program starts.
func newMarkdown(style string, profile termenv.Profile, log *slog.Logger) *markdown {
	base, ok := gstyles.DefaultStyles[style]
	if !ok || style == gstyles.AutoStyle {
		base = &gstyles.DarkStyleConfig
	}
	cfg := *base
	// The chat indents messages itself; glamour's document margin would
	// only waste columns.
	var zero uint
	cfg.Document.Margin = &zero
	return &markdown{style: cfg, profile: profile, log: log, renderers: make(map[int]*glamour.TermRenderer)}
}

func (md *markdown) renderer(width int) *glamour.TermRenderer {
	if r, ok := md.renderers[width]; ok {
		return r
	}
	if len(md.renderers) >= 4 {
		clear(md.renderers) // a resize storm: keep only what is in use
	}
	r, err := glamour.NewTermRenderer(
		glamour.WithStyles(md.style),
		glamour.WithWordWrap(width),
		glamour.WithColorProfile(md.profile),
	)
	if err != nil {
		md.log.Error("glamour renderer", "width", width, "err", err)
		return nil
	}
	md.renderers[width] = r
	return r
}

// render renders src wrapped to width and returns its lines, without the
// blank lines glamour puts around a document and without the padding it
// puts after each line. No line is wider than width.
func (md *markdown) render(src string, width int) []string {
	width = max(width, 1)
	r := md.renderer(width)
	if r == nil {
		return plainLines(src, width)
	}
	out, err := r.Render(src)
	if err != nil {
		md.log.Warn("render markdown", "err", err)
		return plainLines(src, width)
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if ansi.StringWidth(l) > width {
			l = ansi.Truncate(l, width, "")
		}
		lines[i] = l
	}
	return trimBlank(lines)
}

// trimBlank drops blank lines at both ends.
func trimBlank(lines []string) []string {
	for len(lines) > 0 && isBlank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && isBlank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func isBlank(l string) bool {
	return strings.TrimSpace(ansi.Strip(l)) == ""
}

// plainLines wraps plain text to width, keeping its line breaks.
func plainLines(s string, width int) []string {
	if s == "" {
		return nil
	}
	return strings.Split(ansi.Wrap(s, max(width, 1), ""), "\n")
}

// Limits of one Markdown block. A block longer than this is cut so that a
// growing reply never re-renders more than one bounded block per frame.
const (
	maxBlockLines  = 120
	maxFenceLines  = 60
	maxPlainTail   = 16 << 10 // a tail this long without a newline renders as plain text
	blockSeparator = ""
)

// mdDoc is Markdown cut into blocks that glamour renders independently, so
// that a reply growing token by token re-renders only its last, open
// block. Blocks are cut at blank lines between top-level blocks (never
// inside a fenced code block or a list), after a top-level fence, and,
// for very long fences, inside them (the fence is closed and reopened).
// A finished reply is cut the same way, so what streamed and what is
// stored render alike.
type mdDoc struct {
	text strings.Builder

	scan       int    // bytes of text whose complete lines were cut
	blockStart int    // start of the open block
	prefix     string // text that opens the open block (a reopened fence)
	blockLines int
	hasContent bool // the open block holds a non-blank line
	inList     bool // the open block's last top-level line is a list item
	pendingEnd int  // where the open block ends if the next line starts a new one; -1 if none

	inFence     bool
	fenceChar   byte
	fenceLen    int
	fenceIndent int
	fenceOpen   string

	blocks []*mdBlock

	tailW, tailLen int // cache of the open block's rendering
	tailLines      []string
}

type mdBlock struct {
	src   string
	w     int
	lines []string
}

func newDoc(s string) *mdDoc {
	d := &mdDoc{pendingEnd: -1}
	d.append(s)
	return d
}

// append adds streamed text; it is cut into blocks lazily, at render.
func (d *mdDoc) append(s string) { d.text.WriteString(s) }

func (d *mdDoc) String() string { return d.text.String() }

func (d *mdDoc) Len() int { return d.text.Len() }

// cut processes every complete line not processed yet.
func (d *mdDoc) cut() {
	text := d.text.String()
	for {
		nl := strings.IndexByte(text[d.scan:], '\n')
		if nl < 0 {
			return
		}
		start, end := d.scan, d.scan+nl+1
		d.scan = end
		d.line(text, start, end)
	}
}

func (d *mdDoc) line(text string, start, end int) {
	l := strings.TrimRight(text[start:end], "\r\n")
	if d.inFence {
		d.blockLines++
		if isFenceClose(l, d.fenceChar, d.fenceLen) {
			d.inFence = false
			if d.fenceIndent == 0 {
				d.close(text, end, "")
				d.blockStart = end
			}
			return
		}
		if d.fenceIndent == 0 && d.blockLines >= maxFenceLines {
			d.close(text, end, strings.Repeat(string(d.fenceChar), d.fenceLen)+"\n")
			d.blockStart = end
			d.prefix = d.fenceOpen
			d.hasContent = true
		}
		return
	}
	if strings.TrimSpace(l) == "" {
		if d.hasContent && d.pendingEnd < 0 {
			d.pendingEnd = start
		}
		if !d.hasContent {
			d.blockStart = end // skip leading blank lines
		}
		return
	}
	if d.pendingEnd >= 0 {
		// A new block starts unless the line continues the one before: an
		// indented line, or the next item of a list.
		if !startsIndented(l) && !(d.inList && isListItem(l)) {
			d.close(text, d.pendingEnd, "")
			d.blockStart = start
		}
		d.pendingEnd = -1
	}
	if !startsIndented(l) {
		d.inList = isListItem(l)
	}
	d.hasContent = true
	d.blockLines++
	if c, n, indent, ok := fenceOpen(l); ok {
		d.inFence, d.fenceChar, d.fenceLen, d.fenceIndent = true, c, n, indent
		d.fenceOpen = text[start:end]
		return
	}
	if d.blockLines >= maxBlockLines {
		d.close(text, end, "")
		d.blockStart = end
	}
}

// close ends the open block at end, adding suffix to its source.
func (d *mdDoc) close(text string, end int, suffix string) {
	src := d.prefix + text[d.blockStart:end] + suffix
	if strings.TrimSpace(src) != "" {
		d.blocks = append(d.blocks, &mdBlock{src: src})
	}
	d.prefix = ""
	d.blockLines = 0
	d.hasContent = false
	d.inList = false
	d.pendingEnd = -1
	d.tailLen = -1
}

// lines renders the document at width.
func (d *mdDoc) lines(md *markdown, width int) []string {
	d.cut()
	var out []string
	for _, b := range d.blocks {
		if b.w != width || b.lines == nil {
			b.lines, b.w = md.render(b.src, width), width
		}
		if len(out) > 0 && len(b.lines) > 0 {
			out = append(out, blockSeparator)
		}
		out = append(out, b.lines...)
	}
	text := d.text.String()
	if d.tailW != width || d.tailLen != len(text) {
		d.tailW, d.tailLen = width, len(text)
		tail := d.prefix + text[d.blockStart:]
		switch {
		case strings.TrimSpace(tail) == "":
			d.tailLines = nil
		case len(text)-d.scan > maxPlainTail:
			// A huge line with no end in sight: glamour on it every frame
			// would be quadratic. Plain text until its newline arrives.
			d.tailLines = plainLines(sanitize(tail), width)
		default:
			d.tailLines = md.render(tail, width)
		}
	}
	if len(out) > 0 && len(d.tailLines) > 0 {
		out = append(out, blockSeparator)
	}
	return append(out, d.tailLines...)
}

func startsIndented(l string) bool { return l != "" && (l[0] == ' ' || l[0] == '\t') }

// isListItem reports whether l starts a Markdown list item: "- ", "* ",
// "+ " or "1. " / "1) ".
func isListItem(l string) bool {
	if len(l) >= 2 && (l[0] == '-' || l[0] == '*' || l[0] == '+') && (l[1] == ' ' || l[1] == '\t') {
		return true
	}
	i := 0
	for i < len(l) && i < 9 && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && (l[i+1] == ' ' || l[i+1] == '\t')
}

// fenceOpen reports whether l opens a fenced code block.
func fenceOpen(l string) (c byte, n, indent int, ok bool) {
	for indent < len(l) && indent < 4 && l[indent] == ' ' {
		indent++
	}
	if indent > 3 || indent >= len(l) || (l[indent] != '`' && l[indent] != '~') {
		return 0, 0, 0, false
	}
	c = l[indent]
	for n = 0; indent+n < len(l) && l[indent+n] == c; n++ {
	}
	if n < 3 || (c == '`' && strings.IndexByte(l[indent+n:], '`') >= 0) {
		return 0, 0, 0, false
	}
	return c, n, indent, true
}

func isFenceClose(l string, c byte, n int) bool {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return false
	}
	m := 0
	for m < len(t) && t[m] == c {
		m++
	}
	return m >= n && strings.TrimSpace(t[m:]) == ""
}
