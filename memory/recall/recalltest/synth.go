package recalltest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/recall"
)

// Synth generates a deterministic synthetic journal for benchmarks: turns
// of 6–35 words drawn with Zipf frequencies (s = 1.1) from a fixed
// vocabulary of English function words followed by 30,000 made-up words,
// in sessions of 50 turns, 90 seconds apart, every tenth a tool result.
type Synth struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
	start time.Time
	n     int
	sb    strings.Builder
}

// synthStop are the most frequent words of the synthetic vocabulary.
var synthStop = strings.Fields("the i to and a you it of that in is my was we for on me with but so have be just what do at this like about")

// NewSynth returns a generator; the same seed gives the same journal.
func NewSynth(seed uint64) *Synth {
	r := rand.New(rand.NewPCG(seed, 0x5EED))
	vr := rand.New(rand.NewPCG(42, 42)) // the vocabulary never changes
	cons := strings.Split("b c d f g h j k l m n p r s t v w z br ch st th tr sh pl", " ")
	vows := strings.Split("a e i o u ai ea oo ou", " ")
	seen := map[string]bool{}
	vocab := append([]string(nil), synthStop...)
	for len(vocab) < len(synthStop)+30000 {
		var b strings.Builder
		for range 2 + vr.IntN(3) {
			b.WriteString(cons[vr.IntN(len(cons))])
			b.WriteString(vows[vr.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &Synth{
		r:     r,
		zipf:  rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1)),
		vocab: vocab,
		start: time.Date(2023, 1, 1, 9, 0, 0, 0, time.UTC),
	}
}

// Next returns the next turn.
func (s *Synth) Next() recall.Doc {
	i := s.n
	s.n++
	s.sb.Reset()
	for w := range 6 + s.r.IntN(30) {
		if w > 0 {
			s.sb.WriteByte(' ')
		}
		if s.r.IntN(40) == 0 {
			fmt.Fprint(&s.sb, s.r.IntN(2030))
			continue
		}
		s.sb.WriteString(s.vocab[s.zipf.Uint64()])
	}
	d := recall.Doc{
		ID:      fmt.Sprintf("01H%023d", i),
		Kind:    recall.KindTurn,
		Role:    "user",
		Mode:    "text",
		Channel: "chat",
		Session: fmt.Sprintf("conv-%d", i/50),
		Text:    s.sb.String(),
		TS:      s.start.Add(time.Duration(i) * 90 * time.Second),
	}
	switch {
	case i%10 == 9:
		d.Kind, d.Role, d.Channel = recall.KindTool, "tool", "web_search"
	case i%2 == 1:
		d.Role = "agent"
	}
	return d
}

// Query returns a question of 2–5 content words drawn with the corpus's
// own frequencies, so common words (long posting lists) are common here.
func (s *Synth) Query() string {
	s.sb.Reset()
	s.sb.WriteString("what did we say about")
	for range 2 + s.r.IntN(4) {
		w := s.vocab[s.zipf.Uint64()]
		for w == "" || isSynthStop(w) {
			w = s.vocab[s.zipf.Uint64()]
		}
		s.sb.WriteByte(' ')
		s.sb.WriteString(w)
	}
	return s.sb.String()
}

func isSynthStop(w string) bool {
	for _, s := range synthStop {
		if s == w {
			return true
		}
	}
	return false
}
