package tui

import (
	"fmt"
	"strings"

	"github.com/mnemo/mnemo/ipc"
)

// The conversation commands (DESIGN.md "Conversations"): the client
// follows one conversation; /new and /resume move it, and the History
// that answers is the new view.

// conversationCommand runs /new, /conversations and /resume.
func (m *Model) conversationCommand(name, arg string) {
	if !m.supports("conversations") {
		m.flashErr(unsupported("conversations"))
		return
	}
	if m.voice != nil && name != "/conversations" {
		// The voice session talks in the conversation it started in; its
		// transcripts must not follow the client elsewhere.
		m.flashErr("voice is on in this conversation: /voice stops it, then switch")
		return
	}
	ref := m.ref()
	m.requests[ref] = "conversations"
	switch name {
	case "/new":
		m.backend.Send(&ipc.NewConversation{ConversationID: arg, Ref: ref})
		m.flashInfo("starting a new conversation…")
	case "/conversations":
		m.backend.Send(&ipc.Conversations{Ref: ref})
	default: // /resume, /switch
		if arg == "" {
			delete(m.requests, ref)
			m.flashErr("usage: /resume ID · /conversations lists them")
			return
		}
		m.backend.Send(&ipc.Resume{ConversationID: arg, Ref: ref})
		m.flashInfo("resuming " + arg + "…")
	}
}

// onSwitched shows the conversation a /new or /resume moved to: its
// history replaces the view.
func (m *Model) onSwitched(h *ipc.History) {
	delete(m.requests, h.Ref)
	m.conversation = h.ConversationID
	m.switching = true
	m.onConnected(h)
	m.switching = false
	what := "conversation " + h.ConversationID
	if len(h.Turns) == 0 {
		what += " · new, nothing said yet"
	}
	m.flashInfo(what)
}

// onConversationList shows the conversations, the current one marked.
func (m *Model) onConversationList(l *ipc.ConversationList) {
	if _, ok := m.requests[l.Ref]; !ok {
		return // another client's
	}
	delete(m.requests, l.Ref)
	var b strings.Builder
	fmt.Fprintf(&b, "%d conversations · /resume ID to switch", len(l.Conversations))
	for _, c := range l.Conversations {
		mark := "  "
		if c.ID == l.Current {
			mark = "▸ "
		}
		when := "nothing said yet"
		if !c.LastActive.IsZero() {
			when = "last " + c.LastActive.In(m.loc).Format("Jan 2 15:04")
		}
		title := c.Title
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "\n%s%s — %s · %d turns · %s", mark, c.ID, title, c.Turns, when)
	}
	m.chat.notice(levelInfo, b.String())
}

// conversationLabel is the status bar's conversation: none on main.
func (m *Model) conversationLabel() string {
	if m.conversation == "" || m.conversation == "main" {
		return ""
	}
	return "conversation " + m.conversation
}
