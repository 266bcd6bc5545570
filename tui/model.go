package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// Config configures the UI model. Only Backend is required.
type Config struct {
	Backend Backend
	Addr    string // hearth's address, for messages
	Local   bool   // hearth is expected on this machine: say how to start it
	// Editor is the command that edits a proposed memory change;
	// default $VISUAL, $EDITOR, vi.
	Editor string

	// Markdown is the glamour standard style: "dark", "light", "notty"…
	// Never "auto": detect the background before the program starts.
	Markdown string
	Profile  termenv.Profile // colors of rendered Markdown

	FPS int // repaint rate while a reply streams; default 30

	// Now and Tick are the clock, injectable for tests. Tick returns a
	// command that delivers msg after d; default tea.Tick.
	Now      func() time.Time
	Tick     func(d time.Duration, msg tea.Msg) tea.Cmd
	Location *time.Location // for timestamps; default time.Local

	NewRef func() string // refs of requests; default random
	Log    *slog.Logger

	// Audio is the sound card for voice; nil in a build without audio,
	// where /voice says how to get it.
	Audio voicectl.Audio
	// VoiceEcho is the echo mode voice starts in: audio.HalfDuplex
	// (speakers, the default) or audio.FullDuplex (headphones).
	VoiceEcho audio.Mode
}

// How long transient status messages stay, and when they start to fade.
const (
	flashTTL    = 6 * time.Second
	flashFade   = 4 * time.Second
	resyncedTTL = 5 * time.Second
	resendDelay = time.Second

	maxCachedItems = 1000 // rendered items kept; see renderCache
)

// Model is the root Bubble Tea model of the terminal UI. Every message is
// routed by Update; View draws from the state and returns the last frame
// unchanged while nothing visible changed, so that the 2,000 token
// messages a second a fast model produces cost almost nothing: the
// streamed text reaches the screen on the next frame tick.
type Model struct {
	backend Backend
	addr    string
	local   bool
	now     func() time.Time
	tick    func(time.Duration, tea.Msg) tea.Cmd
	frameD  time.Duration
	newRef  func() string
	log     *slog.Logger

	st    *styles
	md    *markdown
	cache *renderCache
	keys  keyMap
	help  help.Model
	loc   *time.Location

	w, h int
	chat *chat
	in   *editor
	comp completion

	conn       connState
	outageNote *item // the notice about the current outage
	server     string
	// conversation is the one followed ("main" unless /new or /resume
	// moved it); switching is set while its History replaces the view.
	conversation string
	switching    bool
	provider     string
	modelName    string
	agent        string // idle, thinking, tool
	detail       string
	usage        *ipc.Usage

	stream   *item // the reply streaming now
	pending  []*pendingMsg
	confirms []*ipc.ConfirmRequest
	requests map[string]string // ref → what it asked ("search", "cancel")
	// features is what hearth said it offers (history.features); nil for
	// a hearth that does not say, whose support is then learnt from its
	// refusals (feature, featAt: the last request it may not know).
	features map[string]bool
	feature  string
	featAt   time.Time

	// Voice: the session this client runs (nil when off), the Link that
	// carries its requests to hearth, and the live transcripts shown
	// until hearth stores their turns (by item id, the transcript's ref).
	audio       voicectl.Audio
	voiceEcho   audio.Mode
	voice       *voiceUI
	voiceLink   *voicectl.Link
	voiceCancel context.CancelFunc
	quitting    bool // quit asked: waiting (voiceQuitWait at most) for voice to end
	voiceParts  map[string]*item
	voiceDone   map[string]bool // items stored before their live transcript arrived

	flash   flash
	stamps  bool
	panel   bool
	overlay overlayKind
	search  searchState
	review  reviewState
	editor  []string

	frameOn, secondOn bool
	shownLen          int    // streamed bytes on screen
	shownSpin         string // spinner frame on screen
	dirty             bool
	frame             string
	repaints          int
}

type connState struct {
	state    ipc.ConnState
	attempt  int
	retryAt  time.Time
	err      error
	ever     bool // connected at least once
	resynced time.Time
	outage   bool // a notice about this outage is shown
	fatal    string
}

type flash struct {
	text  string
	err   bool
	at    time.Time
	cause flashCause
}

// flashCause is what a status message is about, so that it goes when
// its cause ends instead of outliving it.
type flashCause uint8

const (
	causeNone   flashCause = iota
	causeCancel            // "cancelling the reply…": until the reply ends
	causeOutage            // hearth going away or dropping us: until we are back
)

type pendingMsg struct {
	ref     string
	content string
	it      *item
	sent    *ipc.Message // the attempt in flight; nil while queued
}

type overlayKind uint8

