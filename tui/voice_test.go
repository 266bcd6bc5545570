package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/tui/voicectl/voicectltest"
	"github.com/mnemo/mnemo/voice/audio"
)

func voiceModel(t *testing.T, a voicectl.Audio) (*Model, *stub) {
	t.Helper()
	be := &stub{}
	m := New(Config{
		Backend: be, Addr: "127.0.0.1:7744", Local: true, Markdown: "dark", Profile: termenv.Ascii,
		Now: func() time.Time { return epoch }, Location: time.UTC, NewRef: func() string { return "r1" },
		Tick:  func(time.Duration, tea.Msg) tea.Cmd { return nil },
		Audio: a,
	})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	h := connected(goldenHistory[:2]...).(*ipc.StateChange)
	h.History.Features = []string{"voice", "search", "cancel"}
	m.Update(h)
	return m, be
}

func screen(m *Model) string {
	m.dirty = true
	return ansi.Strip(m.View())
}

// TestVoiceWithoutAudio: in a build without PortAudio, /voice and its key
// say so and how to get it, and ask hearth for nothing.
func TestVoiceWithoutAudio(t *testing.T) {
	for _, how := range []struct {
		name string
		do   func(m *Model)
	}{
		{"command", func(m *Model) { m.runCommand("/voice") }},
		{"key", func(m *Model) { m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("v"), Alt: true}) }},
		{"devices", func(m *Model) { m.runCommand("/voice devices") }},
	} {
		t.Run(how.name, func(t *testing.T) {
			m, be := voiceModel(t, nil)
			how.do(m)
			if !m.flash.err || m.flash.text != NoAudioHint {
				t.Errorf("status %q, want %q", m.flash.text, NoAudioHint)
			}
			if s := screen(m); !strings.Contains(s, "portaudio19-dev pkg-config") || !strings.Contains(s, "make build") {
				t.Errorf("the screen does not say how to get audio:\n%s", s)
			}
			if n := len(be.all()); n != 0 {
				t.Errorf("%d messages to hearth, want none", n)
			}
			if m.voice != nil {
				t.Error("a voice session started without audio")
			}
		})
	}
}

// TestVoicePanel: golden frames of the voice panel in each state.
//
//	go test ./tui -run TestVoicePanel -update
func TestVoicePanel(t *testing.T) {
	loud := audio.Level{RMS: -12, Peak: -3}
	quiet := audio.Level{RMS: audio.MinDBFS, Peak: audio.MinDBFS}
	tests := []struct {
		name string
		v    voiceUI
	}{
		{"connecting", voiceUI{state: voicectl.Connecting, in: quiet, out: quiet}},
		{"listening", voiceUI{state: voicectl.Listening, in: audio.Level{RMS: -40}, out: quiet}},
		{"you-speaking", voiceUI{state: voicectl.UserSpeaking, in: loud, out: quiet}},
		{"thinking", voiceUI{state: voicectl.Thinking, in: quiet, out: quiet}},
		{"agent-speaking", voiceUI{state: voicectl.AgentSpeaking, in: quiet, out: loud, echo: audio.FullDuplex}},
		{"reconnecting", voiceUI{state: voicectl.Reconnecting, in: quiet, out: quiet}},
		{"push-to-talk", voiceUI{state: voicectl.Listening, in: quiet, out: quiet, manual: true}},
		{"push-to-talk-open", voiceUI{state: voicectl.UserSpeaking, in: loud, out: quiet, manual: true, talking: true}},
		{"stopping", voiceUI{state: voicectl.Listening, in: quiet, out: quiet, stopped: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := voiceModel(t, nil)
			v := tt.v
			m.voice = &v
			frame := screen(m)
			checkFrame(t, frame, 80, 24)
			golden.RequireEqual(t, []byte(frame))
		})
	}
}

// TestVoicePartials: live transcripts show in the chat and give way to
// the turns hearth stores (matched by the item id, the transcript's ref);
// what was never final goes when voice ends.
func TestVoicePartials(t *testing.T) {
	m, _ := voiceModel(t, nil)
	desk := voicectl.New(voicectl.Config{}) // never run: only its identity matters
	m.voice = &voiceUI{desk: desk, state: voicectl.Listening}
	send := func(ev voicectl.Event) {
		t.Helper()
		m.Update(voiceEventMsg{desk: desk, ev: ev})
	}
	send(voicectl.StateChanged{State: voicectl.UserSpeaking})
	send(voicectl.Partial{Role: voicectl.RoleUser, ItemID: "item_1", Text: "what time"})
	if s := screen(m); !strings.Contains(s, "what time") || !strings.Contains(s, "hearing…") {
		t.Fatalf("no user partial:\n%s", s)
	}
	send(voicectl.Final{Role: voicectl.RoleUser, ItemID: "item_1", Text: "what time is it"})
	send(voicectl.Partial{Role: voicectl.RoleAgent, ItemID: "item_2", Text: "It is"})
	s := screen(m)
	if !strings.Contains(s, "what time is it") || !strings.Contains(s, "saving…") || !strings.Contains(s, "It is") || !strings.Contains(s, "speaking…") {
		t.Fatalf("partials not shown:\n%s", s)
	}
	stored := userTurn(10, "what time is it")
	stored.Mode = ipc.ModeVoice
	m.Update(&ipc.TurnStored{Turn: stored, Ref: "item_1"})
	if s := screen(m); strings.Count(s, "what time is it") != 1 || strings.Contains(s, "saving…") {
		t.Fatalf("the stored turn did not replace the partial:\n%s", s)
	}
	send(voicectl.Ended{Err: &voicectl.HearthError{Code: ipc.CodeNoVoiceProvider, Message: "no voice provider is configured: set XAI_API_KEY"}})
	s = screen(m)
	if strings.Contains(s, "It is") {
		t.Errorf("an unfinished partial outlived the session:\n%s", s)
	}
	if m.flash.text != "no voice provider is configured: set XAI_API_KEY" || !m.flash.err {
		t.Errorf("status %q, want hearth's message as is", m.flash.text)
	}
	if m.voice != nil {
		t.Error("voice still on after Ended")
	}
	// A late event of the ended session changes nothing.
	send(voicectl.Partial{Role: voicectl.RoleUser, ItemID: "item_3", Text: "ghost"})
	if s := screen(m); strings.Contains(s, "ghost") {
		t.Errorf("an ended session's event was shown:\n%s", s)
	}
}

