package tui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// NoAudioHint is what /voice says in a build without the audio layer.
const NoAudioHint = "this build of mnemo has no audio: install PortAudio " +
	"(sudo apt-get install portaudio19-dev pkg-config), then `make build`"

// voiceLevelEvery is how often the level bars are sampled.
const voiceLevelEvery = 100 * time.Millisecond

// voiceUI is the voice session this client runs, as the UI sees it.
type voiceUI struct {
	desk    *voicectl.Desk
	state   voicectl.State
	echo    audio.Mode
	in, out audio.Level
	manual  bool // push-to-talk
	talking bool
	stopped bool // Stop asked; Ended follows
}

// Messages of the voice session.
type (
	voiceEventMsg struct {
		desk *voicectl.Desk
		ev   voicectl.Event
	}
	voiceLevelMsg   struct{ desk *voicectl.Desk }
	voiceDevicesMsg struct {
		devs []voicectl.Device
		err  error
	}
)

// toggleVoice starts a voice session or stops the one running.
func (m *Model) toggleVoice() tea.Cmd {
	if m.voice != nil {
		m.stopVoice()
		return nil
	}
	return m.startVoice()
}

func (m *Model) startVoice() tea.Cmd {
	switch {
	case m.audio == nil:
		m.flashErr(NoAudioHint)
		m.chat.notice(levelWarn, NoAudioHint)
		return nil
	case m.conn.state != ipc.StateConnected:
		m.flashErr("voice needs hearth: not connected")
		return nil
	case !m.supports("voice"):
		m.flashErr("this hearth does not offer voice")
		return nil
	}
	if m.voiceLink == nil {
		// One Link for every session: what did not reach hearth is sent
		// when the connection is back, even after the session ended.
		m.voiceLink = voicectl.NewLink(m.backend.Send, m.newRef)
	}
	desk := voicectl.New(voicectl.Config{Hearth: m.voiceLink, Audio: m.audio, Echo: m.voiceEcho, Log: m.log})
	silent := audio.Level{RMS: audio.MinDBFS, Peak: audio.MinDBFS}
	m.voice = &voiceUI{desk: desk, state: voicectl.Connecting, echo: m.voiceEcho, in: silent, out: silent}
	ctx, cancel := context.WithCancel(context.Background())
	m.voiceCancel = cancel
	run := func() tea.Msg {
		desk.Run(ctx) // its end arrives as the Ended event
		return nil
	}
	return tea.Batch(run, nextVoice(desk), m.tick(voiceLevelEvery, voiceLevelMsg{desk}))
}

// stopVoice asks the session to end; it ends with its Ended event.
func (m *Model) stopVoice() {
	if m.voice == nil || m.voice.stopped {
		return
	}
	m.voice.stopped = true
	m.voice.desk.Stop()
	m.flashInfo("stopping voice…")
}

// voiceQuitWait bounds how long quitting waits for the voice session to
// end (its last transcripts and stop_voice handed to the backend).
const voiceQuitWait = time.Second

// voiceQuitMsg: the wait for voice to end on quit is over.
type voiceQuitMsg struct{}

// quit ends the program; with voice on, once the session ended (its
// Ended event), or after voiceQuitWait.
func (m *Model) quit() tea.Cmd {
	if m.voice == nil {
		return tea.Quit
	}
	m.stopVoice()
	if m.quitting {
		return nil
	}
	m.quitting = true
	return m.tick(voiceQuitWait, voiceQuitMsg{})
}

// nextVoice waits for the desk's next event, off the UI goroutine.
func nextVoice(d *voicectl.Desk) tea.Cmd {
	return func() tea.Msg {
		ev, err := d.Next(context.Background())
		if err != nil {
			return nil
		}
		return voiceEventMsg{desk: d, ev: ev}
	}
}