const (
	overlayNone overlayKind = iota
	overlayHelp
	overlaySearch
	overlayReview
)

type searchState struct {
	ref, query string
	waiting    bool
	err        string
	hits       []ipc.SearchHit
	sel        int
}

// Internal messages.
type (
	frameMsg  struct{}
	secondMsg struct{}
	resendMsg struct{}
)

// New returns the model.
func New(cfg Config) *Model {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick == nil {
		cfg.Tick = func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		}
	}
	if cfg.FPS <= 0 {
		cfg.FPS = 30
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.NewRef == nil {
		cfg.NewRef = newRef
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Markdown == "" {
		cfg.Markdown = "dark"
	}
	st := newStyles()
	h := help.New()
	h.Styles.ShortKey = st.key
	h.Styles.FullKey = st.key
	m := &Model{
		backend:  cfg.Backend,
		addr:     cfg.Addr,
		local:    cfg.Local,
		now:      cfg.Now,
		tick:     cfg.Tick,
		frameD:   time.Second / time.Duration(cfg.FPS),
		newRef:   cfg.NewRef,
		log:      cfg.Log,
		st:       st,
		md:       newMarkdown(cfg.Markdown, cfg.Profile, cfg.Log),
		cache:    &renderCache{max: maxCachedItems},
		keys:     newKeyMap(),
		help:     h,
		loc:      cfg.Location,
		chat:     newChat(),
		in:       newEditor(st),
		agent:    ipc.StateIdle,
		requests: make(map[string]string),
		dirty:    true,
		editor:   editorCommand(cfg.Editor, os.Getenv),
	}
	m.audio, m.voiceEcho = cfg.Audio, cfg.VoiceEcho
	m.conn.state = ipc.StateConnecting
	return m
}

// Init implements tea.Model. (No window title: bubbletea v1 writes it
// outside the renderer's lock, racing the first frame.)
func (m *Model) Init() tea.Cmd { return nil }

func (m *Model) ref() string { return m.newRef() }

// Update implements tea.Model: every message is routed here.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case *ipc.Token:
		// The hot path: no repaint here, the next frame shows it.
		if m.stream == nil {
			m.startStream("")
			m.dirty = true
		}
		m.stream.doc.append(sanitize(msg.Content))
		return m, m.schedule()
	case frameMsg:
		m.frameOn = false
		if m.stream != nil && m.stream.doc.Len() != m.shownLen {
			m.chat.changed()
			m.dirty = true
		}
		if m.spinner() != m.shownSpin && m.animating() {
			m.dirty = true
		}
		return m, m.schedule()
	}

	m.dirty = true
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
	case tea.KeyMsg:
		cmd = m.onKey(msg)
	case tea.MouseMsg:
		m.onMouse(msg)
	case voiceEventMsg:
		cmd = m.onVoiceEvent(msg)
	case voiceQuitMsg:
		cmd = tea.Quit
	case voiceLevelMsg:
		cmd = m.onVoiceLevel(msg)
	case voiceDevicesMsg:
		m.onVoiceDevices(msg)
	case *ipc.StateChange:
		m.onState(msg)
	case *ipc.TurnStored:
		m.onTurn(msg)
	case *ipc.Done:
		m.onDone(msg)
	case *ipc.Status:
		m.onStatus(msg)
	case *ipc.ToolCall:
		m.onToolCall(msg)
	case *ipc.ToolResult:
		m.onToolResult(msg)
	case *ipc.ConfirmRequest:
		m.onConfirmRequest(msg)
	case *ipc.SearchResults:
		if msg.Ref == m.search.ref && m.search.ref != "" {
			delete(m.requests, msg.Ref)
			m.search.waiting, m.search.hits, m.search.sel = false, msg.Results, 0
		}
	case *ipc.Error:
		if m.voiceLink != nil && m.voiceLink.Deliver(msg) {
			m.log.Info("voice request refused", "code", msg.Code)
			break
		}
		m.onError(msg)
	case *ipc.Forgotten:
		m.onForgotten(msg)
	case *ipc.Proposal, *ipc.ProposalList, *ipc.ProposalDecided, reviewEditedMsg:
		cmd = m.onReviewMsg(msg)
	case *ipc.Pong:
	case *ipc.History:
		m.onSwitched(msg)
	case *ipc.ConversationList:
		m.onConversationList(msg)
	case *ipc.PairCode:
		m.onPairCode(msg)
	case *ipc.VoiceCredential, *ipc.VoiceToolResult:
		// The credential and tool results are the voice session's, if one
		// is still waiting; never kept or shown.
		if im := msg.(ipc.Msg); m.voiceLink == nil || !m.voiceLink.Deliver(im) {
			m.log.Info("voice answer with no session waiting", "type", im.Type())
		}
	case SendFailedMsg:
		if m.voiceLink != nil && m.voiceLink.Failed(msg.Msg, msg.Err) {
			break
		}
		cmd = m.onSendFailed(msg)
	case FatalMsg:
		m.conn.fatal = shortError(msg.Err)
		var herr *ipc.Error
		if errors.As(msg.Err, &herr) {
			m.chat.notice(levelErr, "hearth refused this client: "+m.conn.fatal)
		} else {
			m.chat.notice(levelErr, "cannot connect to hearth: "+m.conn.fatal)
		}
	case secondMsg:
		m.secondOn = false
		m.expireConfirms()
	case resendMsg:
		if m.conn.state == ipc.StateConnected {
			for _, p := range m.pending {
				if p.sent == nil {
					m.transmit(p)
				}
			}
		}
	default:
		// Messages of the editor's own (cursor, paste from clipboard).
		cmd = m.in.update(msg)
		m.comp.refresh(m.in.value())
	}
	return m, tea.Batch(cmd, m.schedule())
}

