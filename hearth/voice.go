package hearth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall/indexer"
)

// VoiceMinter mints ephemeral realtime voice credentials with the voice
// provider's API key, which never leaves it. hearth/voicekey implements
// it. The credential it returns has everything but Instructions and
// Tools, which the core adds; its error is safe to show (it says what
// failed and what to do, never a key, a body or a URL with secrets).
type VoiceMinter interface {
	MintVoice(ctx context.Context) (VoiceCredential, error)
}

// VoiceCredential is what a client needs to open a realtime voice
// session itself: an ephemeral credential and the session settings to
// send in its session.update.
type VoiceCredential struct {
	Value     string // the ephemeral client secret, never the API key
	ExpiresAt time.Time
	URL       string // the realtime WebSocket URL, model included
	Model     string
	Dialect   string // the provider's realtime dialect: "xai" or "openai"
	Voice     string
	// Instructions are the session's instructions: AGENT.md and the
	// continuity anchor, relevant memories and the text→voice injection.
	Instructions  string
	VAD           VoiceVAD
	Transcription string // the input transcription model
	Tools         []VoiceTool
}

// VoiceVAD is the session's turn detection.
type VoiceVAD struct {
	Type          string // "server_vad", or "manual" (the client commits turns)
	Threshold     float64
	Silence       time.Duration
	PrefixPadding time.Duration
}

// VoiceTool is a function the voice session is offered.
type VoiceTool struct {
	Name, Description string
	Parameters        json.RawMessage // JSON Schema
}

// CodeNoVoiceProvider: no realtime voice provider is configured.
const CodeNoVoiceProvider = "no_voice_provider"

// msgNoVoiceProvider says what to set; the core knows no more of the
// configuration than this.
const msgNoVoiceProvider = `realtime voice is not configured: set XAI_API_KEY (or voice.provider = "openai" with OPENAI_API_KEY) and restart hearth`

// Modes of the conversation, between which injection bridges.
const (
	modeText  = memory.ModeText
	modeVoice = memory.ModeVoice
)

// Injection limits: seed 004's cap of three turns by recency, and a bound
// on each bullet so that one long turn cannot crowd the instructions.
const (
	injectTurns     = 3
	injectTurnBytes = 600
)

// InjectSentinel marks injected text (seed 004's sentinel): turns that
// hold it are never harvested into an injection, and recall never indexes
// it.
const InjectSentinel = indexer.InjectedSentinel

// modeState is the conversation's modality, kept in memory (seed 004
// persists none of it; after a restart it is derived from the journal).
// Guarded by Hearth.mu.
type modeState struct {
	mode       string    // modeText or modeVoice
	switchedAt time.Time // last_mode_switch_ts
	injectedAt time.Time // last_injection_ts
	// pending is injection_pending: set by StopVoice, consumed by the
	// next text turn. block is its snippet, harvested once every
	// transcript that came before the stop is stored.
	pending bool
	block   string
}

// modeMark, queued by StopVoice behind the transcripts that came before
// it, primes the voice→text injection with them.
type modeMark struct {
	since, at time.Time
}

// initialMode derives the mode from the journal's newest turns: the mode
// of the newest user or agent turn, switched when its run began.
func initialMode(recent []journal.Record) modeState {
	st := modeState{mode: modeText}
	first := true
	for i := len(recent) - 1; i >= 0; i-- {
		r := recent[i]
		if r.Role != memory.RoleUser && r.Role != memory.RoleAgent {
			continue
		}
		m := r.Mode
		if m != modeVoice {
			m = modeText
		}
		if first {
			st.mode, first = m, false
		} else if m != st.mode {
			break
		}
		st.switchedAt = r.TS
	}
	return st
}

// RequestVoice mints a fresh realtime credential (each request mints
// anew, so a client may retry) with the session's instructions: AGENT.md
// and the continuity anchor, memories relevant to the last turns, and,
// at a switch from text, the text→voice injection. A reconnect without a
// mode change injects nothing again. The session talks in main.
func (h *Hearth) RequestVoice(ctx context.Context) (VoiceCredential, error) {
	return h.RequestVoiceIn(ctx, MainConversation)
}

// RequestVoiceIn is RequestVoice for a session talking in conversation
// conv ("": main): its turns and the injection are that conversation's.
// An unknown conversation is a *Problem with CodeConversationNotFound.
func (h *Hearth) RequestVoiceIn(ctx context.Context, conv string) (VoiceCredential, error) {
	if h.cfg.Voice == nil {
		return VoiceCredential{}, &Problem{Code: CodeNoVoiceProvider, Message: msgNoVoiceProvider}
	}
	c, err := h.open(conv)
	if err != nil {
		return VoiceCredential{}, err
	}
	cred, err := h.cfg.Voice.MintVoice(ctx)
	if err != nil {
		h.log.Warn("voice credential not minted", "err", err)
		return VoiceCredential{}, &Problem{Code: CodeProviderError, Message: err.Error()}
	}
	var parts []string
	for _, m := range h.sessionContext() {
		if strings.TrimSpace(m.Content) != "" {
			parts = append(parts, m.Content)
		}
	}
	if block := h.voiceMemories(ctx, c); block != "" {
		parts = append(parts, block)
	}
	if inj := h.switchToVoice(c, time.Now()); inj != "" {
		parts = append(parts, inj)
	}
	cred.Instructions = strings.Join(parts, "\n\n")
	cred.Tools = h.voiceTools(ctx)
	return cred, nil
}

