package main_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/tui/voicectl/voicectltest"
	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/audio"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// wire records what one client got from hearth, as the lines it read.
type wire struct {
	mu    sync.Mutex
	lines []string
	turns []ipc.Turn
	seen  chan struct{}
}

func (w *wire) take(m tea.Msg) {
	msg, ok := m.(ipc.Msg)
	if !ok {
		return
	}
	line, err := ipc.Encode(msg)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.lines = append(w.lines, string(line))
	if ts, ok := msg.(*ipc.TurnStored); ok {
		w.turns = append(w.turns, ts.Turn)
	}
	w.mu.Unlock()
	select {
	case w.seen <- struct{}{}:
	default:
	}
}

// waitTurns waits until the client has seen n stored turns.
func (w *wire) waitTurns(t *testing.T, ctx context.Context, n int) []ipc.Turn {
	t.Helper()
	for {
		w.mu.Lock()
		turns := append([]ipc.Turn(nil), w.turns...)
		w.mu.Unlock()
		if len(turns) >= n {
			return turns
		}
		select {
		case <-ctx.Done():
			t.Fatalf("saw %d turns, want %d: %+v", len(turns), n, turns)
		case <-w.seen:
		}
	}
}

// TestVoiceDeskE2E: the desk of a client (the TUI's Remote, Link and Desk,
// with a sound card in memory) against the real hearth binary, which mints
// credentials from the stand-in provider's client-secret endpoint; the
// realtime session runs against the same stand-in. One utterance: the user's
// turn and the agent's reply are stored once each with mode voice, and a
// second client sees both; no line to hearth carries audio, and the API key
// is in no line either client received.
func TestVoiceDeskE2E(t *testing.T) {
	const key = "xai-SECRET-e2e-desk-key"
	srv := voicetest.Start(t, voicetest.Options{APIKey: key, Turns: []voicetest.Turn{{User: "good morning",
		Reply: voicetest.Reply{Transcript: "Good morning to you.", AudioMS: 400}}}})
	base := strings.TrimSuffix(srv.SecretsURL(), "/realtime/client_secrets")
	d := startDaemon(t, t.TempDir(), "127.0.0.1:0", []string{
		"XAI_API_KEY=" + key, "XAI_BASE_URL=http://127.0.0.1:1/v1", // chat is never used here
		"MNEMO_VOICE_BASE_URL=" + base,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// Two clients as the TUI connects: one that talks, one that watches.
	connect := func(name string, deliver func(ipc.Msg)) (*tui.Remote, *wire) {
		w := &wire{seen: make(chan struct{}, 1)}
		r := tui.NewRemote(tui.RemoteOptions{Addr: d.Addr, Client: name, Token: func() (string, error) { return token, nil }})
		up := make(chan struct{})
		var once sync.Once
		go r.Run(ctx, func(m tea.Msg) {
			if sc, ok := m.(*ipc.StateChange); ok && sc.State == ipc.StateConnected {
				once.Do(func() { close(up) })
			}
			w.take(m)
			if msg, ok := m.(ipc.Msg); ok && deliver != nil {
				deliver(msg)
			}
		})
		select {
		case <-up:
		case <-ctx.Done():
			t.Fatalf("%s did not connect", name)
		}
		return r, w
	}
	_, watched := connect("watcher", nil)

	var sentMu sync.Mutex
	var sent []string
	var remote *tui.Remote
	link := voicectl.NewLink(func(m ipc.Msg) {
		line, _ := ipc.Encode(m)
		sentMu.Lock()
		sent = append(sent, string(line))
		sentMu.Unlock()
		remote.Send(m)
	}, func() string { return "x" })
	remote, w := connect("desk", func(m ipc.Msg) { link.Deliver(m) })

	sound := &voicectltest.Audio{}
	desk := voicectl.New(voicectl.Config{Hearth: link, Audio: sound, Echo: audio.HalfDuplex,
		Session: voice.Options{HTTPClient: srv.HTTPClient()}})
	done := make(chan error, 1)
	go func() { done <- desk.Run(ctx) }()
	next := func(what string, ok func(voicectl.Event) bool) {
		t.Helper()
		voicectltest.Await(ctx, t, desk, what, ok)
	}
	next("listening", func(ev voicectl.Event) bool {
		s, ok := ev.(voicectl.StateChanged)
		return ok && s.State == voicectl.Listening
	})
	sound.Say(voicetest.Tone(300), voicetest.Silence(700))
	next("the agent's final", func(ev voicectl.Event) bool {
		f, ok := ev.(voicectl.Final)
		return ok && f.Role == voicectl.RoleAgent
	})
	turns := watched.waitTurns(t, ctx, 2)
	desk.Stop()
	if err := <-done; err != nil {
		t.Fatalf("desk: %v", err)
	}

	want := []struct{ role, text string }{{ipc.RoleUser, "good morning"}, {ipc.RoleAgent, "Good morning to you."}}
	for i, tw := range want {
		if turns[i].Role != tw.role || turns[i].Content != tw.text || turns[i].Mode != ipc.ModeVoice {
			t.Errorf("turn %d the watcher saw: %+v, want %s %q in mode voice", i, turns[i], tw.role, tw.text)
		}
	}
	if len(turns) != 2 {
		t.Errorf("the watcher saw %d turns, want 2: %+v", len(turns), turns)
	}
	if n := len(sound.Played()); n != voice.SampleRate*400/1000 {
		t.Errorf("played %d samples, want %d", n, voice.SampleRate*400/1000)
	}
	sentMu.Lock()
	for _, l := range sent {
		if len(l) > 1024 || strings.Contains(l, "audio") {
			t.Errorf("a line to hearth carries audio: %.100s", l)
		}
	}
	sentMu.Unlock()
	for _, c := range []*wire{w, watched} {
		c.mu.Lock()
		for _, l := range c.lines {
			if strings.Contains(l, key) || strings.Contains(l, "SECRET") {
				t.Errorf("a client received the API key: %s", l)
			}
		}
		c.mu.Unlock()
	}
}