// animating reports whether something on screen moves by itself.
func (m *Model) animating() bool {
	if m.stream != nil || m.busy() || (m.overlay == overlaySearch && m.search.waiting) {
		return true
	}
	// A running tool is recent: look at the end of the chat only.
	items := m.chat.items
	for _, it := range items[max(len(items)-64, 0):] {
		if it.kind == kindTool && !it.tool.done {
			return true
		}
	}
	return false
}

// needSecond reports whether something on screen counts seconds.
func (m *Model) needSecond() bool {
	now := m.now()
	return (m.conn.state == ipc.StateReconnecting && m.conn.fatal == "") ||
		len(m.confirms) > 0 ||
		(m.flash.text != "" && now.Sub(m.flash.at) < flashTTL) ||
		(!m.conn.resynced.IsZero() && now.Sub(m.conn.resynced) < resyncedTTL)
}

// schedule starts the frame and second tickers when something needs
// them. Each runs only while needed, so an idle UI does no work.
func (m *Model) schedule() tea.Cmd {
	var cmds []tea.Cmd
	if !m.frameOn && (m.animating() || (m.stream != nil && m.stream.doc.Len() != m.shownLen)) {
		m.frameOn = true
		cmds = append(cmds, m.tick(m.frameD, frameMsg{}))
	}
	if !m.secondOn && m.needSecond() {
		m.secondOn = true
		cmds = append(cmds, m.tick(time.Second, secondMsg{}))
	}
	return tea.Batch(cmds...)
}

func (m *Model) busy() bool {
	return m.stream != nil || (m.agent != "" && m.agent != ipc.StateIdle)
}

func (m *Model) resize(w, h int) {
	m.w, m.h = w, h
	m.in.setWidth(w)
	m.help.Width = w
}

// layout is where things go in a window of m.w × m.h.
type layout struct {
	chatW, chatH int
	panelW       int
	help         bool
	popup        []string
}

func (m *Model) layout() layout {
	l := layout{chatW: m.w, help: m.h >= 14}
	if m.panel && m.w >= 80 {
		l.panelW = min(44, m.w/3)
		l.chatW = m.w - l.panelW - 1
	}
	l.popup = m.popupLines()
	below := 1 + m.in.height() + 1 + len(l.popup) + len(m.voiceLines()) // rule, editor, status
	if len(m.in.pastes) > 0 {
		below++
	}
	if l.help {
		below++
	}
	l.chatH = max(m.h-below, 0)
	return l
}

