package audio

import (
	"sync"
	"time"

	"github.com/mnemo/mnemo/voice"
)

// Defaults of PlayerConfig.
const (
	DefaultCapacity  = 60 * time.Second
	DefaultPreBuffer = 80 * time.Millisecond
)

// PlayerConfig configures a Player. Zero values mean the defaults.
type PlayerConfig struct {
	// Capacity bounds the audio held: reply audio arrives faster than real
	// time, so this is the longest reply that fits unplayed.
	Capacity time.Duration
	// PreBuffer is how much audio must be queued before playback starts
	// (and restarts after an underrun), so network jitter does not click.
	PreBuffer time.Duration
	// Gate, if set, is told when playback starts and stops.
	Gate *Gate
	// OnPlaying, if set, is called when a reply starts being queued (true)
	// and when playback stops (false): the "agent speaking" state. It is
	// called with the Player locked and must not call back into it.
	OnPlaying func(bool)
}

// PlayerStats counts what happened to reply audio, in samples unless named.
type PlayerStats struct {
	Queued    int    // held now, not yet played
	Written   uint64 // accepted by Write
	Played    uint64 // handed to the device (not counting fill zeros)
	Dropped   uint64 // refused by Write because the ring was full
	Overflows uint64 // Write calls that dropped samples
	Underruns uint64 // times the ring ran dry mid-reply (zeros played)
	Flushed   uint64 // discarded by Flush
}

type playState int

const (
	idle      playState = iota // nothing to play: the device gets zeros
	buffering                  // waiting for PreBuffer (or Finish)
	playing
)

// Player is the playback ring buffer between the socket reader (Write)
// and the output device (Read), for 24 kHz int16 mono.
//
// Write never blocks: the ring is bounded (Capacity) and when it is full
// the newest samples are dropped, not the ones playing, and counted
// (Dropped, Overflows); per-item accounting covers only what was
// accepted, so truncation stays exact. Read always fills its buffer:
// silence until PreBuffer is queued, then the audio, then zeros when the
// ring runs dry. Running dry before Finish is an underrun (counted once
// per dry spell) and playback pre-buffers again; after Finish it is the
// end of the reply. Flush empties the ring at once for barge-in.
//
// The Player counts samples per item with a voice.Playback, advanced as
// Read hands them to the device, so Flush knows how much of which item
// was heard. Safe for concurrent use; Read and Write do not allocate
// except when an item starts or ends.
type Player struct {
	mu      sync.Mutex
	ring    []int16
	r, n    int // read index, samples held
	pre     int
	state   playState
	done    bool // Finish: play out what is held, running dry is no underrun
	track   voice.Playback
	gate    *Gate
	notify  func(bool)
	started chan struct{}    // 1-buffered: a reply started being queued
	flushed chan struct{}    // 1-buffered: Flush was called
	held    func(uint64) int // samples the device held that a flush dropped (setHeld)
	flushes uint64           // calls of Flush
	latency time.Duration
	meter   Meter
	stats   PlayerStats
}

// NewPlayer returns an empty, idle Player.
func NewPlayer(cfg PlayerConfig) *Player {
	if cfg.Capacity <= 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.PreBuffer <= 0 {
		cfg.PreBuffer = DefaultPreBuffer
	}
	return &Player{
		ring:    make([]int16, samples(int(cfg.Capacity/time.Millisecond))),
		pre:     samples(int(cfg.PreBuffer / time.Millisecond)),
		gate:    cfg.Gate,
		notify:  cfg.OnPlaying,
		started: make(chan struct{}, 1),
		flushed: make(chan struct{}, 1),
	}
}

// Write queues reply audio of itemID: little-endian int16 PCM as the
// provider sends it (a trailing odd byte is ignored). It returns the
// samples accepted; the rest did not fit and was dropped.
func (p *Player) Write(itemID string, pcm []byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := len(pcm) / 2
	n := min(want, len(p.ring)-p.n)
	if n < want {
		p.stats.Dropped += uint64(want - n)
		p.stats.Overflows++
	}
	if n == 0 {
		return 0
	}
	w := (p.r + p.n) % len(p.ring)
	for i := range n {
		p.ring[w] = int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
		if w++; w == len(p.ring) {
			w = 0
		}
	}
	p.n += n
	p.stats.Written += uint64(n)
	p.track.Queue(itemID, n)
	p.done = false
	if p.state == idle {
		p.state = buffering
		p.setPlaying(true)
		select {
		case p.started <- struct{}{}:
		default:
		}
	}
	return n
}

// Finish marks the end of a reply (its response.done): what is held plays
// out even if shorter than PreBuffer, and running dry is not an underrun.
// A later Write starts the next reply.
func (p *Player) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	if p.state == idle && p.n == 0 {
		p.track.Flush() // it ran dry and nothing more came: it is over
	}
}