func (m *Model) onVoiceEvent(msg voiceEventMsg) tea.Cmd {
	v := m.voice
	if v == nil || v.desk != msg.desk {
		return nil // a session already over
	}
	switch ev := msg.ev.(type) {
	case voicectl.StateChanged:
		v.state = ev.State
		v.manual, v.talking = v.desk.PushToTalk()
		if ev.State == voicectl.Reconnecting && ev.Err != nil {
			m.log.Info("voice reconnecting", "err", ev.Err)
		}
	case voicectl.Partial:
		m.voicePartial(ev.Role, ev.ItemID, ev.Text, "")
	case voicectl.Final:
		m.voicePartial(ev.Role, ev.ItemID, ev.Text, "saving…")
	case voicectl.Dropped:
		m.dropPartial(ev.ItemID)
	case voicectl.Ended:
		m.voice = nil
		m.voiceDone = nil
		if m.voiceCancel != nil {
			m.voiceCancel()
			m.voiceCancel = nil
		}
		// What was heard but not final is not stored: take it down.
		for id, it := range m.voiceParts {
			if it.status != "saving…" {
				m.chat.remove(it)
				delete(m.voiceParts, id)
			}
		}
		if m.quitting {
			return tea.Quit
		}
		if ev.Err != nil {
			text := voiceError(ev.Err)
			m.log.Warn("voice ended", "err", ev.Err)
			m.flashErr(shortText(text, 100))
			m.chat.notice(levelErr, "voice: "+text)
		} else {
			m.flashInfo("voice off")
		}
		return nil
	}
	return nextVoice(msg.desk)
}

// voiceError is a voice failure for the owner: hearth's refusal as is.
func voiceError(err error) string {
	var he *voicectl.HearthError
	if errors.As(err, &he) {
		return sanitize(he.Message)
	}
	return sanitize(err.Error())
}

// voicePartial shows an item's live text in the chat until hearth stores
// the turn (its ref is the item id).
func (m *Model) voicePartial(role, id, text, status string) {
	if m.voiceDone[id] {
		return
	}
	if m.voiceParts == nil {
		m.voiceParts = make(map[string]*item)
	}
	if status == "" {
		status = "hearing…"
		if role == voicectl.RoleAgent {
			status = "speaking…"
		}
	}
	it, ok := m.voiceParts[id]
	if !ok {
		r := ipc.RoleUser
		if role == voicectl.RoleAgent {
			r = ipc.RoleAgent
		}
		it = &item{key: m.chat.liveKey(), kind: kindVoice, turn: ipc.Turn{Role: r, Mode: ipc.ModeVoice, TS: m.now()}}
		m.voiceParts[id] = it
		m.chat.insert(it)
		m.chat.toBottom()
	}
	it.turn.Content = sanitize(text)
	it.status = status
	it.touch()
	m.chat.changed()
}

// voiceStored: hearth stored the turn of voice item id. Its live
// transcript goes, and what of it is still on its way (hearth answers
// faster than the desk's events reach the UI) is never shown.
func (m *Model) voiceStored(id string) {
	if it, ok := m.voiceParts[id]; ok {
		m.chat.remove(it)
		delete(m.voiceParts, id)
	}
	if m.voice != nil {
		if m.voiceDone == nil {
			m.voiceDone = make(map[string]bool)
		}
		m.voiceDone[id] = true
	}
}

func (m *Model) dropPartial(id string) {
	if it, ok := m.voiceParts[id]; ok {
		m.chat.remove(it)
		delete(m.voiceParts, id)
	}
}

func (m *Model) onVoiceLevel(msg voiceLevelMsg) tea.Cmd {
	v := m.voice
	if v == nil || v.desk != msg.desk {
		return nil
	}
	v.in, v.out = v.desk.Levels()
	v.echo = v.desk.Echo()
	v.manual, v.talking = v.desk.PushToTalk()
	return m.tick(voiceLevelEvery, msg)
}

// talk is the push-to-talk key.
func (m *Model) talk() {
	if m.voice == nil {
		m.flashInfo("voice is off: /voice starts it")
		return
	}
	m.voice.desk.Talk()
}

// voiceCommand runs /voice [devices|echo].
func (m *Model) voiceCommand(arg string) tea.Cmd {
	switch arg {
	case "":
		return m.toggleVoice()
	case "devices":
		if m.audio == nil {
			m.flashErr(NoAudioHint)
			m.chat.notice(levelWarn, NoAudioHint)
			return nil
		}
		a := m.audio
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			devs, err := a.Devices(ctx)
			return voiceDevicesMsg{devs, err}
		}
	case "echo", "headphones", "speakers":
		mode := audio.HalfDuplex
		switch {
		case arg == "headphones":
			mode = audio.FullDuplex
		case arg == "echo" && m.voiceEcho == audio.HalfDuplex:
			mode = audio.FullDuplex
		}
		m.voiceEcho = mode
		if m.voice != nil {
			m.voice.desk.SetEcho(mode)
			m.voice.echo = mode
		}
		m.flashInfo("voice echo mode: " + echoLabel(mode))
		return nil
	}
	m.flashErr("usage: /voice [devices | headphones | speakers]")
	return nil
}