func (m *Model) renderCtx() *renderCtx {
	return &renderCtx{
		st: m.st, md: m.md, cache: m.cache, loc: m.loc, stamps: m.stamps, now: m.now(),
		spin: m.spinner(), state: m.agent, detail: sanitize(m.detail),
	}
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (m *Model) spinner() string {
	return spinFrames[int(m.now().UnixMilli()/100)%len(spinFrames)]
}

// Keys.

func (m *Model) onKey(k tea.KeyMsg) tea.Cmd {
	if key.Matches(k, m.keys.Quit) {
		return m.quit()
	}
	if m.overlay != overlayNone {
		if done, cmd := m.overlayKey(k); done {
			return cmd
		}
	}
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste && !k.Alt {
		// A burst of typed text (fast typing, or a terminal that does not
		// bracket pastes). Its String() may spell a key's name ("left",
		// "up", "esc"), so it must never be matched against bindings.
		if len(m.confirms) > 0 {
			m.flashInfo("answer the confirmation first: y or n")
			return nil
		}
		m.in.insert(string(k.Runes))
		m.comp.refresh(m.in.value())
		return nil
	}
	if len(m.confirms) > 0 && !k.Paste {
		switch {
		case key.Matches(k, m.keys.Yes):
			m.answer(true)
			return nil
		case key.Matches(k, m.keys.No):
			m.answer(false)
			return nil
		case k.Type == tea.KeyRunes || k.Type == tea.KeySpace:
			m.flashInfo("answer the confirmation first: y or n")
			return nil
		}
	}
	if k.Paste {
		paste := string(k.Runes)
		if m.in.size()+len(paste) > ipc.MaxLineBytes-1024 {
			m.flashErr(fmt.Sprintf("paste too large: %s; a message holds up to about 1 MiB", byteSize(len(paste))))
			return nil
		}
		if largePaste(paste) {
			m.in.attach(paste)
			return nil
		}
	}
	if k.Type == tea.KeyBackspace && m.in.value() == "" && m.in.detach() {
		return nil
	}
	lw, lh := m.chatSize()
	rc := m.renderCtx()
	if m.comp.visible() && !k.Paste {
		switch k.String() {
		case "tab":
			m.complete()
			return nil
		case "down", "ctrl+n":
			m.comp.move(1)
			return nil
		case "up", "ctrl+p", "shift+tab":
			m.comp.move(-1)
			return nil
		case "esc":
			m.comp.dismissed = m.in.value()
			m.comp.refresh(m.in.value())
			return nil
		case "enter":
			c := m.comp.selected()
			if c.args != "" && m.in.value() != c.name {
				m.complete()
				return nil
			}
			m.in.set(c.name)
			return m.submit()
		}
	}
	switch {
	case key.Matches(k, m.keys.Send) && !k.Paste:
		return m.submit()
	case key.Matches(k, m.keys.Cancel):
		switch {
		case m.busy():
			m.cancelReply()
		case !m.chat.follow:
			m.chat.toBottom()
		}
		return nil
	case key.Matches(k, m.keys.PageUp):
		m.chat.scroll(rc, lw, lh, -max(lh-1, 1))
		return nil
	case key.Matches(k, m.keys.PageDown):
		m.chat.scroll(rc, lw, lh, max(lh-1, 1))
		return nil
	case key.Matches(k, m.keys.LineUp):
		m.chat.scroll(rc, lw, lh, -1)
		return nil
	case key.Matches(k, m.keys.LineDown):
		m.chat.scroll(rc, lw, lh, 1)
		return nil
	case key.Matches(k, m.keys.Top):
		m.chat.toTop(rc, lw, lh)
		return nil
	case key.Matches(k, m.keys.Bottom):
		m.chat.toBottom()
		return nil
	case key.Matches(k, m.keys.Review):
		m.openReview()
		return nil
	case key.Matches(k, m.keys.Tools):
		m.togglePanel()
		return nil
	case key.Matches(k, m.keys.Stamps):
		m.stamps = !m.stamps
		return nil
	case key.Matches(k, m.keys.Help):
		m.overlay = overlayHelp
		return nil
	case key.Matches(k, m.keys.Voice):
		return m.toggleVoice()
	case key.Matches(k, m.keys.Talk):
		m.talk()
		return nil
	case k.Type == tea.KeyUp && m.in.onFirstRow():
		if m.in.older() {
			m.comp.refresh(m.in.value())
			return nil
		}
	case k.Type == tea.KeyDown && m.in.onLastRow():
		if m.in.newer() {
			m.comp.refresh(m.in.value())
			return nil
		}
	}
	cmd := m.in.update(k)
	m.comp.refresh(m.in.value())
	return cmd
}

// overlayKey handles a key while help or search results are shown; done
// means the key was used up.
func (m *Model) overlayKey(k tea.KeyMsg) (done bool, cmd tea.Cmd) {
	if m.overlay == overlayReview {
		return m.reviewKey(k)
	}
	if m.overlay == overlaySearch {
		switch k.String() {
		case "up", "ctrl+p":
			if m.search.sel > 0 {
				m.search.sel--
			}
			return true, nil
		case "down", "ctrl+n":
			if m.search.sel < len(m.search.hits)-1 {
				m.search.sel++
			}
			return true, nil
		case "enter":
			if m.search.sel < len(m.search.hits) {
				hit := m.search.hits[m.search.sel]
				lw, lh := m.chatSize()
				if m.chat.jumpTo(m.renderCtx(), lw, lh, itemKey{hit.Turn.ID, 0}) {
					m.overlay = overlayNone
				} else {
					m.flashInfo("that turn is older than the history this client holds")
				}
			}
			return true, nil
		}
	}
	if k.String() == "esc" || key.Matches(k, m.keys.Help) {
		m.overlay = overlayNone
		return true, nil
	}
	// Anything else closes the overlay and does what it does.
	m.overlay = overlayNone
	return false, nil
}

func (m *Model) onMouse(e tea.MouseMsg) {
	if e.Action != tea.MouseActionPress {
		return
	}
	lw, lh := m.chatSize()
	switch e.Button {
	case tea.MouseButtonWheelUp:
		m.chat.scroll(m.renderCtx(), lw, lh, -3)
	case tea.MouseButtonWheelDown:
		m.chat.scroll(m.renderCtx(), lw, lh, 3)
	}
}

func (m *Model) chatSize() (int, int) {
	l := m.layout()
	return l.chatW, l.chatH
}

func (m *Model) togglePanel() {
	if !m.panel && m.w < 80 {
		m.flashInfo("the tool panel needs a window 80 columns wide")
		return
	}
	m.panel = !m.panel
}

// submit sends the editor's text, or runs it as a /command.
func (m *Model) submit() tea.Cmd {
	typed, text := m.in.value(), m.in.content()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if b, _ := json.Marshal(&ipc.Message{Content: text, Ref: "0123456789ab"}); len(b) > ipc.MaxLineBytes-64 {
		m.flashErr(fmt.Sprintf("message too long: %s; a message holds up to about 1 MiB", byteSize(len(text))))
		return nil
	}
	m.in.remember(typed)
	m.in.reset()
	m.comp.refresh("")
	if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") {
		return m.runCommand(text)
	}
	text = strings.TrimPrefix(text, "/") // "//x" sends "/x"
	p := &pendingMsg{ref: m.ref(), content: text}
	p.it = &item{key: m.chat.liveKey(), kind: kindPending, turn: ipc.Turn{Role: ipc.RoleUser, Content: sanitize(text), Mode: ipc.ModeText, TS: m.now()}}
	m.pending = append(m.pending, p)
	m.chat.insert(p.it)
	if m.conn.state == ipc.StateConnected {
		m.transmit(p)
	} else {
		p.it.status = "queued · sent when hearth is back"
	}
	m.chat.toBottom()
	return nil
}

