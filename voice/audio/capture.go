package audio

import (
	"encoding/binary"
	"sync"
)

// DefaultCaptureDepth is how many frames (20 ms each) Capture holds for a
// slow consumer before dropping: one second.
const DefaultCaptureDepth = 50

// CaptureConfig configures a Capture. Zero values mean the defaults.
type CaptureConfig struct {
	// Depth bounds the frames waiting for the consumer.
	Depth int
	// Gate, if set, decides for each frame whether it goes out.
	Gate *Gate
}

// CaptureStats counts mic frames.
type CaptureStats struct {
	Frames  uint64 // sent on Frames
	Gated   uint64 // dropped by the gate
	Dropped uint64 // dropped because the consumer was Depth frames behind
}

// Capture turns the input device's buffers (any size) into 20 ms frames of
// little-endian int16 PCM, ready for voice.Session.SendAudio. Each frame is
// a fresh copy owned by the receiver: the device reuses its buffer, so
// handing that to another goroutine would race. Write never blocks: a
// consumer that falls Depth frames behind loses the newest frames
// (counted). Every buffer is metered, gated or not, for the UI.
type Capture struct {
	gate   *Gate
	meter  Meter
	frames chan []byte

	mu     sync.Mutex
	pend   [FrameSamples]int16
	np     int
	closed bool
	stats  CaptureStats
}

// NewCapture returns a Capture with nothing pending.
func NewCapture(cfg CaptureConfig) *Capture {
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultCaptureDepth
	}
	return &Capture{gate: cfg.Gate, frames: make(chan []byte, cfg.Depth)}
}

// Frames delivers the frames; it is closed by Close.
func (c *Capture) Frames() <-chan []byte { return c.frames }

// MaxBatch is the most frames Next joins: 100 ms, the chunk size the
// providers' examples send.
const MaxBatch = 5

// Next waits for the next frame and returns it joined with the frames
// already waiting behind it, at most MaxBatch: the frames of one device
// buffer arrive together, and one append for them costs one message, one
// system call and one wake-up instead of one each, with nothing waited
// for. ok is false once Frames is closed and drained. Use either Next or
// Frames, not both.
func (c *Capture) Next() (pcm []byte, frames int, ok bool) {
	f, ok := <-c.frames
	if !ok {
		return nil, 0, false
	}
	frames = 1
	// The Write that sent f holds mu until its last frame is queued: wait
	// for it (microseconds, never for the device), so the buffer's frames
	// go together even when this goroutine woke on another CPU.
	c.mu.Lock()
	c.mu.Unlock()
	for frames < MaxBatch {
		select {
		case g, more := <-c.frames:
			if !more {
				return f, frames, true
			}
			if frames == 1 {
				f = append(make([]byte, 0, MaxBatch*2*FrameSamples), f...)
			}
			f = append(f, g...)
			frames++
		default:
			return f, frames, true
		}
	}
	return f, frames, true
}

// Write takes one buffer from the input device. in is not retained.
func (c *Capture) Write(in []int16) {
	c.meter.Update(in)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for len(in) > 0 {
		k := copy(c.pend[c.np:], in)
		c.np += k
		in = in[k:]
		if c.np < FrameSamples {
			return
		}
		c.np = 0
		if c.gate != nil && !c.gate.Pass() {
			c.stats.Gated++
			continue
		}
		frame := make([]byte, 2*FrameSamples)
		for i, v := range c.pend {
			binary.LittleEndian.PutUint16(frame[2*i:], uint16(v))
		}
		select {
		case c.frames <- frame:
			c.stats.Frames++
		default:
			c.stats.Dropped++
		}
	}
}

// Close ends capture: Frames is closed once drained; later Writes are
// ignored. A partial frame pending is dropped.
func (c *Capture) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.frames)
	}
}

// Level is the input level of the last buffer written, for the UI.
func (c *Capture) Level() Level { return c.meter.Level() }

// Stats is a snapshot of the counters.
func (c *Capture) Stats() CaptureStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
