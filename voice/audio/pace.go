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
type pacer struct {
	avail    func() (int, error) // frames the stream can move now
	n        int                 // frames per Read or Write
	blocking bool                // never wait: the call blocks (A/B only)
	timer    *time.Timer
	polls    *atomic.Uint64 // times avail was asked
}

func newPacer(avail func() (int, error), n int, blocking bool, polls *atomic.Uint64) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	if polls == nil {
		polls = new(atomic.Uint64)
	}
	return &pacer{avail: avail, n: n, blocking: blocking, timer: t, polls: polls}
}

// wait returns true when n frames can move without blocking, false when
// ctx is done. A stream that cannot say what is available (an error) gets
// true at once: the blocking call that follows waits, as before.
func (p *pacer) wait(ctx context.Context) bool {
	for ctx.Err() == nil {
		if p.blocking {
			return true
		}
		p.polls.Add(1)
		a, err := p.avail()
		if err != nil || a >= p.n {
			return true
		}
		// Sleep until the rest should be there (the device runs at
		// SampleRate), at least a millisecond, the timer's grain.
		p.timer.Reset(max(time.Millisecond, time.Duration(p.n-a)*time.Second/SampleRate))
		select {
		case <-ctx.Done():
			p.timer.Stop()
			return false
		case <-p.timer.C:
		}
	}
	return false
}

func (p *pacer) stop() { p.timer.Stop() }
