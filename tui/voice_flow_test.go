package tui

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl/voicectltest"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// voiceHearth is a stand-in hearth for the UI: it mints credentials from
// the stand-in provider and stores transcripts as turns, answering through
// the running program as Remote would.
type voiceHearth struct {
	stub
	ctx   context.Context
	creds *voicetest.Credentials
	post  chan tea.Msg // to the program, in order
	mu    sync.Mutex
	n     int
	saved chan struct{} // a transcript stored
}

func (h *voiceHearth) Send(m ipc.Msg) {
	h.stub.Send(m)
	switch m := m.(type) {
	case *ipc.VoiceRequest:
		go func() {
			c, _, err := h.creds.Credential(h.ctx)
			if err != nil {
				h.post <- &ipc.Error{Code: ipc.CodeProviderError, Message: "mint failed"}
				return
			}
			h.post <- (&ipc.VoiceCredential{Token: c.Value, ExpiresAt: c.ExpiresAt, URL: c.URL, Model: c.Model, Dialect: c.Dialect})
		}()
	case *ipc.Transcript:
		h.mu.Lock()
		h.n++
		id := tid(100 + h.n)
		h.mu.Unlock()
		h.post <- &ipc.TurnStored{Turn: ipc.Turn{ID: id, Role: m.Role, Content: m.Text, Mode: ipc.ModeVoice, TS: epoch}, Ref: m.Ref}
		h.saved <- struct{}{}
	}
}

// TestVoiceFlow: the whole client path in the real program: alt+v starts
// a session (credential from hearth, sound card in memory, the stand-in
// provider), one utterance becomes two stored voice turns in the chat,
// alt+v stops it and hearth is told.
func TestVoiceFlow(t *testing.T) {
	srv := voicetest.Start(t, voicetest.Options{Turns: []voicetest.Turn{{User: "what time is it",
		Reply: voicetest.Reply{Transcript: "It is noon.", AudioMS: 300}}}})
	sound := &voicectltest.Audio{}
	h := &voiceHearth{ctx: t.Context(), creds: &voicetest.Credentials{Server: srv}, post: make(chan tea.Msg, 64), saved: make(chan struct{}, 8)}
	m := New(Config{
		Backend: h, Addr: "127.0.0.1:7744", Local: true, Markdown: "dark", Profile: termenv.Ascii,
		Now: func() time.Time { return epoch }, Location: time.UTC, Audio: sound,
	})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	go func() {
		for msg := range h.post {
			tm.Send(msg)
		}
	}()
	c := connected(goldenHistory[:2]...).(*ipc.StateChange)
	c.History.Features = []string{"voice"}
	alt := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("v"), Alt: true}
	h.post <- c
	h.post <- alt
	waitScreen := func(what string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			return bytes.Contains([]byte(ansi.Strip(string(b))), []byte(what))
		}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitScreen("◉ voice listening")
	sound.Say(voicetest.Tone(300), voicetest.Silence(700))
	for range 2 { // the user's turn, then the agent's once it played
		select {
		case <-h.saved:
		case <-time.After(20 * time.Second):
			t.Fatal("hearth got no transcript")
		}
	}
	h.post <- alt // after the stored turns
	waitScreen("voice off")
	tm.Quit()
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	screen := ansi.Strip(final.View())
	for _, want := range []string{"you · voice", "what time is it", "mnemo · voice", "It is noon."} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for _, gone := range []string{"saving…", "speaking…", "hearing…", "◉ voice"} {
		if strings.Contains(screen, gone) {
			t.Errorf("screen still shows %q:\n%s", gone, screen)
		}
	}
	trs := sentOf[*ipc.Transcript](&h.stub)
	if len(trs) != 2 || trs[0].Text != "what time is it" || trs[1].Text != "It is noon." {
		t.Errorf("transcripts %+v", trs)
	}
	if n := len(sentOf[*ipc.StopVoice](&h.stub)); n != 1 {
		t.Errorf("%d stop_voice, want 1", n)
	}
	if n := len(sentOf[*ipc.VoiceRequest](&h.stub)); n != 1 {
		t.Errorf("%d voice_request, want 1", n)
	}
}
