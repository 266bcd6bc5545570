package audio

import (
	"math"
	"sync/atomic"
)

// MinDBFS is the floor of a Level: digital silence reads as MinDBFS, not
// minus infinity. 16-bit PCM cannot express much less (about -96 dBFS).
const MinDBFS = -96.0

// Level is the loudness of one block of samples in dBFS (0 is full scale):
// RMS for how loud it sounds, Peak for clipping.
type Level struct {
	RMS, Peak float64
}

// Measure computes the Level of s; an empty block is silence.
func Measure(s []int16) Level {
	if len(s) == 0 {
		return Level{MinDBFS, MinDBFS}
	}
	var sum float64
	var peak int32
	for _, v := range s {
		x := int32(v)
		if x < 0 {
			x = -x
		}
		peak = max(peak, x)
		sum += float64(x) * float64(x)
	}
	rms := math.Sqrt(sum/float64(len(s))) / 32768
	return Level{RMS: dbfs(rms), Peak: dbfs(float64(peak) / 32768)}
}

func dbfs(a float64) float64 {
	if a <= 0 {
		return MinDBFS
	}
	return max(MinDBFS, 20*math.Log10(a))
}

// Meter holds the Level of the last block it saw: the audio goroutine
// updates it, the UI reads it. Safe for concurrent use; the zero value
// reads as silence until the first Update.
type Meter struct {
	rms, peak atomic.Uint64 // float64 bits of dBFS - MinDBFS (zero value = silence)
}

// Update measures s.
func (m *Meter) Update(s []int16) {
	l := Measure(s)
	m.rms.Store(math.Float64bits(l.RMS - MinDBFS))
	m.peak.Store(math.Float64bits(l.Peak - MinDBFS))
}

// Level is the last block's Level.
func (m *Meter) Level() Level {
	return Level{
		RMS:  math.Float64frombits(m.rms.Load()) + MinDBFS,
		Peak: math.Float64frombits(m.peak.Load()) + MinDBFS,
	}
}