func (m *Model) transmit(p *pendingMsg) {
	p.sent = &ipc.Message{Content: p.content, Ref: p.ref}
	p.it.status = "sending…"
	p.it.touch()
	m.backend.Send(p.sent)
}

func (m *Model) cancelReply() {
	if !m.supports("cancel") {
		m.flashErr(unsupported("cancel"))
		return
	}
	ref := m.ref()
	m.requests[ref] = "cancel"
	m.noteFeature("cancel")
	m.backend.Send(&ipc.Cancel{Ref: ref})
	m.flashInfo("cancelling the reply…")
	m.flash.cause = causeCancel
}

func (m *Model) noteFeature(f string) {
	m.feature, m.featAt = f, m.now()
}

// supports reports whether hearth offers feature f; a hearth that lists
// no features is given the benefit of the doubt.
func (m *Model) supports(f string) bool {
	return m.features == nil || m.features[f]
}

func unsupported(f string) string {
	return fmt.Sprintf("this hearth does not support %s yet", featureLabels[f])
}

// Confirmations.

func (m *Model) onConfirmRequest(r *ipc.ConfirmRequest) {
	if slices.ContainsFunc(m.confirms, func(c *ipc.ConfirmRequest) bool { return c.ID == r.ID }) {
		return
	}
	m.confirms = append(m.confirms, r)
	it, ok := m.chat.byCall[r.ID]
	if !ok {
		m.onToolCall(&ipc.ToolCall{ID: r.ID, Name: r.Name, Arguments: r.Arguments, Reason: r.Reason})
		it = m.chat.byCall[r.ID]
	}
	it.tool.awaiting = true
	it.touch()
	m.chat.changed()
}

func (m *Model) answer(approve bool) {
	r := m.confirms[0]
	m.confirms = m.confirms[1:]
	m.noteFeature("confirm")
	m.backend.Send(&ipc.Confirm{ID: r.ID, Approve: approve})
	if it, ok := m.chat.byCall[r.ID]; ok {
		it.tool.awaiting = false
		it.touch()
	}
	verb := "denied"
	if approve {
		verb = "allowed"
	}
	m.chat.notice(levelInfo, fmt.Sprintf("%s %s", verb, sanitize(r.Name)))
}

func (m *Model) expireConfirms() {
	now := m.now()
	kept := m.confirms[:0]
	for _, r := range m.confirms {
		if !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
			if it, ok := m.chat.byCall[r.ID]; ok {
				it.tool.awaiting = false
				it.touch()
			}
			m.chat.notice(levelWarn, fmt.Sprintf("no answer for %s in time: denied", sanitize(r.Name)))
			continue
		}
		kept = append(kept, r)
	}
	m.confirms = kept
}

