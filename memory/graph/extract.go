package graph

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is one name found in a text: a run of capitalised words, the word
// before it (lower case, for the archetype's type cues), and whether it
// opens a sentence.
type Span struct {
	Name   string
	Before string
	Start  bool
}

// maxSpanWords bounds a name; longer capitalised runs are titles or
// shouting, kept as their first words.
const maxSpanWords = 4

// stop are capitalised words that are not names on their own: sentence
// openers, pronouns, days and months (dates are recall's business).
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the i i'm i've i'd i'll im ive me my we our us you your he she it they them
	his her its their this that these those there here what when where who whom whose why how which
	is are was were be been am do does did have has had can could will would shall should may might must
	and or but so if then than because also just yes no not ok okay oh hi hey hello thanks thank please
	well wow yeah sure great good nice cool awesome sounds love hope glad sorry congrats congratulations
	monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
	january february march april may june july august september october november december
	let lets let's any anything all some every each one two both maybe after before during for from in on at to of with as by about
	mr mrs ms dr`) {
		m[w] = true
	}
	return m
}()

// isStop reports whether w is a stop word, or a contraction of one
// ("You're", "I'll", "Don’t").
func isStop(w string) bool {
	w = strings.ToLower(w)
	if stop[w] {
		return true
	}
	if i := strings.IndexAny(w, "'’"); i > 0 {
		return stop[w[:i]] || strings.HasSuffix(w, "n't") || strings.HasSuffix(w, "n’t")
	}
	return false
}

// Extract finds the name spans of text: runs of words that begin with an
// upper-case letter, up to maxSpanWords. A possessive 's is dropped. A
// span that is a single stop word is not a name; a sentence-opening
// span drops its leading stop words ("The Louvre" → "Louvre").
func Extract(text string) []Span {
	var out []Span
	var run []string
	before, runBefore := "", ""
	start, runStart := true, false
	flush := func() {
		if len(run) == 0 {
			return
		}
		words := run
		for len(words) > 0 && isStop(words[0]) {
			words = words[1:]
		}
		for len(words) > 0 && isStop(words[len(words)-1]) {
			words = words[:len(words)-1]
		}
		if len(words) > maxSpanWords {
			words = words[:maxSpanWords]
		}
		if len(words) > 0 {
			out = append(out, Span{Name: strings.Join(words, " "), Before: runBefore, Start: runStart})
		}
		run = run[:0]
	}
	for tok := range strings.FieldsSeq(text) {
		word, tail := trimWord(tok)
		if word != "" && isCapitalised(word) {
			if len(run) == 0 {
				runBefore, runStart = before, start
			}
			run = append(run, word)
		} else {
			flush()
		}
		if tail {
			flush()
		}
		if word != "" {
			before = strings.ToLower(word)
		}
		start = endsSentence(tok)
		if start {
			flush()
		}
	}
	flush()
	return out
}

// trimWord strips punctuation around a token and a possessive 's; tail
// says the token ended with punctuation that ends a name (a comma, a
// bracket, a full stop).
func trimWord(tok string) (word string, tail bool) {
	w := strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if w != tok {
		if i := strings.LastIndex(tok, w); i >= 0 && i+len(w) < len(tok) {
			tail = true
		}
	}
	for _, s := range []string{"'s", "’s"} {
		if strings.HasSuffix(w, s) {
			w = strings.TrimSuffix(w, s)
			tail = true
		}
	}
	return w, tail
}

func isCapitalised(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

func endsSentence(tok string) bool {
	tok = strings.TrimRight(tok, `"')]”’`)
	return strings.HasSuffix(tok, ".") || strings.HasSuffix(tok, "!") || strings.HasSuffix(tok, "?") || strings.HasSuffix(tok, ":")
}

// Normalize is a name's key: lower case, letters and digits only, single
// spaces. "Dr. Ana  Lima" and "dr ana lima" have the same key.
func Normalize(name string) string {
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			space = true
		}
	}
	return b.String()
}

// Slug is a name's file name: its key with dashes for spaces; "entity"
// when nothing is left.
func Slug(name string) string {
	r := []rune(strings.ReplaceAll(Normalize(name), " ", "-"))
	if len(r) > 64 {
		r = r[:64]
	}
	s := strings.Trim(string(r), "-")
	if s == "" {
		return "entity"
	}
	return s
}
