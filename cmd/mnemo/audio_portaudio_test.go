//go:build portaudio

package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/tui/voicectl/voicectltest"
	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// deviceHearth is hearth for the desk, in process: credentials from the
// stand-in provider, transcripts recorded.
type deviceHearth struct {
	*voicetest.Credentials
	mu          sync.Mutex
	transcripts []string
}

func (h *deviceHearth) Transcript(_ context.Context, tr voicectl.Turn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.transcripts = append(h.transcripts, tr.Role+": "+tr.Text)
	return nil
}

func (h *deviceHearth) RunTool(context.Context, voice.FunctionCall) (string, error) { return "{}", nil }
func (h *deviceHearth) StopVoice(context.Context) error                             { return nil }

// TestDeskOnDevices: the desk on the real sound path, through each backend
// (PulseAudio's protocol; PortAudio) to PulseAudio null sinks
// (scripts/audio-setup.sh): speech played into the mic sink reaches the
// provider, its reply plays on the speaker sink, and both turns are
// stored. Run it with the environment make test-audio sets:
//
//	XDG_RUNTIME_DIR=/tmp/mnemo-audio PULSE_SERVER=unix:/tmp/mnemo-audio/pulse/native \
//	  go test -tags portaudio -race -gcflags=all=-d=checkptr=0 -run TestDeskOnDevices ./cmd/mnemo
func TestDeskOnDevices(t *testing.T) {
	if os.Getenv("PULSE_SERVER") == "" {
		if os.Getenv("MNEMO_AUDIO_REQUIRED") != "" {
			t.Fatal("PULSE_SERVER is not set: run scripts/audio-setup.sh (make test-audio)")
		}
		t.Skip("no sound server: make test-audio sets one up")
	}
	for _, backend := range []string{"pulse", "portaudio"} {
		t.Run(backend, func(t *testing.T) { testDeskOnDevices(t, backend) })
	}
}

func testDeskOnDevices(t *testing.T, backend string) {
	srv := voicetest.Start(t, voicetest.Options{Turns: []voicetest.Turn{{User: "hello there",
		Reply: voicetest.Reply{Transcript: "Hi.", AudioMS: 600}}}})
	// The default devices: mic.monitor in, spk out.
	getenv := func(k string) string {
		if k == "MNEMO_AUDIO_BACKEND" {
			return backend
		}
		return os.Getenv(k)
	}
	a := newAudio(getenv, slog.New(slog.DiscardHandler))
	if got, err := a.Backend(t.Context()); err != nil || !strings.HasPrefix(got, backend) {
		t.Fatalf("backend %q, %v; want %s", got, err, backend)
	}
	devs, err := a.Devices(t.Context())
	if err != nil || len(devs) == 0 {
		t.Fatalf("no audio devices (%v): is the sound server at PULSE_SERVER running? scripts/audio-setup.sh starts it", err)
	}
	h := &deviceHearth{Credentials: &voicetest.Credentials{Server: srv}}
	desk := voicectl.New(voicectl.Config{Hearth: h, Audio: a, Session: voice.Options{HTTPClient: srv.HTTPClient()}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- desk.Run(ctx) }()
	next := func(what string, ok func(voicectl.Event) bool) {
		t.Helper()
		voicectltest.Await(ctx, t, desk, what, ok)
	}
	state := func(s voicectl.State) func(voicectl.Event) bool {
		return func(ev voicectl.Event) bool { sc, ok := ev.(voicectl.StateChanged); return ok && sc.State == s }
	}
	next("listening", state(voicectl.Listening))
	speech := append(voicetest.Tone(400), voicetest.Silence(900)...)
	cmd := exec.CommandContext(ctx, "pacat", "--playback", "--device=mic", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=100")
	cmd.Stdin = bytes.NewReader(speech)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pacat: %v: %s", err, out)
	}
	next("agent speaking", state(voicectl.AgentSpeaking))
	next("the reply stored", func(ev voicectl.Event) bool {
		f, ok := ev.(voicectl.Final)
		return ok && f.Role == voicectl.RoleAgent
	})
	desk.Stop()
	if err := <-done; err != nil {
		t.Fatalf("desk: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.transcripts) != 2 || h.transcripts[0] != "user: hello there" || h.transcripts[1] != "agent: Hi." {
		t.Errorf("transcripts %q", h.transcripts)
	}
}
