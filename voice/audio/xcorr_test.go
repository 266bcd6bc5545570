package audio

import (
	"math"
	"slices"
	"testing"
)

// chirp is a linear sweep from f0 to f1 Hz over n samples at amplitude
// amp (of full scale), with 5 ms fades so it does not click.
func chirp(n int, f0, f1, amp float64) []int16 {
	out := make([]int16, n)
	dur := float64(n) / SampleRate
	fade := SampleRate / 200
	for i := range out {
		t := float64(i) / SampleRate
		phase := 2 * math.Pi * (f0*t + (f1-f0)*t*t/(2*dur))
		g := 1.0
		if i < fade {
			g = float64(i) / float64(fade)
		} else if n-i < fade {
			g = float64(n-i) / float64(fade)
		}
		out[i] = int16(math.Round(amp * g * 32767 * math.Sin(phase)))
	}
	return out
}

// crossCorrelate finds where ref best matches inside rec, trying every
// single-sample lag (a coarse stride can miss a narrow peak entirely). It
// returns the lag and the normalised correlation there (1 = identical up
// to gain).
func crossCorrelate(rec, ref []int16) (lag int, score float64) {
	m := len(ref)
	if m == 0 || len(rec) < m {
		return -1, 0
	}
	var refE float64
	for _, v := range ref {
		refE += float64(v) * float64(v)
	}
	var winE float64 // energy of rec[l:l+m], kept as a running sum
	for _, v := range rec[:m] {
		winE += float64(v) * float64(v)
	}
	lag = -1
	for l := 0; l+m <= len(rec); l++ {
		if l > 0 {
			a, b := float64(rec[l-1]), float64(rec[l+m-1])
			winE += b*b - a*a
		}
		if winE <= 0 || refE <= 0 {
			continue
		}
		var dot float64
		w := rec[l : l+m]
		for i, v := range ref {
			dot += float64(w[i]) * float64(v)
		}
		if s := dot / math.Sqrt(refE*max(winE, 1)); s > score {
			lag, score = l, s
		}
	}
	return lag, score
}

func TestCrossCorrelate(t *testing.T) {
	ref := chirp(2400, 300, 3000, 0.5)
	tests := []struct {
		name     string
		lead     int     // silence before ref in the recording
		gain     float64 // applied to ref in the recording
		noise    int16   // amplitude of a deterministic noise floor
		wantLag  int
		minScore float64
	}{
		{"exact", 0, 1, 0, 0, 0.999},
		{"delayed by an odd number of samples", 1237, 1, 0, 1237, 0.999},
		{"quieter", 500, 0.1, 0, 500, 0.999},
		{"in noise", 333, 0.5, 2000, 333, 0.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := make([]int16, tt.lead+len(ref)+3000)
			x := uint32(1)
			for i := range rec {
				x = x*1664525 + 1013904223
				if tt.noise > 0 {
					rec[i] = int16(int32(x>>16)%int32(2*tt.noise+1)) - tt.noise
				}
			}
			for i, v := range ref {
				rec[tt.lead+i] += int16(float64(v) * tt.gain)
			}
			lag, score := crossCorrelate(rec, ref)
			if lag != tt.wantLag || score < tt.minScore {
				t.Errorf("lag %d score %.4f, want lag %d score >= %.3f", lag, score, tt.wantLag, tt.minScore)
			}
		})
	}
	if lag, _ := crossCorrelate(make([]int16, 5000), ref); lag != -1 {
		t.Errorf("silence matched at lag %d", lag)
	}
}

// segmentMatch finds each seg-sample piece of ref in rec by
// crossCorrelate. A loaded machine can insert gaps (a device underflow, a
// recorder overrun) that split one correlation peak; per piece, the
// content is still checked sample by sample. It returns the lag of the
// first piece, the total gap (how much later the last piece came than a
// gapless path puts it; negative if audio was lost) and each piece's score.
func segmentMatch(rec, ref []int16, seg int) (first, gap int, scores []float64) {
	prev := -1
	for i := 0; i+seg <= len(ref); i += seg {
		lag, score := crossCorrelate(rec, ref[i:i+seg])
		scores = append(scores, score)
		if prev < 0 {
			first = lag
		} else {
			gap += lag - prev - seg
		}
		prev = lag
	}
	return first, gap, scores
}

// intact counts the pieces that arrived sample for sample (up to gain).
func intact(scores []float64) int {
	n := 0
	for _, s := range scores {
		if s >= 0.9 {
			n++
		}
	}
	return n
}