// Events from hearth.

func (m *Model) onState(s *ipc.StateChange) {
	now := m.now()
	switch s.State {
	case ipc.StateConnecting:
		m.conn.state = ipc.StateConnecting
	case ipc.StateReconnecting:
		m.conn.state = ipc.StateReconnecting
		m.conn.attempt, m.conn.err = s.Attempt, s.Err
		m.conn.retryAt = now.Add(s.Retry)
		m.conn.resynced = time.Time{}
		// One notice per outage, kept up to date: "lost the connection"
		// becomes "hearth is not running: start it with …" once dials
		// are refused.
		text := m.describeOutage(s.Err)
		switch {
		case !m.conn.outage:
			m.conn.outage = true
			m.log.Warn("hearth unreachable", "addr", m.addr, "attempt", s.Attempt, "err", s.Err)
			m.outageNote = m.chat.notice(levelWarn, text)
		case m.outageNote != nil && m.outageNote.text != text:
			m.outageNote.text = text
			m.outageNote.touch()
			m.chat.changed()
		}
	case ipc.StateConnected:
		m.onConnected(s.History)
	}
}

// describeOutage says, briefly, why hearth cannot be reached and what to
// do about it. Details are in the log.
func (m *Model) describeOutage(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, ipc.ErrNoToken):
		return "hearth has not run on this machine yet (no auth token): start it with `hearth` or `make run` · waiting for it"
	case errors.Is(err, syscall.ECONNREFUSED) && m.local:
		return fmt.Sprintf("hearth is not running on %s: start it with `hearth` or `make run` · retrying", m.addr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing answers at %s · retrying", m.addr)
	case m.conn.ever:
		return "lost the connection to hearth · reconnecting"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("hearth at %s does not answer · retrying", m.addr)
	}
	return fmt.Sprintf("cannot reach hearth at %s · retrying", m.addr)
}

func (m *Model) onConnected(h *ipc.History) {
	if h == nil {
		h = &ipc.History{}
	}
	first := !m.conn.ever
	if first && m.conn.outage {
		defer m.chat.notice(levelInfo, "hearth is up · connected")
	}
	m.conn = connState{state: ipc.StateConnected, ever: true}
	m.outageNote = nil
	// Whatever was said about the old connection or its reply is over.
	m.clearFlash(causeOutage)
	m.clearFlash(causeCancel)
	m.server = h.Server
	m.features = nil
	if h.Features != nil {
		m.features = make(map[string]bool, len(h.Features))
		for _, f := range h.Features {
			m.features[f] = true
		}
	}
	if h.Provider != "" || h.Model != "" || first {
		m.provider, m.modelName = h.Provider, h.Model
	}
	known := make(map[string]bool, len(m.chat.byID))
	for id := range m.chat.byID {
		known[id] = true
	}
	oldLast := m.chat.lastID
	added, gone := m.chat.replace(h.Turns)
	m.conversation = h.ConversationID
	if !first && !m.switching && len(h.Turns) > 0 && oldLast != "" && h.Turns[0].ID > oldLast {
		m.chat.notice(levelWarn, "turns from while this client was away may be missing above")
	}

	// The reply in flight: replace it from the snapshot.
	m.endStream()
	m.agent, m.detail = orDefault(h.State, ipc.StateIdle), h.Detail
	if h.Pending != "" || m.agent != ipc.StateIdle {
		m.startStream(h.Pending)
	}
	if m.agent == ipc.StateIdle {
		for _, it := range m.chat.tools(64) {
			if !it.tool.done {
				it.tool.done, it.tool.err = true, "interrupted"
				it.touch()
			}
		}
	}

	// Our messages: one sent but not acknowledged is either in the
	// snapshot (stored: drop the copy) or not (never stored: send again).
	claimed := make(map[string]bool)
	kept := m.pending[:0]
	for _, p := range m.pending {
		if p.sent != nil {
			if i := slices.IndexFunc(h.Turns, func(t ipc.Turn) bool {
				return t.Role == ipc.RoleUser && !known[t.ID] && !claimed[t.ID] && sameText(t, p.it.turn.Content)
			}); i >= 0 {
				claimed[h.Turns[i].ID] = true
				m.chat.remove(p.it)
				continue
			}
		}
		kept = append(kept, p)
	}
	m.pending = kept
	m.reviewConnected()
	for _, p := range m.pending {
		m.transmit(p)
	}
	if m.voiceLink != nil {
		m.voiceLink.Resend() // voice transcripts that did not reach hearth
	}

	if !first {
		m.conn.resynced = m.now()
		text := "reconnected · resynced"
		switch added {
		case 0:
		case 1:
			text += " · 1 new turn"
		default:
			text += fmt.Sprintf(" · %d new turns", added)
		}
		switch gone {
		case 0:
		case 1:
			text += " · 1 turn no longer on hearth"
		default:
			text += fmt.Sprintf(" · %d turns no longer on hearth", gone)
		}
		m.chat.notice(levelInfo, text)
	}
}

