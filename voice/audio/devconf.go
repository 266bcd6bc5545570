package audio

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Backend is the device layer a voice session plays and records through.
type Backend string

const (
	// BackendAuto is PulseAudio when a PulseAudio server answers
	// (PulseServers), else PortAudio (ChooseBackend).
	BackendAuto Backend = "auto"
	// BackendPulse talks PulseAudio's native protocol over its socket, in
	// Go (github.com/jfreymuth/pulse/proto): no plugin threads, no cgo.
	BackendPulse Backend = "pulse"
	// BackendPortAudio goes through PortAudio (build tag portaudio): ALSA,
	// and on a desktop ALSA's pulse plugin, then the server.
	BackendPortAudio Backend = "portaudio"
)

// ParseBackend reads a backend's name; "" is BackendAuto.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case "":
		return BackendAuto, nil
	case BackendAuto, BackendPulse, BackendPortAudio:
		return b, nil
	}
	return "", fmt.Errorf("audio backend %q: use auto, pulse or portaudio", s)
}

// DeviceStreams are a backend's open input and output streams: a Capture
// fed from the microphone and a Player drained to the speaker until Close.
type DeviceStreams interface {
	// OutputLatency is how far written audio runs ahead of heard audio.
	OutputLatency() time.Duration
	// Stats is a snapshot of the device's warnings.
	Stats() DeviceStats
	// Err is the error that stopped a stream, if one did.
	Err() error
	// Close stops the streams.
	Close() error
}

// Opener opens a backend's streams (OpenStreams, OpenPulse).
type Opener func(ctx context.Context, cfg DeviceConfig, c *Capture, p *Player) (DeviceStreams, error)

// Device is an audio device a backend offers.
type Device struct {
	Name              string
	Description       string // PulseAudio's device.description ("" from PortAudio)
	Host              string // PortAudio's host API (ALSA, ...), or PulseAudio
	Inputs, Outputs   int    // channels
	DefaultSampleRate float64
	DefaultInput      bool
	DefaultOutput     bool
}

// DeviceConfig chooses the devices; "" is the system default. A name
// picks a device by its exact name, else the one whose name (or, with
// PulseAudio, description) contains it, case-insensitive.
type DeviceConfig struct {
	Input, Output string
	// PulseServer is the PulseAudio server to talk to, a server string
	// ("unix:/run/user/1000/pulse/native"); "" asks the environment
	// (PulseServers). The PortAudio backend ignores it.
	PulseServer string
	// InputPeriod and OutputPeriod are the device buffers, whole 20 ms
	// frames (0: DefaultInputPeriod, DefaultOutputPeriod; PulseAudio's
	// playback: DefaultPulseOutputPeriod). A longer
	// period wakes the device layer less often and adds its length to
	// that direction's latency.
	InputPeriod, OutputPeriod time.Duration
	Logger                    *slog.Logger

	// OutputLatency is how much audio the output device is asked to
	// hold ahead of the speaker (0: DefaultOutputLatency; PulseAudio:
	// DefaultPulseOutputLatency).
	OutputLatency time.Duration
	// OutputHangover is how long the output stream plays silence after a
	// reply before it stops until the next (0: DefaultOutputHangover;
	// negative: it never stops).
	OutputHangover time.Duration

	// blocking makes the loops wait inside PortAudio's blocking calls,
	// as mnemo did before pacing (for the benchmarks' A/B).
	blocking bool
}

// The device periods. Capture takes 40 ms buffers: capturing through
// ALSA's pulse plugin costs about three times what playing does, and half
// the wake-ups halve it, for at most 20 ms more before a frame is sent
// (the first of the two; still 20 ms frames on the wire). Playback keeps
// 20 ms: its period is added to every reply and to barge-in. Measured in
// DESIGN.md ("Voice measurements").
const (
	DefaultInputPeriod  = 40 * time.Millisecond
	DefaultOutputPeriod = 20 * time.Millisecond
)

// DefaultOutputLatency is the output latency asked of the device. The
// play loop writes a buffer as soon as the device has room for one (see
// pacer), so the device holds between this and a buffer more; 60 ms
// (not the pulse plugin's 40 ms default) keeps a late wake-up on a loaded
// machine from running it dry, and replies are still heard sooner than
// when the loop waited inside PortAudio's blocking write (DESIGN.md,
// "Voice measurements").
const DefaultOutputLatency = 60 * time.Millisecond

// DefaultOutputHangover is how long the output stream runs on silence
// before it stops: long enough that the reply after a tool call or a
// short pause finds it running, short enough that a session spent
// listening costs no playback (DESIGN.md, "Voice measurements").
const DefaultOutputHangover = 500 * time.Millisecond

// periodFrames is d in samples, rounded to whole 20 ms frames (at least one).
func periodFrames(d, def time.Duration) int {
	if d <= 0 {
		d = def
	}
	const frame = time.Second * FrameSamples / SampleRate
	n := int((d + frame/2) / frame)
	return max(1, n) * FrameSamples
}

// DeviceStats counts the device's complaints, which are warnings: the
// streams keep running.
type DeviceStats struct {
	InputOverflows   uint64 // capture samples lost before we read them
	OutputUnderflows uint64 // the device played a gap before we wrote
	OutputStops      uint64 // times the output stopped for lack of audio
}

// Open opens backend b's streams (BackendPulse or BackendPortAudio; see
// ChooseBackend for BackendAuto).
func Open(ctx context.Context, b Backend, cfg DeviceConfig, c *Capture, p *Player) (DeviceStreams, error) {
	switch b {
	case BackendPulse:
		s, err := OpenPulse(ctx, cfg, c, p)
		if err != nil {
			return nil, err
		}
		return s, nil
	case BackendPortAudio:
		return openPortAudio(ctx, cfg, c, p)
	}
	return nil, fmt.Errorf("audio backend %q: choose pulse or portaudio", b)
}

// ListDevices lists backend b's devices.
func ListDevices(ctx context.Context, b Backend, cfg DeviceConfig) ([]Device, error) {
	switch b {
	case BackendPulse:
		return PulseDevices(ctx, cfg.PulseServer)
	case BackendPortAudio:
		return portAudioDevices()
	}
	return nil, fmt.Errorf("audio backend %q: choose pulse or portaudio", b)
}
