//go:build portaudio

package audio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gordonklaus/portaudio"
)

// Devices lists the devices PortAudio sees. With no sound card and no
// sound server the list is empty.
func Devices() ([]Device, error) {
	if err := portaudio.Initialize(); err != nil {
		return nil, fmt.Errorf("portaudio: %w", err)
	}
	defer portaudio.Terminate()
	infos, err := portaudio.Devices()
	if err != nil {
		return nil, fmt.Errorf("portaudio devices: %w", err)
	}
	defIn, _ := portaudio.DefaultInputDevice()
	defOut, _ := portaudio.DefaultOutputDevice()
	out := make([]Device, 0, len(infos))
	for _, d := range infos {
		dev := Device{
			Name: d.Name, Inputs: d.MaxInputChannels, Outputs: d.MaxOutputChannels,
			DefaultSampleRate: d.DefaultSampleRate,
			DefaultInput:      defIn != nil && d.Index == defIn.Index,
			DefaultOutput:     defOut != nil && d.Index == defOut.Index,
		}
		if d.HostApi != nil {
			dev.Host = d.HostApi.Name
		}
		out = append(out, dev)
	}
	return out, nil
}

// findDevice picks a device by name: "" is the default; otherwise an exact
// name, else the one name containing it (case-insensitive).
func findDevice(name string, input bool) (*portaudio.DeviceInfo, error) {
	kind := "output"
	if input {
		kind = "input"
	}
	if name == "" {
		var d *portaudio.DeviceInfo
		var err error
		if input {
			d, err = portaudio.DefaultInputDevice()
		} else {
			d, err = portaudio.DefaultOutputDevice()
		}
		if err != nil {
			return nil, fmt.Errorf("no default %s device: %w", kind, err)
		}
		return d, nil
	}
	infos, err := portaudio.Devices()
	if err != nil {
		return nil, fmt.Errorf("portaudio devices: %w", err)
	}
	var matches []*portaudio.DeviceInfo
	for _, d := range infos {
		if (input && d.MaxInputChannels < 1) || (!input && d.MaxOutputChannels < 1) {
			continue
		}
		if d.Name == name {
			return d, nil
		}
		if strings.Contains(strings.ToLower(d.Name), strings.ToLower(name)) {
			matches = append(matches, d)
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("no %s device named %q", kind, name)
	case 1:
		return matches[0], nil
	}
	names := make([]string, len(matches))
	for i, d := range matches {
		names[i] = d.Name
	}
	return nil, fmt.Errorf("%s device %q is ambiguous: %s", kind, name, strings.Join(names, ", "))
}

// Streams are the open input and output streams: 24 kHz int16 mono,
// separate streams (one duplex stream corrupted playback on these
// machines), each read or written by a goroutine of its own with
// PortAudio's blocking calls, called only once a whole buffer can move
// (a pacer sleeps in Go until then, so no call waits inside PortAudio).
// (PortAudio's callbacks cost the same here
// and, after an output underflow, lose samples the Player counted as
// played instead of playing a gap: DESIGN.md.) The input loop feeds a
// Capture, the output loop drains a Player.
type Streams struct {
	log       *slog.Logger
	blocking  bool
	in, out   *portaudio.Stream
	inBuf     []int16
	outBuf    []int16
	latency   time.Duration
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	overflow  atomic.Uint64
	underflow atomic.Uint64
	stops     atomic.Uint64
	hangover  int // silent output buffers before the stream stops (0: never)
	inPolls   atomic.Uint64
	outPolls  atomic.Uint64
	errMu     sync.Mutex
	err       error
}

// OpenStreams opens and starts the streams: capture (when c is not nil)
// and playback (when p is not nil). It tells p the output latency. Close
// stops them.
func OpenStreams(ctx context.Context, cfg DeviceConfig, c *Capture, p *Player) (_ *Streams, err error) {
	if c == nil && p == nil {
		return nil, errors.New("audio: nothing to open")
	}
	if err := portaudio.Initialize(); err != nil {
		return nil, fmt.Errorf("portaudio: %w", err)
	}
	s := &Streams{log: cfg.Logger, blocking: cfg.blocking}
	if s.log == nil {
		s.log = slog.Default()
	}
	defer func() {
		if err != nil {
			s.closeStreams()
			portaudio.Terminate()
		}
	}()
	if c != nil {
		dev, err := findDevice(cfg.Input, true)
		if err != nil {
			return nil, err
		}
		s.inBuf = make([]int16, periodFrames(cfg.InputPeriod, DefaultInputPeriod))
		s.in, err = portaudio.OpenStream(portaudio.StreamParameters{
			Input:           portaudio.StreamDeviceParameters{Device: dev, Channels: 1, Latency: dev.DefaultLowInputLatency},
			SampleRate:      SampleRate,
			FramesPerBuffer: len(s.inBuf),
		}, s.inBuf)
		if err != nil {
			return nil, fmt.Errorf("open input %q: %w", dev.Name, err)
		}
	}
	if p != nil {
		dev, err := findDevice(cfg.Output, false)
		if err != nil {
			return nil, err
		}
		s.outBuf = make([]int16, periodFrames(cfg.OutputPeriod, DefaultOutputPeriod))
		lat := cfg.OutputLatency
		if lat <= 0 {
			lat = DefaultOutputLatency
		}
		s.out, err = portaudio.OpenStream(portaudio.StreamParameters{
			Output:          portaudio.StreamDeviceParameters{Device: dev, Channels: 1, Latency: lat},
			SampleRate:      SampleRate,
			FramesPerBuffer: len(s.outBuf),
		}, s.outBuf)
		if err != nil {
			return nil, fmt.Errorf("open output %q: %w", dev.Name, err)
		}
		if info := s.out.Info(); info != nil {
			s.latency = info.OutputLatency
		}
		p.SetOutputLatency(s.latency)
		if h := cfg.OutputHangover; h >= 0 && !cfg.blocking {
			s.hangover = periodFrames(max(h, 0), DefaultOutputHangover) / len(s.outBuf)
		}
	}
	for _, st := range []*portaudio.Stream{s.in, s.out} {
		if st != nil {
			if err := st.Start(); err != nil {
				return nil, fmt.Errorf("start stream: %w", err)
			}
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	if s.in != nil {
		s.wg.Go(func() { s.captureLoop(ctx, c) })
	}
	if s.out != nil {
		s.wg.Go(func() { s.playLoop(ctx, p) })
	}
	return s, nil
}

// captureLoop reads device buffers; Capture cuts them into 20 ms frames
// and copies what it keeps.
func (s *Streams) captureLoop(ctx context.Context, c *Capture) {
	pace := newPacer(s.in.AvailableToRead, len(s.inBuf), s.blocking, &s.inPolls)
	defer pace.stop()
	for pace.wait(ctx) {
		err := s.in.Read()
		if errors.Is(err, portaudio.InputOverflowed) {
			s.warn(&s.overflow, "audio input overflowed: capture samples lost")
		} else if err != nil {
			s.fail(fmt.Errorf("read input: %w", err))
			return
		}
		c.Write(s.inBuf)
	}
}

// playLoop writes device buffers, each filled from the Player only when
// the device has room for it, so what is written is as fresh as it can
// be (a Flush reaches the speaker a buffer sooner than filling first and
// then waiting in Write). After OutputHangover of silence it stops the
// stream until the Player starts the next reply (idle).
func (s *Streams) playLoop(ctx context.Context, p *Player) {
	pace := newPacer(s.out.AvailableToWrite, len(s.outBuf), s.blocking, &s.outPolls)
	pace.early = 0 // asked twice a buffer, paced playback cost half again what blocking did
	defer pace.stop()
	quiet := 0 // silent buffers in a row
	for pace.wait(ctx) {
		if p.Read(s.outBuf) > 0 || p.Playing() {
			quiet = 0
		} else if quiet++; s.hangover > 0 && quiet >= s.hangover {
			quiet = 0
			stopped, ok := s.idle(ctx, p)
			if !ok {
				return
			}
			if stopped {
				pace.reset()
				continue // that buffer was silence
			}
		}
		err := s.out.Write()
		if errors.Is(err, portaudio.OutputUnderflowed) {
			s.warn(&s.underflow, "audio output underflowed: the device played a gap")
		} else if err != nil {
			s.fail(fmt.Errorf("write output: %w", err))
			return
		}
	}
}

// idle stops the output stream while the Player has nothing to play and
// starts it again when a reply starts (Player.Started): the device layer
// then costs nothing while the user speaks or the agent thinks. What the
// device still held was silence, so it is dropped (Abort). A start takes
// a few milliseconds here and the stream begins empty: the first delta
// reaches the speaker about as soon as on a running stream. stopped is
// false when a reply started meanwhile; ok is false when ctx is done or
// the stream would not start again.
func (s *Streams) idle(ctx context.Context, p *Player) (stopped, ok bool) {
	select {
	case <-p.Started():
	default:
	}
	if p.Playing() {
		return false, true
	}
	if err := s.out.Abort(); err != nil {
		s.fail(fmt.Errorf("stop output: %w", err))
		return false, false
	}
	s.stops.Add(1)
	select {
	case <-ctx.Done():
		return true, false
	case <-p.Started():
	}
	if err := s.out.Start(); err != nil {
		s.fail(fmt.Errorf("start output: %w", err))
		return true, false
	}
	return true, true
}

func (s *Streams) warn(n *atomic.Uint64, msg string) {
	// The first, then every hundredth: a struggling device must not flood the log.
	if k := n.Add(1); k == 1 || k%100 == 0 {
		s.log.Warn(msg, "count", k)
	}
}

func (s *Streams) fail(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.err == nil {
		s.err = err
		s.log.Error("audio stream stopped", "err", err)
	}
}

// OutputLatency is how far written audio runs ahead of heard audio, as the
// output device reports it (0 without an output stream).
func (s *Streams) OutputLatency() time.Duration { return s.latency }

// Stats is a snapshot of the device's warnings.
func (s *Streams) Stats() DeviceStats {
	return DeviceStats{InputOverflows: s.overflow.Load(), OutputUnderflows: s.underflow.Load(), OutputStops: s.stops.Load()}
}

// Err is the error that stopped a stream, if one did.
func (s *Streams) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Close stops both loops (within one buffer), then the streams.
func (s *Streams) Close() error {
	s.cancel()
	s.wg.Wait()
	err := s.closeStreams()
	portaudio.Terminate()
	return errors.Join(err, s.Err())
}

func (s *Streams) closeStreams() error {
	var errs []error
	for _, st := range []*portaudio.Stream{s.in, s.out} {
		if st == nil {
			continue
		}
		st.Stop()
		if err := st.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.in, s.out = nil, nil
	return errors.Join(errs...)
}

// HavePortAudio: this build has the PortAudio backend (build tag portaudio).
const HavePortAudio = true

func openPortAudio(ctx context.Context, cfg DeviceConfig, c *Capture, p *Player) (DeviceStreams, error) {
	s, err := OpenStreams(ctx, cfg, c, p)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func portAudioDevices() ([]Device, error) { return Devices() }
