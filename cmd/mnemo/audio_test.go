package main

import (
	"log/slog"
	"testing"

	"github.com/mnemo/mnemo/voice/audio"
)

// TestAudioBuild: a build with the portaudio tag gives the UI a sound
// card; one without gives nil, and /voice then explains.
func TestAudioBuild(t *testing.T) {
	a := newAudio(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if (a != nil) != hasAudio {
		t.Fatalf("newAudio = %v in a build with hasAudio=%v", a, hasAudio)
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
