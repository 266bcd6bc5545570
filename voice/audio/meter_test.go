package audio

import (
	"math"
	"testing"
)

func TestMeasure(t *testing.T) {
	sine := func(amp float64) []int16 {
		s := make([]int16, SampleRate/10) // 100 ms of 1 kHz: whole periods
		for i := range s {
			s[i] = int16(math.Round(amp * 32767 * math.Sin(2*math.Pi*1000*float64(i)/SampleRate)))
		}
		return s
	}
	square := make([]int16, 480)
	for i := range square {
		square[i] = 32767
		if i%2 == 1 {
			square[i] = -32768
		}
	}
	tests := []struct {
		name      string
		in        []int16
		rms, peak float64
	}{
		{"empty", nil, MinDBFS, MinDBFS},
		{"digital silence", make([]int16, 480), MinDBFS, MinDBFS},
		{"full-scale square", square, 0, 0},
		{"full-scale sine", sine(1), -3.01, 0},
		{"half-scale sine", sine(0.5), -9.03, -6.02},
		{"one LSB", []int16{1, -1, 1, -1}, -90.31, -90.31},
		{"below the floor stays at the floor", append(make([]int16, 1<<20), 1), MinDBFS, -90.31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Measure(tt.in)
			if math.Abs(got.RMS-tt.rms) > 0.01 || math.Abs(got.Peak-tt.peak) > 0.01 {
				t.Errorf("Measure = %+v, want RMS %.2f Peak %.2f", got, tt.rms, tt.peak)
			}
		})
	}
}

func TestMeter(t *testing.T) {
	var m Meter
	if l := m.Level(); l.RMS != MinDBFS || l.Peak != MinDBFS {
		t.Fatalf("zero Meter = %+v, want silence", l)
	}
	m.Update([]int16{16384, -16384})
	if l := m.Level(); math.Abs(l.RMS+6.02) > 0.01 || math.Abs(l.Peak+6.02) > 0.01 {
		t.Errorf("Level = %+v, want -6.02 dBFS both", l)
	}
	m.Update(nil)
	if l := m.Level(); l.RMS != MinDBFS {
		t.Errorf("after silence Level = %+v", l)
	}
}