// Read fills out with the next samples to play (zeros where there are
// none) and returns how many were audio. The output device calls it once
// per buffer.
func (p *Player) Read(out []int16) int {
	n, _ := p.read(out)
	return n
}

// read is Read, and how many Flushes came before it: a device layer that
// drops what its device holds on a flush does so before it sends what
// this read (PulseStreams), so it never drops audio queued after the
// flush.
func (p *Player) read(out []int16) (int, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == buffering && (p.n >= p.pre || p.done) {
		p.state = playing
	}
	got := 0
	if p.state == playing {
		got = min(len(out), p.n)
		first := min(got, len(p.ring)-p.r)
		copy(out, p.ring[p.r:p.r+first])
		copy(out[first:got], p.ring[:got-first])
		p.r = (p.r + got) % len(p.ring)
		p.n -= got
		p.stats.Played += uint64(got)
		p.track.Advance(got)
		if p.n == 0 && (got < len(out) || p.done) {
			if p.done {
				p.track.Flush() // the reply played out: nothing of it to cut
			} else {
				p.stats.Underruns++
			}
			p.state = idle
			p.done = false
			p.setPlaying(false)
		}
	}
	clear(out[got:])
	p.meter.Update(out)
	return got, p.flushes
}

// Flush is barge-in: it empties the ring at once and returns the item
// that was playing and the milliseconds of it heard: all that Read handed
// to the device, since the device plays out what it holds (PortAudio: its
// output latency, 60 ms here) and the speaker falls silent after it,
// within 100 ms; less what a device that drops what it holds on a flush
// (PulseAudio) still held. ok is false when nothing was queued. Pass them
// to voice.Session.InterruptItem.
func (p *Player) Flush() (itemID string, heardMS int, ok bool) {
	p.mu.Lock()
	itemID, heardMS, ok = p.track.Heard()
	p.track.Flush()
	p.stats.Flushed += uint64(p.n)
	p.flushes++
	gen, held := p.flushes, p.held
	p.r, p.n = 0, 0
	p.done = false
	if p.state != idle {
		p.state = idle
		p.setPlaying(false)
	}
	select {
	case p.flushed <- struct{}{}:
	default:
	}
	p.mu.Unlock()
	// Unlocked: the device layer may be in the middle of handing the
	// device what it read before this flush, and must finish that first.
	if ok && held != nil {
		heardMS = max(0, heardMS-held(gen)*1000/SampleRate)
	}
	return itemID, heardMS, ok
}

// readable says how much Read may take without running the ring dry in
// the middle of a reply: bounded is false when Read may take any amount
// (nothing to play: silence; or the reply's end is queued), else at most
// n samples (0 while pre-buffering). A device layer that must answer for
// more than a buffer at once (PulseAudio's requests) takes what is
// there and comes back for the rest, instead of playing zeros inside a
// reply.
func (p *Player) readable() (n int, bounded bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.state == idle || p.done:
		return 0, false
	case p.state == buffering && p.n < p.pre:
		return 0, true
	}
	return p.n, true
}

// setHeld tells the Player how to ask the device layer how many samples
// of what Read handed it the flush numbered gen (the count of Flushes,
// that one included) dropped: they were handed, but never heard. The
// device layer drops them itself, before it sends anything read after
// that flush. held is called without the Player's lock.
func (p *Player) setHeld(held func(gen uint64) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = held
}

// flushCount is how many Flushes there were.
func (p *Player) flushCount() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushes
}

// Flushed is signalled by every Flush: a device layer that can drop what
// its device holds (PulseAudio's flush of the playback stream) does so
// then, and the speaker falls silent sooner than the device's latency.
func (p *Player) Flushed() <-chan struct{} { return p.flushed }

// SetOutputLatency is how far audio handed to the device runs ahead of
// what is heard (the device layer reports it): OutputLatency tells the UI.
func (p *Player) SetOutputLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// OutputLatency is what SetOutputLatency set.
func (p *Player) OutputLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// Started is signalled when a reply starts being queued (Playing turns
// true). The output device stops while there is nothing to play and
// waits on it: drain it, then check Playing, then wait, and no start is
// missed.
func (p *Player) Started() <-chan struct{} { return p.started }

// Playing reports whether a reply is queued or playing.
func (p *Player) Playing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state != idle
}

// Replying reports whether a reply is under way: queued, playing, or run
// dry before its end (its audio comes slower than it plays). Barge-in
// flushes while it is: the item is cut at what was heard even when the
// speaker is between two pieces of it.
func (p *Player) Replying() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != idle {
		return true
	}
	_, _, ok := p.track.Heard()
	return ok
}

// Level is the output level of the last buffer Read, for the UI.
func (p *Player) Level() Level { return p.meter.Level() }

// Stats is a snapshot of the counters.
func (p *Player) Stats() PlayerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Queued = p.n
	return s
}

func (p *Player) setPlaying(on bool) {
	if p.gate != nil {
		p.gate.SetPlaying(on)
	}
	if p.notify != nil {
		p.notify(on)
	}
}
