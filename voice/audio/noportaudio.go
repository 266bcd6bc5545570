//go:build !portaudio

package audio

import (
	"context"
	"errors"
)

// HavePortAudio: this build has the PortAudio backend (build tag portaudio).
const HavePortAudio = false

var errNoPortAudio = errors.New("audio backend portaudio: this build has no PortAudio (build tag portaudio)")

func openPortAudio(context.Context, DeviceConfig, *Capture, *Player) (DeviceStreams, error) {
	return nil, errNoPortAudio
}

func portAudioDevices() ([]Device, error) { return nil, errNoPortAudio }