func (m *Model) onVoiceDevices(msg voiceDevicesMsg) {
	if msg.err != nil {
		m.flashErr("audio devices: " + shortText(sanitize(msg.err.Error()), 80))
		return
	}
	if len(msg.devs) == 0 {
		m.chat.notice(levelWarn, "no audio devices: no sound card and no sound server")
		return
	}
	var b strings.Builder
	b.WriteString("audio devices:")
	for _, d := range msg.devs {
		var tags []string
		if d.Inputs > 0 {
			tags = append(tags, "in")
		}
		if d.Outputs > 0 {
			tags = append(tags, "out")
		}
		if d.DefaultInput {
			tags = append(tags, "default in")
		}
		if d.DefaultOutput {
			tags = append(tags, "default out")
		}
		name := sanitize(d.Name)
		if d.Host != "" {
			name += " (" + sanitize(d.Host) + ")"
		}
		fmt.Fprintf(&b, "\n  %s · %s", name, strings.Join(tags, ", "))
	}
	m.chat.notice(levelInfo, b.String())
}

func echoLabel(m audio.Mode) string {
	if m == audio.FullDuplex {
		return "headphones (full duplex)"
	}
	return "speakers (half duplex)"
}

// voiceLines is the voice panel above the editor: state, levels, echo
// mode and what the talk key does now.
func (m *Model) voiceLines() []string {
	v := m.voice
	if v == nil {
		return nil
	}
	st := m.st.statusText
	label := v.state.String()
	switch v.state {
	case voicectl.Connecting, voicectl.Reconnecting:
		st = m.st.statusWarn
		label += "…"
	case voicectl.Failed:
		st = m.st.statusErr
	case voicectl.Listening:
		st = m.st.statusOK
	case voicectl.UserSpeaking:
		st = m.st.voiceLabel
	case voicectl.AgentSpeaking:
		st = m.st.agentLabel
	case voicectl.Thinking:
		label = m.spinner() + " " + label
	}
	if v.stopped {
		label = "stopping…"
	}
	parts := []string{
		m.st.voiceLabel.Render("◉ voice") + " " + st.Render(label),
		m.st.dim.Render("mic ") + levelBar(v.in) + m.st.dim.Render(" spk ") + levelBar(v.out),
	}
	mode := "speakers"
	if v.echo == audio.FullDuplex {
		mode = "headphones"
	}
	parts = append(parts, m.st.dim.Render(mode))
	talk := m.keys.Talk.Help().Key
	switch {
	case v.manual && v.talking:
		parts = append(parts, m.st.key.Render(talk)+m.st.dim.Render(" send"))
	case v.manual:
		parts = append(parts, m.st.key.Render(talk)+m.st.dim.Render(" talk"))
	default:
		parts = append(parts, m.st.key.Render(talk)+m.st.dim.Render(" interrupt"))
	}
	parts = append(parts, m.st.key.Render(m.keys.Voice.Help().Key)+m.st.dim.Render(" stop"))
	// The hints go first when the window is narrow; the state never.
	sep := m.st.dim.Render(" · ")
	line := parts[0]
	for _, p := range parts[1:] {
		if ansi.StringWidth(line+sep+p) > m.w {
			break
		}
		line += sep + p
	}
	return []string{ansi.Truncate(line, m.w, "…")}
}

// levelBar draws an RMS level as five cells from -60 dBFS to 0.
func levelBar(l audio.Level) string {
	const cells = 5
	n := int(math.Round((l.RMS + 60) / 60 * cells))
	n = max(0, min(cells, n))
	return strings.Repeat("▮", n) + strings.Repeat("▯", cells-n)
}

// renderVoicePartial draws a voice item's live transcript: the user's like
// their stored voice turns, the agent's like its spoken replies.
func renderVoicePartial(rc *renderCtx, t *ipc.Turn, width int, status string) []string {
	if t.Role == ipc.RoleUser {
		return renderUser(rc, t, width, status)
	}
	lines := []string{rc.header(rc.st.agentLabel.Render("mnemo"), t, status)}
	for _, l := range plainLines(t.Content, width-2) {
		lines = append(lines, "  "+rc.st.voiceText.Render(l))
	}
	return lines
}
