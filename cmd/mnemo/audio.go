package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// deskAudio is the voice session's sound card: the backend
// MNEMO_AUDIO_BACKEND names (auto, the default: PulseAudio's native
// protocol when a PulseAudio server answers, else PortAudio when this
// mnemo is built with it), chosen again at each /voice so a server
// started later is found; the devices named by MNEMO_AUDIO_INPUT and
// MNEMO_AUDIO_OUTPUT (a name or part of one, or of a PulseAudio
// description; empty: the system default).
type deskAudio struct {
	want    audio.Backend
	wantErr error
	cfg     audio.DeviceConfig
	getenv  func(string) string
	log     *slog.Logger
}

func newAudio(getenv func(string) string, log *slog.Logger) *deskAudio {
	want, err := audio.ParseBackend(strings.ToLower(strings.TrimSpace(getenv("MNEMO_AUDIO_BACKEND"))))
	if err != nil {
		err = fmt.Errorf("MNEMO_AUDIO_BACKEND: %w", err)
	}
	return &deskAudio{want: want, wantErr: err, getenv: getenv, log: log,
		cfg: audio.DeviceConfig{Input: getenv("MNEMO_AUDIO_INPUT"), Output: getenv("MNEMO_AUDIO_OUTPUT"), Logger: log}}
}

// backend resolves the choice now, and the configuration for it.
func (a *deskAudio) backend(ctx context.Context) (audio.Backend, audio.DeviceConfig, error) {
	if a.wantErr != nil {
		return "", a.cfg, a.wantErr
	}
	b, server, err := audio.ChooseBackend(ctx, a.want, a.getenv, audio.HavePortAudio)
	cfg := a.cfg
	cfg.PulseServer = server
	return b, cfg, err
}

// Backend says which backend voice would use now, for mnemo doctor:
// "pulse (unix:/run/user/1000/pulse/native)" or "portaudio".
func (a *deskAudio) Backend(ctx context.Context) (string, error) {
	b, cfg, err := a.backend(ctx)
	if err != nil {
		return "", err
	}
	if cfg.PulseServer != "" {
		return fmt.Sprintf("%s (%s)", b, cfg.PulseServer), nil
	}
	return string(b), nil
}

func (a *deskAudio) Open(ctx context.Context, c *audio.Capture, p *audio.Player) (voicectl.Streams, error) {
	b, cfg, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	a.log.Info("voice audio", "backend", b, "server", cfg.PulseServer, "input", cfg.Input, "output", cfg.Output)
	return audio.Open(ctx, b, cfg, c, p)
}

func (a *deskAudio) Devices(ctx context.Context) ([]voicectl.Device, error) {
	b, cfg, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	ds, err := audio.ListDevices(ctx, b, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]voicectl.Device, 0, len(ds))
	for _, d := range ds {
		host := d.Host
		if d.Description != "" {
			host += ": " + d.Description
		}
		out = append(out, voicectl.Device{Name: d.Name, Host: host, Inputs: d.Inputs, Outputs: d.Outputs,
			DefaultInput: d.DefaultInput, DefaultOutput: d.DefaultOutput})
	}
	return out, nil
}