// TestVoiceEchoCommand: /voice headphones and /voice speakers set the echo
// mode for the next session.
func TestVoiceEchoCommand(t *testing.T) {
	m, _ := voiceModel(t, nil)
	for _, tt := range []struct {
		cmd  string
		want audio.Mode
	}{{"/voice headphones", audio.FullDuplex}, {"/voice speakers", audio.HalfDuplex}, {"/voice echo", audio.FullDuplex}, {"/voice echo", audio.HalfDuplex}} {
		m.runCommand(tt.cmd)
		if m.voiceEcho != tt.want {
			t.Errorf("%s: echo %v, want %v", tt.cmd, m.voiceEcho, tt.want)
		}
	}
	m.runCommand("/voice nonsense")
	if !m.flash.err || !strings.HasPrefix(m.flash.text, "usage: /voice") {
		t.Errorf("status %q, want the usage", m.flash.text)
	}
}

// TestVoiceTranscriptResent: a voice transcript that did not reach hearth
// (the connection broke) goes again once the client is reconnected.
func TestVoiceTranscriptResent(t *testing.T) {
	m, be := voiceModel(t, nil)
	m.voiceLink = voicectl.NewLink(m.backend.Send, m.newRef)
	tr := &ipc.Transcript{Role: ipc.RoleUser, Text: "hello", Ref: "item_1"}
	m.Update(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1})
	m.Update(SendFailedMsg{Msg: tr, Err: ipc.ErrNotConnected})
	if n := len(sentOf[*ipc.Transcript](be)); n != 0 {
		t.Fatalf("%d transcripts sent while away", n)
	}
	m.Update(connected(goldenHistory[:2]...))
	got := sentOf[*ipc.Transcript](be)
	if len(got) != 1 || *got[0] != *tr {
		t.Errorf("after reconnecting sent %v, want the transcript once", got)
	}
}

// TestVoiceDevices: /voice devices lists what the sound card offers, off
// the UI goroutine.
func TestVoiceDevices(t *testing.T) {
	m, _ := voiceModel(t, &voicectltest.Audio{})
	cmd := m.runCommand("/voice devices")
	if cmd == nil {
		t.Fatal("no command to list the devices")
	}
	m.Update(cmd())
	if s := screen(m); !strings.Contains(s, "audio devices:") || !strings.Contains(s, "memory · in, out, default in, default out") {
		t.Errorf("devices not listed:\n%s", s)
	}
}

// TestTalkKey: ctrl+space (NUL, named ctrl+@) is the talk key; with voice
// off it says how to start it and types nothing.
func TestTalkKey(t *testing.T) {
	m, be := voiceModel(t, &voicectltest.Audio{})
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlAt})
	if m.flash.text != "voice is off: /voice starts it" {
		t.Errorf("status %q", m.flash.text)
	}
	if m.in.value() != "" || len(be.all()) != 0 {
		t.Errorf("the key typed %q or sent %v", m.in.value(), be.all())
	}
}

// TestQuitWaitsForVoice: quitting with voice on stops the session and
// quits when it ended (its last transcripts and stop_voice are then with
// the backend), or when voiceQuitWait is over; without voice at once.
func TestQuitWaitsForVoice(t *testing.T) {
	isQuit := func(cmd tea.Cmd) bool {
		if cmd == nil {
			return false
		}
		_, ok := cmd().(tea.QuitMsg)
		return ok
	}
	for _, tc := range []struct {
		name  string
		voice bool
		end   tea.Msg // what ends the wait
	}{
		{"no voice", false, nil},
		{"session ended", true, voiceEventMsg{ev: voicectl.Ended{}}},
		{"wait over", true, voiceQuitMsg{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 80, 24)
			var desk *voicectl.Desk
			if tc.voice {
				desk = voicectl.New(voicectl.Config{})
				hs.m.voice = &voiceUI{desk: desk}
			}
			cmd := hs.send(tea.KeyMsg{Type: tea.KeyCtrlC})
			if !tc.voice {
				if !isQuit(cmd) {
					t.Fatal("quit without voice did not quit")
				}
				return
			}
			if isQuit(cmd) {
				t.Fatal("quit with voice on did not wait for the session")
			}
			if !hs.m.voice.stopped {
				t.Error("quit did not stop voice")
			}
			if isQuit(hs.send(tea.KeyMsg{Type: tea.KeyCtrlC})) {
				t.Error("a second quit key did not wait either")
			}
			end := tc.end
			if ev, ok := end.(voiceEventMsg); ok {
				ev.desk = desk
				end = ev
			}
			if !isQuit(hs.send(end)) {
				t.Errorf("%T did not quit", end)
			}
		})
	}
}
