package audio

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestCaptureFraming(t *testing.T) {
	tests := []struct {
		name   string
		chunks []int // device buffer sizes, in order
		frames int
	}{
		{"device frames of 20 ms", []int{480, 480, 480}, 3},
		{"small buffers accumulate", []int{100, 100, 100, 100, 100}, 1},
		{"one large buffer splits", []int{1500}, 3},
		{"odd sizes", []int{7, 473, 1, 959, 1000}, 5},
		{"a partial tail waits", []int{479}, 0},
		{"empty buffers", []int{0, 480, 0}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(CaptureConfig{Depth: 100})
			var next int16
			buf := make([]int16, 2000)
			for _, n := range tt.chunks {
				in := buf[:n]
				for i := range in {
					in[i] = next
					next++
				}
				c.Write(in)
				for i := range in {
					in[i] = -7 // the device reuses its buffer
				}
			}
			c.Close()
			var want int16
			got := 0
			for f := range c.Frames() {
				if len(f) != 2*FrameSamples {
					t.Fatalf("frame of %d bytes", len(f))
				}
				for i := range FrameSamples {
					if v := int16(binary.LittleEndian.Uint16(f[2*i:])); v != want {
						t.Fatalf("frame %d sample %d = %d, want %d", got, i, v, want)
					}
					want++
				}
				got++
			}
			if got != tt.frames {
				t.Errorf("%d frames, want %d", got, tt.frames)
			}
			if s := c.Stats(); s != (CaptureStats{Frames: uint64(tt.frames)}) {
				t.Errorf("Stats = %+v", s)
			}
		})
	}
}

func TestCaptureFramesAreOwned(t *testing.T) {
	c := NewCapture(CaptureConfig{})
	in := make([]int16, FrameSamples)
	in[0] = 1
	c.Write(in)
	in[0] = 2
	c.Write(in)
	a, b := <-c.Frames(), <-c.Frames()
	if a[0] != 1 || b[0] != 2 {
		t.Fatalf("frames share memory: first sample %d then %d", a[0], b[0])
	}
}

func TestCaptureNeverBlocks(t *testing.T) {
	c := NewCapture(CaptureConfig{Depth: 3})
	in := make([]int16, 10*FrameSamples)
	c.Write(in) // nobody reads
	if s := c.Stats(); s.Frames != 3 || s.Dropped != 7 {
		t.Errorf("Stats = %+v, want 3 sent 7 dropped", s)
	}
	c.Close()
	c.Write(in) // after Close: ignored, no panic
}

func TestCaptureGated(t *testing.T) {
	g := NewGate(GateConfig{})
	c := NewCapture(CaptureConfig{Gate: g})
	loud := make([]int16, FrameSamples)
	for i := range loud {
		loud[i] = 8192
	}
	g.SetPlaying(true)
	c.Write(loud)
	if len(c.Frames()) != 0 {
		t.Fatal("a frame passed a closed gate")
	}
	if l := c.Level(); l.RMS > -12 || l.RMS < -12.1 {
		t.Errorf("gated input still metered: Level %+v, want RMS -12.04", l)
	}
	g.BargeIn()
	c.Write(loud)
	if s := c.Stats(); s.Frames != 1 || s.Gated != 1 {
		t.Errorf("Stats = %+v, want 1 sent 1 gated", s)
	}
}

func BenchmarkCapture(b *testing.B) {
	c := NewCapture(CaptureConfig{Gate: NewGate(GateConfig{})})
	in := make([]int16, FrameSamples)
	b.ReportAllocs()
	b.SetBytes(2 * FrameSamples)
	for b.Loop() {
		c.Write(in)
		<-c.Frames()
	}
}

// TestCaptureNext: Next joins the frames already waiting (a 40 ms device
// buffer is two frames, one append), at most MaxBatch, in order, and never
// waits for more.
func TestCaptureNext(t *testing.T) {
	for _, tt := range []struct {
		name    string
		buffers []int // device buffers written, in frames
		want    []int // frames per Next
	}{
		{"one frame", []int{1}, []int{1}},
		{"a 40 ms buffer", []int{2}, []int{2}},
		{"two buffers waiting", []int{2, 2}, []int{4}},
		{"a backlog", []int{2, 2, 2, 2, 2, 1}, []int{5, 5, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(CaptureConfig{})
			k := 0
			for _, n := range tt.buffers {
				in := make([]int16, n*FrameSamples)
				for i := range in {
					in[i] = int16(k)
					k++
				}
				c.Write(in)
			}
			c.Close()
			var got []int
			next := 0
			for {
				pcm, frames, ok := c.Next()
				if !ok {
					break
				}
				got = append(got, frames)
				if len(pcm) != frames*2*FrameSamples {
					t.Fatalf("%d frames in %d bytes", frames, len(pcm))
				}
				for i := 0; i < len(pcm); i += 2 {
					if v := int16(binary.LittleEndian.Uint16(pcm[i:])); v != int16(next) {
						t.Fatalf("sample %d is %d", next, v)
					}
					next++
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("frames per Next %v, want %v", got, tt.want)
			}
		})
	}
}