// sameText reports whether stored turn t holds text (hearth cuts a long
// turn to fit a line and marks it truncated).
func sameText(t ipc.Turn, text string) bool {
	c := sanitize(t.Content)
	return c == text || (t.Truncated && strings.HasPrefix(text, c))
}

func (m *Model) onTurn(s *ipc.TurnStored) {
	if s.Turn.Role == ipc.RoleUser {
		m.clearFlash(causeCancel) // a new turn: the cancelled reply is long over
	}
	if s.Ref != "" && s.Turn.Mode == ipc.ModeVoice {
		m.voiceStored(s.Ref) // voice.go: the stored turn replaces its live transcript
	}
	if s.Ref != "" {
		if i := slices.IndexFunc(m.pending, func(p *pendingMsg) bool { return p.ref == s.Ref }); i >= 0 {
			m.chat.remove(m.pending[i].it)
			m.pending = slices.Delete(m.pending, i, i+1)
		}
	}
	if s.Turn.Role == ipc.RoleAgent {
		// An agent step (text beside tool calls) is stored before its
		// tools run: it replaces what streamed, and the next tokens start
		// a new stream.
		m.endStream()
	}
	m.chat.upsert(s.Turn)
}

func (m *Model) startStream(text string) {
	m.stream = &item{key: itemKey{liveID, 0}, kind: kindStream, turn: ipc.Turn{Role: ipc.RoleAgent, Mode: ipc.ModeText, TS: m.now()}, doc: newDoc(sanitize(text))}
	m.shownLen = -1
	m.chat.insert(m.stream)
}

func (m *Model) endStream() {
	if m.stream != nil {
		m.chat.remove(m.stream)
		m.stream = nil
	}
}

func (m *Model) onDone(d *ipc.Done) {
	m.endStream()
	m.clearFlash(causeCancel)
	m.chat.upsert(d.Turn)
	if d.Usage != nil {
		m.usage = d.Usage
	}
	if d.Model != "" {
		m.modelName = d.Model
	}
}

func (m *Model) onStatus(s *ipc.Status) {
	m.agent, m.detail = s.State, s.Detail
	switch s.State {
	case ipc.StateIdle:
		m.clearFlash(causeCancel)
		if m.stream != nil {
			// The reply ended without a done (an error cut it): keep what
			// streamed, marked.
			text := m.stream.doc.String()
			m.endStream()
			if strings.TrimSpace(text) != "" {
				m.chat.insert(&item{key: m.chat.localKey(), kind: kindTurn, turn: ipc.Turn{Role: ipc.RoleAgent, Content: text, Mode: ipc.ModeText, Incomplete: true, TS: m.now()}})
			}
		}
	default:
		if m.stream == nil {
			m.startStream("")
		}
	}
}

func (m *Model) onToolCall(c *ipc.ToolCall) {
	card := &toolCard{id: c.ID, name: sanitize(c.Name), args: shortArgs(c.Arguments), reason: sanitize(c.Reason), started: m.now()}
	if card.name == "" {
		card.name = "tool"
	}
	if it, ok := m.chat.byCall[c.ID]; ok {
		card.awaiting = it.tool.awaiting
		it.tool = card
		it.touch()
		m.chat.changed()
		return
	}
	m.chat.insert(&item{key: m.chat.localKey(), kind: kindTool, tool: card})
}

