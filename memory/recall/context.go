package recall

import (
	"strings"
	"unicode/utf8"
)

// ContextTurns is how many preceding turns of the same conversation a turn
// document carries as its Context. Measured on LoCoMo (bench/README.md):
// questions often match what led up to a turn rather than the turn itself.
const ContextTurns = 2

// ContextTurnBytes bounds how much of one preceding turn goes into a
// Context (its first bytes, cut at a rune boundary), so that one long turn
// does not swamp the documents after it.
const ContextTurnBytes = 2 << 10

// TextWeight is how many times a document's own words count against its
// Context's in the lexical index: a field weight, as in BM25F. A question
// matching what a turn says outranks one matching only what led up to it.
// Measured on LoCoMo (bench/README.md): 1 (plain concatenation) 0.740, 2
// 0.751, 3 0.749 turn recall@10.
const TextWeight = 2

// TermsVersion names the rules of Tokens, IndexTokens and
// Preceding.Context. An index built under other rules holds other terms:
// the indexer rebuilds it. Change it with any change to what those return.
const TermsVersion = "porter2+stop1/text2/question2"

// IndexTokens appends the lexical terms of d to dst: Tokens(d.Text)
// TextWeight times, then Tokens(d.Context). Every backend indexes exactly
// these, and a document's length for BM25 is their number.
func IndexTokens(dst []string, d Doc) []string {
	start := len(dst)
	dst = AppendTokens(dst, d.Text)
	n := len(dst) - start
	for range TextWeight - 1 {
		dst = append(dst, dst[start:start+n]...)
	}
	return AppendTokens(dst, d.Context)
}

// IndexText is d's Text, followed by a newline and its Context when it has
// one: the whole of what a document's lexical side is made from.
func IndexText(d Doc) string {
	if d.Context == "" {
		return d.Text
	}
	return d.Text + "\n" + d.Context
}

// Preceding keeps the texts of the last few turns of one conversation, in
// order, to give the next turn its Context. Feed it every turn in order
// with Push, asking Context before pushing the turn itself. The zero value
// keeps nothing; it is not safe for concurrent use.
type Preceding struct {
	n     int
	texts []string // oldest first, at most n
}

// NewPreceding returns a Preceding that keeps the last n turns.
func NewPreceding(n int) *Preceding {
	return &Preceding{n: max(n, 0), texts: make([]string, 0, max(n, 0))}
}

// QuestionWeight is how many more times the turn just before a document
// is repeated in its Context when that turn asks a question: an answer
// ("Been doing it for three years.") is found by the words of the question
// it answers ("How long have you been doing yoga?"), and repeating them
// gives them about the weight of the answer's own words (TextWeight).
// Measured on LoCoMo (bench/README.md): turn recall@10 0.758 without, 0.766
// with 1, 0.769 with 2, 0.766 with 3; repeating any preceding turn, question
// or not, measured 0.757.
const QuestionWeight = 2

// Context is the kept turns' texts, oldest first, one per line, followed
// by QuestionWeight more copies of the newest when it asks a question
// (holds a "?"); "" when none are kept.
func (p *Preceding) Context() string {
	ctx := strings.Join(p.texts, "\n")
	if n := len(p.texts); n > 0 && strings.Contains(p.texts[n-1], "?") {
		var b strings.Builder
		b.Grow(len(ctx) + QuestionWeight*(len(p.texts[n-1])+1))
		b.WriteString(ctx)
		for range QuestionWeight {
			b.WriteByte('\n')
			b.WriteString(p.texts[n-1])
		}
		ctx = b.String()
	}
	return ctx
}

// Push records a turn's text (its first ContextTurnBytes), dropping the
// oldest kept turn when full. Blank texts are ignored.
func (p *Preceding) Push(text string) {
	if p.n == 0 || strings.TrimSpace(text) == "" {
		return
	}
	if len(text) > ContextTurnBytes {
		cut := ContextTurnBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	text = strings.Clone(text)
	if len(p.texts) == p.n {
		copy(p.texts, p.texts[1:])
		p.texts = p.texts[:p.n-1]
	}
	p.texts = append(p.texts, text)
}

// Clone returns an independent copy of p.
func (p *Preceding) Clone() *Preceding {
	c := NewPreceding(p.n)
	c.texts = append(c.texts, p.texts...)
	return c
}

// Reset forgets every kept turn (a new session or conversation starts).
func (p *Preceding) Reset() {
	clear(p.texts)
	p.texts = p.texts[:0]
}
