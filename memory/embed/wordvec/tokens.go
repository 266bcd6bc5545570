package wordvec

import (
	"unicode"
	"unicode/utf8"
)

// Tokens splits s into lower-case words: maximal runs of letters and
// digits (combining marks continue a word but never start one); every
// other rune separates words. "Don't panic, it's 2024!" gives [don t
// panic it s 2024]. Numbers are kept as tokens, though the wink
// vocabulary has none, so they are out of vocabulary.
//
// Converted model files keep only words that Tokens returns whole, so a
// word in the file is always reachable from text.
func Tokens(s string) []string {
	var out []string
	var buf []byte
	for i := 0; ; {
		buf, i = nextToken(s, i, buf)
		if len(buf) == 0 {
			return out
		}
		out = append(out, string(buf))
	}
}

// isToken reports whether w is exactly one token of Tokens, without
// allocating: every rune is one nextToken keeps, already lower case.
func isToken(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		switch {
		case size == 1 && r == utf8.RuneError:
			return false
		case !(unicode.IsLetter(r) || unicode.IsDigit(r) || i > 0 && unicode.IsMark(r)):
			return false
		case unicode.ToLower(r) != r:
			return false
		}
		i += size
	}
	return true
}

// nextToken reads the token that starts at or after s[i] into buf (which it
// resets and may grow) and returns it with the index just past it; an empty
// token means there are no more. It allocates only to grow buf.
func nextToken(s string, i int, buf []byte) (tok []byte, next int) {
	buf = buf[:0]
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
			default:
				if len(buf) > 0 {
					return buf, i
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case size == 1 && r == utf8.RuneError:
			// Not UTF-8: a separator.
		case unicode.IsLetter(r) || unicode.IsDigit(r) || len(buf) > 0 && unicode.IsMark(r):
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			i += size
			continue
		}
		if len(buf) > 0 {
			return buf, i
		}
		i += size
	}
	return buf, i
}
