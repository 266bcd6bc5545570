package recallbench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/recall"
)

// Zipf parameters of word ranks, P(r) ∝ (zipfV+r)^-zipfS: over this
// vocabulary the 100 most frequent words make 56% of the text and the
// made-up tail beyond the head 26%, close to English chat.
const (
	zipfS = 1.15
	zipfV = 2.7
)

// SynthOptions configure a synthetic journal.
type SynthOptions struct {
	Turns int           // how many turns
	Seed  uint64        // the same seed gives the same journal
	Start time.Time     // first turn (default 2023-01-01 UTC)
	Span  time.Duration // the time the turns cover (default three years)
}

// Synth generates a synthetic chat journal: turns alternating between a
// user and the agent, a few words to a few dozen, words drawn with Zipf
// frequencies from a fixed vocabulary, timestamps increasing evenly (with
// jitter) over the span, a session per day. It is deterministic.
type Synth struct {
	o     SynthOptions
	rng   *rand.Rand
	ids   *rand.ChaCha8
	zipf  *rand.Zipf
	vocab []string
	step  time.Duration
	next  int
}

// NewSynth returns a generator of o.Turns turns.
func NewSynth(o SynthOptions) *Synth {
	if o.Start.IsZero() {
		o.Start = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Span <= 0 {
		o.Span = 3 * 365 * 24 * time.Hour
	}
	var seed [32]byte
	for i := range 8 {
		seed[i] = byte(o.Seed >> (8 * i))
	}
	rng := rand.New(rand.NewChaCha8(seed))
	seed[31] = 1
	vocab := vocabulary()
	s := &Synth{
		o:     o,
		rng:   rng,
		ids:   rand.NewChaCha8(seed),
		zipf:  rand.NewZipf(rng, zipfS, zipfV, uint64(len(vocab)-1)),
		vocab: vocab,
	}
	if o.Turns > 0 {
		s.step = o.Span / time.Duration(o.Turns)
	}
	return s
}

// Next appends up to n more turns to dst; it returns dst unchanged once
// all turns are made.
func (s *Synth) Next(dst []recall.Doc, n int) []recall.Doc {
	for ; n > 0 && s.next < s.o.Turns; n-- {
		i := s.next
		s.next++
		ts := s.o.Start.Add(time.Duration(i)*s.step + time.Duration(s.rng.Int64N(int64(max(s.step, 1)))))
		role := "user"
		if i%2 == 1 {
			role = "agent"
		}
		dst = append(dst, recall.Doc{
			ID:      ulid.MustNew(ulid.Timestamp(ts), s.ids).String(),
			Kind:    recall.KindTurn,
			Role:    role,
			Mode:    "text",
			Channel: "chat",
			Session: ts.Format("2006-01-02"),
			Text:    s.sentence(s.length(role)),
			TS:      ts,
		})
	}
	return dst
}

// length draws a turn's word count: user turns short, agent turns longer,
// both with a long tail (log-normal-ish).
func (s *Synth) length(role string) int {
	mean := 9.0
	if role == "agent" {
		mean = 22
	}
	n := int(mean * (0.3 + s.rng.ExpFloat64()))
	return min(max(n, 2), 200)
}

func (s *Synth) sentence(words int) string {
	var b strings.Builder
	for w := range words {
		word := s.vocab[s.zipf.Uint64()]
		switch {
		case w == 0:
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		case s.rng.IntN(12) == 0:
			b.WriteString([]string{", ", ". ", "! ", "? "}[s.rng.IntN(4)] + word)
		default:
			b.WriteString(" " + word)
		}
		if s.rng.IntN(150) == 0 {
			fmt.Fprintf(&b, " %d", 1+s.rng.IntN(2030))
		}
	}
	b.WriteString([]string{".", "!", "?", ""}[s.rng.IntN(4)])
	return b.String()
}

// Queries returns n questions about the journal: a question opener and
// two to five words drawn by frequency, skipping the function words at
// the top of the vocabulary.
func (s *Synth) Queries(n int) []string {
	openers := []string{"what did I say about", "when did we talk about", "remind me about", "do you remember", "what was that", "tell me about"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		b.WriteString(openers[s.rng.IntN(len(openers))])
		for range 2 + s.rng.IntN(4) {
			var r uint64
			for r = s.zipf.Uint64(); r < 60; r = s.zipf.Uint64() {
			}
			b.WriteString(" " + s.vocab[r])
		}
		out[i] = b.String()
	}
	return out
}