func TestSegmentMatch(t *testing.T) {
	ref := chirp(6000, 300, 3000, 0.5)
	tests := []struct {
		name      string
		lead, gap int // silence before ref, and inserted at sample 2500
		lose      int // samples lost at 4000
	}{
		{"gapless", 700, 0, 0},
		{"a gap", 700, 480, 0},
		{"lost audio", 100, 0, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := make([]int16, tt.lead, 20000)
			rec = append(rec, ref[:2500]...)
			rec = append(rec, make([]int16, tt.gap)...)
			rec = append(rec, ref[2500:4000]...)
			rec = append(rec, ref[4000+tt.lose:]...)
			rec = append(rec, make([]int16, 2000)...)
			first, gap, scores := segmentMatch(rec, ref, 1200)
			worst := slices.Min(scores)
			// a piece straddling the damage matches partly: its lag lands
			// on one side; the total gap still adds up
			if first != tt.lead || gap != tt.gap-tt.lose {
				t.Errorf("first %d gap %d (worst %.3f), want %d %d", first, gap, worst, tt.lead, tt.gap-tt.lose)
			}
			if tt.gap == 0 && tt.lose == 0 && worst < 0.999 {
				t.Errorf("worst score %.3f on a clean path", worst)
			}
			if n := intact(scores); n < len(scores)-1 {
				t.Errorf("%d of %d pieces intact (%v), want all but the damaged one", n, len(scores), scores)
			}
		})
	}
}

// locate finds ref in rec from its first probe samples (a short probe
// keeps the every-lag search cheap), then scores all of ref at that lag.
func locate(rec, ref []int16, probe int) (lag int, score float64) {
	lag, _ = crossCorrelate(rec, ref[:min(probe, len(ref))])
	if lag < 0 {
		return -1, 0
	}
	w := rec[lag:min(len(rec), lag+len(ref))]
	var dot, a, b float64
	for i, v := range w {
		x, y := float64(v), float64(ref[i])
		dot, a, b = dot+x*y, a+x*x, b+y*y
	}
	if a == 0 || b == 0 {
		return lag, 0
	}
	if len(w) < len(ref) { // cut short: the rest counts as missing
		for _, v := range ref[len(w):] {
			b += float64(v) * float64(v)
		}
	}
	return lag, dot / math.Sqrt(a*b)
}

func TestLocate(t *testing.T) {
	ref := chirp(9000, 200, 3000, 0.5)
	tests := []struct {
		name     string
		lead     int
		cut      int // samples of ref missing at its end in rec
		damage   bool
		minScore float64
		maxScore float64
	}{
		{"whole", 1234, 0, false, 0.999, 1},
		{"cut short", 50, 4500, false, 0.5, 0.8},
		{"damaged after the probe", 700, 0, true, 0.3, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := make([]int16, tt.lead, tt.lead+len(ref))
			rec = append(rec, ref[:len(ref)-tt.cut]...)
			if tt.damage {
				for i := tt.lead + 3000; i < tt.lead+6000; i++ {
					rec[i] = 0
				}
			}
			lag, score := locate(rec, ref, 1200)
			if lag != tt.lead || score < tt.minScore || score > tt.maxScore {
				t.Errorf("locate = %d, %.3f; want %d, score in [%.2f, %.2f]", lag, score, tt.lead, tt.minScore, tt.maxScore)
			}
		})
	}
}

// squeeze drops every run of two or more zero samples from rec: the
// silence a device underflow inserts into a recording (and the silence
// around the audio), so what remains can be compared sample for sample
// with a signal that has no two zeros in a row (a scripted reply's ramp,
// after its first sample).
func squeeze(rec []int16) []int16 {
	out := make([]int16, 0, len(rec))
	for i, v := range rec {
		if v == 0 && ((i > 0 && rec[i-1] == 0) || (i+1 < len(rec) && rec[i+1] == 0)) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// fromRamp is the reply's ramp as squeeze leaves it in a recording that
// starts at the ramp: its first sample (0) is dropped, or kept when
// nothing precedes it.
func fromRamp(rec []int16) []int16 {
	out := squeeze(rec)
	if len(out) > 0 && out[0] == 0 {
		out = out[1:]
	}
	return out
}

// mismatches compares want with got from the start, sample for sample:
// how many differ, counting what got lacks.
func mismatches(got, want []int16) int {
	n := max(0, len(want)-len(got))
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			n++
		}
	}
	return n
}

func TestSqueeze(t *testing.T) {
	tests := []struct {
		in, want []int16
	}{
		{nil, []int16{}},
		{[]int16{0, 0, 0, 1, 2, 0, 3, 0, 0, 4, 0}, []int16{1, 2, 0, 3, 4, 0}},
		{[]int16{0, 5, 0, 0}, []int16{0, 5}},
	}
	for _, tt := range tests {
		if got := squeeze(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("squeeze(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if n := mismatches([]int16{1, 2, 9}, []int16{1, 2, 3, 4}); n != 2 {
		t.Errorf("mismatches = %d, want 2", n)
	}
}
