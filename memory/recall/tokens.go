package recall

import (
	"sync"
	"sync/atomic"

	"github.com/kljensen/snowball/english"

	"unicode"
	"unicode/utf8"
)

// Tokenizer limits. They bound the work Tokens does on hostile input: a
// text is tokenized up to MaxTokenizeBytes (the rest is ignored), and a
// token longer than MaxTokenBytes is cut at a rune boundary.
const (
	MaxTokenizeBytes = 1 << 20
	MaxTokenBytes    = 64
)

// Tokens splits text into the terms every backend's lexical side indexes,
// so that BM25 behaves the same in all of them:
//
//   - text is lower-cased; a token is a run of Unicode letters, digits and
//     combining marks, and everything else separates tokens. Invalid UTF-8
//     bytes separate tokens like punctuation does.
//   - an apostrophe between letters joins them ("don't" → "dont"), except
//     that a possessive "'s" is dropped ("Caroline's" → "caroline").
//   - Han, Hiragana and Katakana characters are one token each, since
//     those scripts do not separate words with spaces.
//   - a small list of English stopwords is dropped (see isStopword).
//   - words of ASCII letters are stemmed with the Snowball English
//     (Porter2) stemmer, so "party" and "parties" give "parti",
//     "passionate" and "passion" give "passion", "hiking" and "hiked"
//     give "hike". On LoCoMo it measured better than the light suffix
//     stripper used before (bench/README.md). Words with digits or other
//     scripts are kept whole.
//   - numbers are kept as they are ("2023", "7").
//
// Tokens never panics, and its work is bounded by MaxTokenizeBytes.
func Tokens(text string) []string {
	return AppendTokens(nil, text)
}

// AppendTokens appends Tokens(text) to dst and returns it.
func AppendTokens(dst []string, text string) []string {
	if len(text) > MaxTokenizeBytes {
		text = text[:MaxTokenizeBytes]
	}
	var buf [MaxTokenBytes + utf8.UTFMax]byte
	n := 0        // bytes in buf
	ascii := true // the token so far is ASCII letters only
	pendingApos := false
	emit := func() {
		if n == 0 {
			return
		}
		if tok, ok := finishToken(buf[:n], ascii); ok {
			dst = append(dst, tok)
		}
		n, ascii = 0, true
	}
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z'):
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			if pendingApos {
				pendingApos = false
				// A possessive 's ends the token: "caroline's" → "caroline".
				if r == 's' && (i >= len(text) || !isWordRune(text[i:])) {
					emit()
					continue
				}
			}
			if r >= '0' && r <= '9' {
				ascii = false
			}
			if n < MaxTokenBytes {
				buf[n] = byte(r)
				n++
			}
		case r == '\'' || r == '\u2019':
			// Joins letters on both sides; otherwise a separator.
			if n > 0 && !pendingApos && i < len(text) && isWordRune(text[i:]) {
				pendingApos = true
				continue
			}
			pendingApos = false
			emit()
		case r == utf8.RuneError && size <= 1:
			pendingApos = false
			emit()
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			pendingApos = false
			emit()
			n = utf8.EncodeRune(buf[:], r)
			ascii = false
			emit()
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (n > 0 && unicode.IsMark(r)):
			pendingApos = false
			ascii = false
			r = unicode.ToLower(r)
			if n+utf8.RuneLen(r) <= MaxTokenBytes {
				n += utf8.EncodeRune(buf[n:], r)
			}
		default:
			pendingApos = false
			emit()
		}
	}
	emit()
	return dst
}

// isWordRune reports whether s starts with a rune that continues a token.
func isWordRune(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// finishToken applies stopwords and stemming to a lower-cased token.
func finishToken(b []byte, ascii bool) (string, bool) {
	if isStopword(b) {
		return "", false
	}
	if ascii {
		return stemWord(string(b)), true
	}
	return string(b), true
}

// stems memoises stemWord: Porter2 costs about ten times the rest of
// tokenizing, and a conversation's vocabulary is small. It is a pure
// cache, bounded at maxStems words (past that, words are stemmed each
// time).
var (
	stems     sync.Map // word → stem
	stemCount atomic.Int64
)

const maxStems = 1 << 18

// stemWord is the Snowball English stem of an ASCII lower-case word.
func stemWord(w string) string {
	if v, ok := stems.Load(w); ok {
		return v.(string)
	}
	st := english.Stem(w, false)
	if st == "" {
		st = w
	}
	if stemCount.Load() < maxStems {
		if _, loaded := stems.LoadOrStore(w, st); !loaded {
			stemCount.Add(1)
		}
	}
	return st
}

// isStopword reports whether a lower-cased token is one of the English
// function words Tokens drops. The list is short on purpose: words such as
// "not", "first" or "never" carry meaning and are kept. Interrogatives
// ("what", "when", "who", …), which open most questions and match nothing
// useful, are dropped: on LoCoMo that lifted lexical recall@10 from 0.622
// to 0.628 (stemming is worth more: 0.595 without it).
func isStopword(b []byte) bool {
	switch string(b) {
	case "a", "an", "and", "are", "as", "at", "be", "been", "but", "by",
		"can", "could", "did", "do", "does", "for", "from", "had", "has",
		"have", "he", "her", "him", "his", "how", "i", "if", "in", "into",
		"is", "it", "its", "me", "my", "of", "on", "or", "our", "she",
		"so", "that", "the", "their", "them", "then", "there", "these",
		"they", "this", "those", "to", "us", "was", "we", "were", "what",
		"which", "will", "with", "would", "you", "your", "am", "im", "ive",
		"id", "ill", "youre", "dont", "didnt", "doesnt", "just", "about",
		"also", "some", "any", "very", "too", "than", "s", "t", "when", "where", "who", "why", "whom", "whose":
		return true
	}
	return false
}

// TermID hashes a token (FNV-1a, 32 bits) for sparse vectors.
func TermID(token string) uint32 {
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for i := 0; i < len(token); i++ {
		h ^= uint32(token[i])
		h *= prime32
	}
	return h
}
