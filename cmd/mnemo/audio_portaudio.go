//go:build portaudio

package main

import (
	"context"
	"log/slog"

	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// hasAudio: this build talks (cgo, PortAudio).
const hasAudio = true

// paAudio is the sound card through PortAudio.
type paAudio struct{ cfg audio.DeviceConfig }

// newAudio is the voice session's sound card: the devices named by
// MNEMO_AUDIO_INPUT and MNEMO_AUDIO_OUTPUT (a name or part of one; empty:
// the system default).
func newAudio(getenv func(string) string, log *slog.Logger) voicectl.Audio {
	return &paAudio{cfg: audio.DeviceConfig{Input: getenv("MNEMO_AUDIO_INPUT"), Output: getenv("MNEMO_AUDIO_OUTPUT"), Logger: log}}
}

func (a *paAudio) Open(ctx context.Context, c *audio.Capture, p *audio.Player) (voicectl.Streams, error) {
	return audio.OpenStreams(ctx, a.cfg, c, p)
}

func (a *paAudio) Devices(context.Context) ([]voicectl.Device, error) {
	ds, err := audio.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]voicectl.Device, 0, len(ds))
	for _, d := range ds {
		out = append(out, voicectl.Device{Name: d.Name, Host: d.Host, Inputs: d.Inputs, Outputs: d.Outputs,
			DefaultInput: d.DefaultInput, DefaultOutput: d.DefaultOutput})
	}
	return out, nil
}