// switchToVoice records a voice connect in c and returns the text→voice
// injection it calls for, "" when none (a reconnect that changes no mode).
func (h *Hearth) switchToVoice(c *conversation, now time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &c.voice
	by := ""
	switch {
	case st.mode != modeVoice:
		by = "user"
		since := st.switchedAt
		st.mode, st.switchedAt = modeVoice, now
		st.pending, st.block = false, "" // a voice→text injection not yet used is moot now
		st.injectedAt = now
		return injection("text→voice", by, now, since, c.recent)
	case st.injectedAt.Before(st.switchedAt):
		// Already in voice, but nothing injected since the switch: a
		// client reconnecting to a hearth that restarted mid-session.
		st.injectedAt = now
		return injection("text→voice", "reconnect", now, st.switchedAt, c.recent)
	}
	return ""
}

// StopVoice says a voice session ended: the conversation is back in text,
// and the next text turn gets the voice→text injection (injection_pending
// is set now, so a message typed at once still gets it). A stop without a
// voice session changes nothing. The session talked in main.
func (h *Hearth) StopVoice() { h.StopVoiceIn(MainConversation) }

// StopVoiceIn is StopVoice for a session that talked in conversation conv
// ("": main).
func (h *Hearth) StopVoiceIn(conv string) {
	c, err := h.open(conv) // unloaded, its mode comes from its journal
	if err != nil {
		return // an unknown conversation had no voice session
	}
	now := time.Now()
	h.mu.Lock()
	if c.voice.mode != modeVoice {
		h.mu.Unlock()
		return
	}
	st := &c.voice
	mark := &modeMark{since: st.switchedAt, at: now}
	st.mode, st.switchedAt = modeText, now
	st.pending, st.block = true, ""
	h.mu.Unlock()
	// Queued behind the transcripts sent before the stop, the mark
	// harvests them; a message typed after comes after it.
	if err := h.enqueue(c, turnReq{mark: mark}); err != nil {
		h.prime(c, mark) // a full or closed queue: harvest what is stored
	}
}

// prime harvests the voice→text injection of the mode switch m, if it is
// still the pending one.
func (h *Hearth) prime(c *conversation, m *modeMark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &c.voice
	if !st.pending || !st.switchedAt.Equal(m.at) {
		return
	}
	st.block = injection("voice→text", "user", m.at, m.since, c.recent)
}

// takeInjection returns the pending voice→text injection for the text
// turn starting now, and clears it; "" when none is pending.
func (h *Hearth) takeInjection(c *conversation, now time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &c.voice
	if !st.pending {
		return ""
	}
	block := st.block
	if block == "" { // not harvested yet: cannot happen through the queue, but be sure
		block = injection("voice→text", "user", st.switchedAt, time.Time{}, nil)
	}
	st.pending, st.block, st.injectedAt = false, "", now
	return block
}

// injection formats seed 004's injection message: the mode block, the
// turns since the last mode switch as bullets (at most three, newest
// last), and the memory-search hint, marked with the sentinel.
func injection(direction, by string, at, since time.Time, recent []journal.Record) string {
	var turns []journal.Record
	for i := len(recent) - 1; i >= 0 && len(turns) < injectTurns; i-- {
		r := recent[i]
		if r.TS.Before(since) {
			break
		}
		if (r.Role != memory.RoleUser && r.Role != memory.RoleAgent) || strings.TrimSpace(r.Text) == "" || strings.Contains(r.Text, InjectSentinel) {
			continue
		}
		turns = append(turns, r)
	}
	slices.Reverse(turns)
	var b strings.Builder
	b.WriteString(InjectSentinel + "\n")
	fmt.Fprintf(&b, "[mode: %s, by: %s, at: %s]\n", direction, by, stamp(at))
	if since.IsZero() {
		b.WriteString("Recent turns:\n\n")
	} else {
		fmt.Fprintf(&b, "Recent turns since %s:\n\n", stamp(since))
	}
	if len(turns) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, r := range turns {
		who := "agent"
		if r.Role == memory.RoleUser {
			who = "you"
		}
		fmt.Fprintf(&b, "- %s: %s\n", who, bullet(r.Text))
	}
	b.WriteString("\nFor deeper context, search memory via the memory_search tool if helpful.")
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// bullet is a turn's text on one line, cut to injectTurnBytes.
func bullet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > injectTurnBytes {
		n := injectTurnBytes
		for n > 0 && !isRuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// voiceMemories is the block of older memories relevant to the last
// turns, as a text session opens with, with the whole allowance; "" when
// none.
func (h *Hearth) voiceMemories(ctx context.Context, c *conversation) string {
	return h.openingMemories(ctx, c, 1, map[string]bool{})
}

// voiceTools are the tools the voice session is offered: those a text
// turn offers (admin tools never), exactly the ones RunVoiceTool accepts.
func (h *Hearth) voiceTools(ctx context.Context) []VoiceTool {
	specs := agent.Offered(ctx, h.cfg.Tools, h.log)
	if len(specs) == 0 {
		return nil
	}
	out := make([]VoiceTool, 0, len(specs))
	for _, s := range specs {
		out = append(out, VoiceTool{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return out
}

// injectModeSwitch puts the voice→text injection just before the newest
// message (the owner's), in what the model sees, never in the journal.
func injectModeSwitch(msgs []llm.Message, block string) []llm.Message {
	if block == "" || len(msgs) == 0 {
		return msgs
	}
	last := len(msgs) - 1
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(out, msgs[:last]...)
	out = append(out, llm.Message{Role: llm.RoleSystem, Content: block})
	return append(out, msgs[last])
}
