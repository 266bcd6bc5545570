// Package audio is the sound path of a voice session, independent of any
// device: the playback ring buffer the socket reader writes reply audio
// into (it never blocks the reader), capture framing into 20 ms frames,
// level meters for the UI, and the half-duplex gate that keeps the agent
// from hearing itself. All of it is pure Go; PCM is 24 kHz int16 mono.
//
// Two device layers feed a Capture and drain a Player (Open, behind
// DeviceStreams): PulseAudio's native protocol over the server's socket
// (pulse.go, pure Go, in every build) and PortAudio (device.go, build tag
// `portaudio`: cgo, portaudio19-dev). ChooseBackend picks: pulse when a
// PulseAudio server answers, else PortAudio. `make test-audio` runs the
// device tests on both against PulseAudio null sinks.
package audio

import "github.com/mnemo/mnemo/voice"

const (
	// SampleRate is the PCM rate both ways.
	SampleRate = voice.SampleRate
	// FrameSamples is one 20 ms frame: the capture and device buffer size.
	FrameSamples = SampleRate / 50
)

// samples converts a duration to a sample count at SampleRate.
func samples(ms int) int { return ms * SampleRate / 1000 }
