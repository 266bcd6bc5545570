// Package voicectltest is a sound card in memory for tests of the desk:
// test code only.
package voicectltest

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// Audio implements voicectl.Audio in memory: every 20 ms (the clock of
// the test, a synctest bubble's or the real one) it hands the Capture one
// frame of what the test said (silence when nothing) and takes one frame
// from the Player, keeping the audio it played.
type Audio struct {
	// Fail, if set, is what Open returns.
	Fail error
	// InputFrames, if set, is the frames per capture buffer: the mic is
	// handed that many at once every InputFrames×20 ms, as a device with
	// a longer period does (the PortAudio layer's is 40 ms).
	InputFrames int

	mu     sync.Mutex
	mic    []int16
	played []int16
	opens  int
	closes int
}

var _ voicectl.Audio = (*Audio)(nil)

// Open starts the device clock.
func (a *Audio) Open(ctx context.Context, c *audio.Capture, p *audio.Player) (voicectl.Streams, error) {
	if a.Fail != nil {
		return nil, a.Fail
	}
	a.mu.Lock()
	a.opens++
	a.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		in := make([]int16, max(1, a.InputFrames)*audio.FrameSamples)
		out := make([]int16, audio.FrameSamples)
		for ticks := 1; ; ticks++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if ticks%max(1, a.InputFrames) == 0 {
				a.mu.Lock()
				n := copy(in, a.mic)
				a.mic = a.mic[n:]
				a.mu.Unlock()
				clear(in[n:])
				c.Write(in)
			}
			k := p.Read(out)
			a.mu.Lock()
			a.played = append(a.played, out[:k]...)
			a.mu.Unlock()
		}
	}()
	return closeFunc(func() error {
		cancel()
		<-done
		a.mu.Lock()
		a.closes++
		a.mu.Unlock()
		return nil
	}), nil
}

// Devices lists the one device.
func (a *Audio) Devices(context.Context) ([]voicectl.Device, error) {
	return []voicectl.Device{{Name: "memory", Inputs: 1, Outputs: 1, DefaultInput: true, DefaultOutput: true}}, nil
}

// Say queues little-endian PCM for the microphone.
func (a *Audio) Say(pcm ...[]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range pcm {
		for i := 0; i+1 < len(b); i += 2 {
			a.mic = append(a.mic, int16(binary.LittleEndian.Uint16(b[i:])))
		}
	}
}

// Played is the reply audio the speaker played, in order.
func (a *Audio) Played() []int16 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.played)
}

// Opened is how many times the streams were opened and closed.
func (a *Audio) Opened() (opens, closes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.opens, a.closes
}

type closeFunc func() error

func (f closeFunc) Close() error { return f() }
