//go:build !portaudio

package main

import (
	"log/slog"

	"github.com/mnemo/mnemo/tui/voicectl"
)

// hasAudio: this build has no audio layer; /voice says how to get one
// (PortAudio's headers, then `make build`, which adds -tags portaudio).
const hasAudio = false

func newAudio(func(string) string, *slog.Logger) voicectl.Audio { return nil }
