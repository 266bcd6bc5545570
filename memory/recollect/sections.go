package recollect

import "strings"

// section is one part of a note's Markdown body: a heading line and what
// follows it up to the next heading, or the text before the first heading
// (Heading ""). Text is the section verbatim, its heading line first.
type section struct {
	Heading string
	Text    string
}

// noteSections cuts a Markdown body at its ATX headings ("#" to "######"
// followed by a space or the line's end), outside fenced code blocks. The
// sections' texts, joined, are body exactly; an empty body has none.
func noteSections(body string) []section {
	var out []section
	cur := section{}
	start := 0
	fence := "" // the fence that opened the code block we are in
	for i := 0; i < len(body); {
		end := strings.IndexByte(body[i:], '\n')
		next := len(body)
		if end >= 0 {
			next = i + end + 1
		}
		line := strings.TrimRight(body[i:next], "\r\n")
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), fence[:1])) == "":
				fence = ""
			}
		} else if h, ok := heading(line); ok && fence == "" {
			if i > start {
				cur.Text = body[start:i]
				out = append(out, cur)
			}
			cur, start = section{Heading: h}, i
		}
		i = next
	}
	if start < len(body) {
		cur.Text = body[start:]
		out = append(out, cur)
	}
	return out
}

// heading returns the text of an ATX heading line (up to three spaces of
// indentation, one to six '#', then a space or nothing), without its
// marks or a closing run of '#'.
func heading(line string) (string, bool) {
	s := line
	for k := 0; k < 3 && strings.HasPrefix(s, " "); k++ {
		s = s[1:]
	}
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return "", false
	}
	h := strings.TrimSpace(s[n:])
	if t := strings.TrimRight(h, "#"); t != h && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		h = strings.TrimSpace(t)
	}
	return h, true
}

// fenceOf is the fence a line opens or closes a code block with (three or
// more '`' or '~', indented at most three spaces), or "".
func fenceOf(line string) string {
	s := line
	for k := 0; k < 3 && strings.HasPrefix(s, " "); k++ {
		s = s[1:]
	}
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}