func (m *Model) onToolResult(r *ipc.ToolResult) {
	it, ok := m.chat.byCall[r.ID]
	if !ok {
		m.onToolCall(&ipc.ToolCall{ID: r.ID, Name: r.Name, Arguments: r.Arguments, Reason: r.Reason})
		it = m.chat.byCall[r.ID]
	}
	c := it.tool
	c.done, c.awaiting = true, false
	c.result, c.err = sanitize(r.Result), sanitize(r.Error)
	c.duration = msDuration(r.DurationMS)
	c.confirmed = r.Confirmed
	m.confirms = slices.DeleteFunc(m.confirms, func(q *ipc.ConfirmRequest) bool { return q.ID == r.ID })
	it.touch()
	m.chat.changed()
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

var featureLabels = map[string]string{"conversations": "conversations", "search": "/search", "cancel": "cancel", "confirm": "confirmations", "vault": "memory review", "pair": "/pair"}

// onPairCode shows a pairing code with what to type on the new device.
func (m *Model) onPairCode(pc *ipc.PairCode) {
	if _, ok := m.requests[pc.Ref]; !ok {
		return // another client's
	}
	delete(m.requests, pc.Ref)
	text := fmt.Sprintf("pairing code %s for a new %s device, single use until %s · on it: mnemo pair ADDR %s --name NAME",
		pc.Code, pc.Actor, pc.Expires.In(m.loc).Format("15:04"), pc.Code)
	if pc.Fingerprint != "" {
		text += " (ADDR as tls://HOST:PORT) · hearth's certificate: " + pc.Fingerprint + " — the new device must show the same"
	}
	m.chat.notice(levelInfo, text)
}

func (m *Model) onError(e *ipc.Error) {
	m.log.Warn("hearth error", "code", e.Code, "message", e.Message, "ref", e.Ref)
	feature := m.requests[e.Ref]
	delete(m.requests, e.Ref)
	m.reviewError(e)
	if e.Ref != "" {
		if i := slices.IndexFunc(m.pending, func(p *pendingMsg) bool { return p.ref == e.Ref }); i >= 0 {
			// hearth did not store the message.
			p := m.pending[i]
			m.pending = slices.Delete(m.pending, i, i+1)
			p.it.status = "not delivered: " + shortText(e.Message, 60) + " · ↑ to edit"
			p.it.touch()
			m.chat.changed()
			m.flashErr(shortText(e.Message, 80))
			return
		}
	}
	// A hearth that lists its features is taken at its word: its errors
	// are errors. One that does not may not know a request it refuses.
	refused := m.features == nil && (e.Code == ipc.CodeUnknownType || e.Code == ipc.CodeBadRequest)
	if refused && feature == "" && m.feature != "" && m.now().Sub(m.featAt) < 10*time.Second {
		feature = m.feature
	}
	if refused && feature != "" {
		m.feature = ""
		text := unsupported(feature)
		m.flashErr(text)
		if feature == "search" {
			m.search.waiting, m.search.err = false, text
		}
		return
	}
	if feature == "search" {
		m.search.waiting, m.search.err = false, e.Message
	}
	switch e.Code {
	case ipc.CodeCancelled:
		m.clearFlash(causeCancel)
		m.chat.notice(levelInfo, "reply cancelled")
		return
	case ipc.CodeShuttingDown:
		m.flashErr("hearth is shutting down")
		m.flash.cause = causeOutage
		return
	case ipc.CodeSlowClient:
		m.flashErr("hearth dropped this client for falling behind · resyncing")
		m.flash.cause = causeOutage
		return
	case ipc.CodeNoProvider, ipc.CodeProviderError, ipc.CodeInternal, ipc.CodeUnavailable,
		ipc.CodeToolError, ipc.CodeContextOverflow:
		m.chat.notice(levelErr, sanitize(e.Message))
	}
	m.flashErr(shortText(sanitize(e.Message), 80))
}

func (m *Model) onSendFailed(f SendFailedMsg) tea.Cmd {
	switch msg := f.Msg.(type) {
	case *ipc.Message:
		for _, p := range m.pending {
			if p.sent == msg {
				p.sent = nil
				p.it.status = "queued · sent when hearth is back"
				p.it.touch()
				m.chat.changed()
				if m.conn.state == ipc.StateConnected {
					// The connection broke under the send; the reconnect
					// resends it, or, if the state already moved on, this
					// does.
					return m.tick(resendDelay, resendMsg{})
				}
			}
		}
	case *ipc.Search:
		m.search.waiting, m.search.err = false, "not connected to hearth"
		m.flashErr("search not sent: not connected to hearth")
	case *ipc.Cancel:
		m.flashErr("cancel not sent: not connected to hearth")
	case *ipc.Confirm:
		m.flashErr("answer not sent: not connected to hearth")
	case *ipc.Proposals, *ipc.ProposalDecide:
		m.reviewSendFailed(msg)
	}
	return nil
}

// Status line messages.

func (m *Model) flashErr(s string)  { m.flash = flash{text: s, err: true, at: m.now()} }
func (m *Model) flashInfo(s string) { m.flash = flash{text: s, at: m.now()} }

// clearFlash takes the status message down if it is about cause.
func (m *Model) clearFlash(cause flashCause) {
	if m.flash.cause == cause && cause != causeNone {
		m.flash = flash{}
	}
}

func shortError(err error) string {
	var herr *ipc.Error
	if errors.As(err, &herr) {
		return shortText(sanitize(herr.Message), 100)
	}
	if err == nil {
		return ""
	}
	return shortText(sanitize(err.Error()), 100)
}

func shortText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
