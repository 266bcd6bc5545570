package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/voice/audio"
)

// TestAudioBuild: every build gives the UI a sound card (PulseAudio needs
// no cgo; PortAudio comes with the portaudio tag), and the backend is
// chosen when voice starts: a PulseAudio socket that answers gets pulse,
// none gets PortAudio where it is built in, else an error saying what is
// missing; MNEMO_AUDIO_BACKEND forces one or is refused.
func TestAudioBuild(t *testing.T) {
	dir, err := os.MkdirTemp("", "vp") // a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "native")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	none := filepath.Join(dir, "none")
	orPA := func(s string) string {
		if audio.HavePortAudio {
			return "portaudio"
		}
		return s
	}
	for _, tt := range []struct {
		name, backend, server, want string
	}{
		{"auto, server answers", "", sock, "pulse (unix:" + sock + ")"},
		{"auto, no server", "auto", none, orPA("no PulseAudio server answers")},
		{"forced pulse", "pulse", sock, "pulse (unix:" + sock + ")"},
		{"forced portaudio", "PortAudio", sock, orPA("built without PortAudio")},
		{"unknown", "jack", sock, `MNEMO_AUDIO_BACKEND: audio backend "jack"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"MNEMO_AUDIO_BACKEND": tt.backend, "PULSE_SERVER": "unix:" + tt.server}
			a := newAudio(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
			got, err := a.Backend(t.Context())
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Backend = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVoiceEcho(t *testing.T) {
	tests := []struct {
		env     string
		want    audio.Mode
		wantErr bool
	}{
		{"", audio.HalfDuplex, false},
		{"speakers", audio.HalfDuplex, false},
		{"Headphones", audio.FullDuplex, false},
		{"full", audio.FullDuplex, false},
		{"loud", audio.HalfDuplex, true},
	}
	for _, tt := range tests {
		got, err := voiceEcho(func(string) string { return tt.env })
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("voiceEcho(%q) = %v, %v; want %v, error %v", tt.env, got, err, tt.want, tt.wantErr)
		}
	}
}
