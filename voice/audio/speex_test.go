//go:build speexdsp

package audio

import (
	"math"
	"testing"
	"time"
)

// room is a synthetic desk: the mic hears the speaker 30 ms late through
// three reflections, plus the user (near) and a faint noise floor.
func room(far, near []int16, nearAt int) (mic, echo []int16) {
	const d = SampleRate * 30 / 1000
	taps := []struct {
		at   int
		gain float64
	}{{d, 0.6}, {d + 37, 0.25}, {d + 91, -0.1}}
	mic = make([]int16, len(far))
	echo = make([]int16, len(far))
	x := uint32(7)
	for n := range far {
		var e float64
		for _, tp := range taps {
			if k := n - tp.at; k >= 0 {
				e += tp.gain * float64(far[k])
			}
		}
		x = x*1664525 + 1013904223
		noise := float64(int32(x>>16)%61) - 30
		v := e + noise
		if k := n - nearAt; k >= 0 && k < len(near) {
			v += float64(near[k])
		}
		echo[n] = int16(max(-32768, min(32767, math.Round(e))))
		mic[n] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return mic, echo
}

// erle is the echo return loss enhancement over [from, to) seconds: how
// much quieter the output is than the echo, in dB.
func erle(echo, out []int16, from, to float64) float64 {
	a, b := int(from*SampleRate), min(len(out), int(to*SampleRate))
	return 10 * math.Log10(energy(echo[a:b])/max(energy(out[a:b]), 1))
}

// farEnd is about 6 s of the agent talking.
func farEnd(t testing.TB) []int16 {
	s := speech(t, "en-us", "Good morning. I read the notes you left yesterday about the garden, "+
		"and I think the tomatoes need more sun than the corner by the fence gets. "+
		"We could move them next to the shed, where the light lasts until evening.")
	return s[:min(len(s), 6*SampleRate)]
}

// TestSpeexCancelsEcho runs speexdsp in lock-step over a synthetic room:
// the echo fades as the filter converges, and the user talking over the
// agent (double talk) comes through the filter alone intact; the
// preprocessor removes far more echo and much of the user with it.
func TestSpeexCancelsEcho(t *testing.T) {
	far := farEnd(t)
	near := speech(t, "en-gb", "wait, stop there")
	nearAt := 4500 * SampleRate / 1000
	near = near[:min(len(near), len(far)-nearAt)]
	mic, echo := room(far, near, nearAt)
	tests := []struct {
		name       string
		preprocess bool
		minERLE    [3]float64 // dB over 0–1, 1–2.5, 2.5–4.5 s
		minNear    float64    // correlation of the user's words in the output
	}{
		{"filter", false, [3]float64{0, 6, 12}, 0.9},
		{"filter and preprocessor", true, [3]float64{0, 8, 25}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aec, err := NewSpeexCanceller(200*time.Millisecond, tt.preprocess)
			if err != nil {
				t.Fatal(err)
			}
			defer aec.Close()
			out := make([]int16, len(mic))
			start := time.Now()
			for i := 0; i+FrameSamples <= len(mic); i += FrameSamples {
				if err := aec.Process(mic[i:i+FrameSamples], far[i:i+FrameSamples], out[i:i+FrameSamples]); err != nil {
					t.Fatal(err)
				}
			}
			cpu := time.Since(start)
			audioDur := time.Duration(len(mic)) * time.Second / SampleRate
			for i, w := range [][2]float64{{0, 1}, {1, 2.5}, {2.5, 4.5}} {
				got := erle(echo, out, w[0], w[1])
				t.Logf("ERLE %.1f–%.1f s: %.1f dB", w[0], w[1], got)
				if got < tt.minERLE[i] {
					t.Errorf("ERLE %.1f–%.1f s = %.1f dB, want at least %.0f", w[0], w[1], got, tt.minERLE[i])
				}
			}
			// Lock-step: speexdsp adds no delay, the words are at their place.
			lag, score := crossCorrelate(out[nearAt-SampleRate/10:], near)
			t.Logf("user's words in the output: score %.3f at %+d samples; %v of processing for %v of audio (%.2f%% of a core, under -race)",
				score, lag-SampleRate/10, cpu, audioDur, 100*cpu.Seconds()/audioDur.Seconds())
			if score < tt.minNear {
				t.Errorf("the user's words were damaged: score %.3f, want %.2f", score, tt.minNear)
			}
			if err := aec.Process(mic[:10], far[:10], out[:10]); err == nil {
				t.Error("Process took a short frame")
			}
		})
	}
}

func BenchmarkSpeexFrame(b *testing.B) {
	far := farEnd(b)
	mic, _ := room(far, nil, 0)
	aec, err := NewSpeexCanceller(200*time.Millisecond, true)
	if err != nil {
		b.Fatal(err)
	}
	defer aec.Close()
	out := make([]int16, FrameSamples)
	n := len(mic) / FrameSamples
	for i := 0; b.Loop(); i++ {
		k := (i % n) * FrameSamples
		aec.Process(mic[k:k+FrameSamples], far[k:k+FrameSamples], out)
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(20*time.Millisecond)*100, "%core")
}
