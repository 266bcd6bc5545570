package audio

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// clockDevice is a stream that makes (or frees) SampleRate frames a
// second on the synctest clock: what a device at 24 kHz does.
type clockDevice struct {
	start time.Time
	taken int // frames moved by Read or Write
}

func (d *clockDevice) avail() (int, error) {
	return int(time.Since(d.start)*SampleRate/time.Second) - d.taken, nil
}

func TestPacerWaitsForAWholeBuffer(t *testing.T) {
	for _, tt := range []struct {
		name      string
		have      int           // frames available at the start
		wantSleep time.Duration // how long wait sleeps
		wantPolls uint64
	}{
		{"a buffer there", 960, 0, 1},
		{"more than a buffer", 2000, 0, 1},
		// Before the first buffer it cannot know when one is due: it
		// asks every paceMargin.
		{"half a buffer", 480, 20 * time.Millisecond, 11},
		{"nothing", 0, 40 * time.Millisecond, 21},
		{"one frame short", 959, time.Millisecond, 2}, // the timer's grain
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &clockDevice{start: time.Now().Add(-time.Duration(tt.have) * time.Second / SampleRate)}
				p := newPacer(d.avail, 960, false, nil)
				defer p.stop()
				t0 := time.Now()
				if !p.wait(t.Context()) {
					t.Fatal("wait: false")
				}
				if slept := time.Since(t0); slept != tt.wantSleep {
					t.Errorf("slept %v, want %v", slept, tt.wantSleep)
				}
				if n := p.polls.Load(); n != tt.wantPolls {
					t.Errorf("asked the device %d times, want %d", n, tt.wantPolls)
				}
				if a, _ := d.avail(); a < 960 {
					t.Errorf("returned with %d frames available, want 960", a)
				}
			})
		})
	}
}

// TestPacerKeepsPace: over a minute of 20 ms buffers, each Read or Write
// finds its buffer there, and the stream is asked twice a buffer (no busy
// polling): the loop sleeps in Go between buffers.
func TestPacerKeepsPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &clockDevice{start: time.Now()}
		p := newPacer(d.avail, FrameSamples, false, nil)
		defer p.stop()
		const buffers = 3000
		for range buffers {
			if !p.wait(t.Context()) {
				t.Fatal("wait: false")
			}
			if a, _ := d.avail(); a < FrameSamples {
				t.Fatalf("woke with %d frames, want %d", a, FrameSamples)
			}
			d.taken += FrameSamples
		}
		if elapsed := time.Since(d.start); elapsed != buffers*20*time.Millisecond {
			t.Errorf("%d buffers took %v", buffers, elapsed)
		}
		// Twice a buffer (paceMargin early, then when it is there), and
		// the first buffer's asks at paceMargin from the start.
		if n := p.polls.Load(); n > 2*buffers+10 {
			t.Errorf("asked the device %d times for %d buffers", n, buffers)
		}
	})
}

// TestPacerOnTime: with early 0 (playback) it asks once a buffer, when
// the buffer is due.
func TestPacerOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &clockDevice{start: time.Now()}
		p := newPacer(d.avail, FrameSamples, false, nil)
		p.early = 0
		defer p.stop()
		const buffers = 3000
		for range buffers {
			if !p.wait(t.Context()) {
				t.Fatal("wait: false")
			}
			if a, _ := d.avail(); a < FrameSamples {
				t.Fatalf("woke with %d frames, want %d", a, FrameSamples)
			}
			d.taken += FrameSamples
		}
		if n := p.polls.Load(); n != buffers+1 { // the first found nothing yet
			t.Errorf("asked the device %d times for %d buffers", n, buffers)
		}
	})
}

// TestPacerUsesWhatItKnows: after a poll that found more than a buffer,
// the next buffers go without asking; once they are used up it sleeps for
// the rest before it asks.
func TestPacerUsesWhatItKnows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1200 frames: two buffers and 240 frames; the third is there 10 ms later.
		d := &clockDevice{start: time.Now().Add(-50 * time.Millisecond)}
		p := newPacer(d.avail, FrameSamples, false, nil)
		defer p.stop()
		t0 := time.Now()
		for i, want := range []struct {
			at    time.Duration
			polls uint64
		}{{0, 1}, {0, 1}, {10 * time.Millisecond, 3}, {30 * time.Millisecond, 5}} {
			if !p.wait(t.Context()) {
				t.Fatal("wait: false")
			}
			if at, polls := time.Since(t0), p.polls.Load(); at != want.at || polls != want.polls {
				t.Errorf("buffer %d: at %v after %d polls, want %v after %d", i, at, polls, want.at, want.polls)
			}
			if a, _ := d.avail(); a < FrameSamples {
				t.Fatalf("buffer %d: %d frames available", i, a)
			}
			d.taken += FrameSamples
		}
	})
}

// chunkDevice makes its frames available a period at once, as the pulse
// plugin does for capture (0, then 960 frames every 40 ms).
type chunkDevice struct {
	start  time.Time
	period int // frames
	taken  int
}

func (d *chunkDevice) avail() (int, error) {
	n := int(time.Since(d.start) * SampleRate / time.Second)
	return n/d.period*d.period - d.taken, nil
}

// TestPacerFindsChunksAtOnce: a device that hands over a whole period at
// once is read within paceMargin of the period arriving, whatever the
// phase the pacer started at (sleeping for "the frames missing" from a
// poll just before a chunk would wake a period late), asking the device
// about twice a buffer.
func TestPacerFindsChunksAtOnce(t *testing.T) {
	for _, phase := range []time.Duration{0, time.Millisecond, 13 * time.Millisecond, 39 * time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const period = 2 * FrameSamples // 40 ms
				d := &chunkDevice{start: time.Now().Add(-phase), period: period}
				p := newPacer(d.avail, period, false, nil)
				defer p.stop()
				const buffers = 500
				for i := range buffers {
					if !p.wait(t.Context()) {
						t.Fatal("wait: false")
					}
					arrived := d.start.Add(frameTime(d.taken + period))
					if late := time.Since(arrived); i > 0 && late > paceMargin {
						t.Fatalf("buffer %d read %v after it arrived", i, late)
					}
					d.taken += period
				}
				if n := p.polls.Load(); n > 2*buffers+25 {
					t.Errorf("asked the device %d times for %d buffers", n, buffers)
				}
			})
		})
	}
}

func TestPacerStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &clockDevice{start: time.Now()}
		p := newPacer(d.avail, FrameSamples, false, nil)
		defer p.stop()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan bool)
		go func() { done <- p.wait(ctx) }()
		synctest.Wait() // asleep until the buffer is there
		cancel()
		if <-done {
			t.Error("wait: true after ctx was cancelled")
		}
		if p.wait(ctx) {
			t.Error("wait: true on a done ctx")
		}
	})
}

func TestPacerFallsBackToTheBlockingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked := 0
		broken := func() (int, error) { asked++; return 0, errors.New("not available") }
		for _, blocking := range []bool{false, true} {
			p := newPacer(broken, FrameSamples, blocking, nil)
			t0 := time.Now()
			if !p.wait(t.Context()) || time.Since(t0) != 0 {
				t.Errorf("blocking=%v: want true at once", blocking)
			}
			p.stop()
		}
		if asked != 1 {
			t.Errorf("the stream was asked %d times, want 1 (blocking asks nothing)", asked)
		}
	})
}
