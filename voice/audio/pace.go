package audio

import (
	"context"
	"sync/atomic"
	"time"
)

// A pacer waits, in Go, until a device stream can take or give a whole
// buffer without blocking, so that the Read or Write that follows returns
// at once.
//
// Waiting inside PortAudio's blocking calls instead (a cgo call that
// sleeps 20–40 ms per buffer) costs more CPU than the audio: once a
// goroutine has been in a cgo call 10 ms, the Go runtime's sysmon takes
// its P back and then polls every 20 µs for a millisecond and more, on
// every buffer of each stream (perf on the idle device layer: sysmon's
// usleep and the scheduling it causes were most of the process's CPU). A
// goroutine asleep on a Go timer costs nothing until it wakes. Measured in
// DESIGN.md ("Voice measurements").
//
// After a buffer has moved it sleeps until the next is due, less
// paceMargin, before it asks the stream (each question is a call through
// PortAudio, ALSA and the pulse plugin, a handful of system calls); when
// it is not there yet it asks again every paceMargin at most. The pulse
// plugin makes capture available a whole 40 ms period at once (0, then
// 960 frames), so sleeping for "the frames missing" could wake up to a
// period after they came: this way a buffer waits at most about
// paceMargin (plus the timer's lateness) in the device, for about two
// questions a buffer.
type pacer struct {
	avail    func() (int, error) // frames the stream can move now
	n        int                 // frames per Read or Write
	blocking bool                // never wait: the call blocks (A/B only)
	timer    *time.Timer
	polls    *atomic.Uint64 // times avail was asked

	// early is how long before a buffer is due the pacer asks, and how
	// often it asks again (paceMargin). 0: it asks when the buffer is
	// due and then sleeps for the frames missing (playback: the device
	// running low costs only fill, and half the questions).
	early time.Duration

	primed bool      // a buffer has moved: the next is due a buffer's time after it
	last   time.Time // when the last buffer was found
	have   int       // frames known to be available past the buffer handed out
}

// paceMargin is how early the pacer asks for a buffer and how often it
// asks again while the buffer is not there.
const paceMargin = 2 * time.Millisecond

func newPacer(avail func() (int, error), n int, blocking bool, polls *atomic.Uint64) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	if polls == nil {
		polls = new(atomic.Uint64)
	}
	return &pacer{avail: avail, n: n, blocking: blocking, timer: t, polls: polls, early: paceMargin}
}

// wait returns true when n frames can move without blocking (the caller
// then moves exactly n), false when ctx is done. A stream that cannot say
// what is available (an error) gets true at once: the blocking call that
// follows waits, as before.
func (p *pacer) wait(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if p.blocking {
		return true
	}
	if p.have >= p.n {
		p.have -= p.n
		return true
	}
	if p.primed {
		due := p.last.Add(frameTime(p.n-p.have) - p.early)
		if d := time.Until(due); d > 0 && !p.sleep(ctx, d) {
			return false
		}
	}
	for {
		p.polls.Add(1)
		a, err := p.avail()
		if err != nil {
			p.have = 0
			return true
		}
		if a >= p.n {
			p.have, p.primed, p.last = a-p.n, true, time.Now()
			return true
		}
		d := frameTime(p.n - a)
		if p.early > 0 {
			d = min(d, p.early)
		}
		if !p.sleep(ctx, max(time.Millisecond, d)) {
			return false
		}
	}
}

// frameTime is how long the device takes for n frames (it runs at
// SampleRate).
func frameTime(n int) time.Duration { return time.Duration(n) * time.Second / SampleRate }

// sleep waits d; false if ctx is done first.
func (p *pacer) sleep(ctx context.Context, d time.Duration) bool {
	p.timer.Reset(d)
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return false
	case <-p.timer.C:
		return true
	}
}

func (p *pacer) stop() { p.timer.Stop() }

// reset forgets what the stream had: after it was stopped and started
// again it is empty, so the next wait asks at once.
func (p *pacer) reset() { p.primed, p.have = false, 0 }
