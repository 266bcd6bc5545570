package wire

import (
	"errors"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// switchTo, in the queue of the subscription a session follows, says
// that its events end there and the session follows sub from then on;
// ref is the request's, echoed in sub's History.
type switchTo struct {
	sub *hearth.Subscription
	ref string
}

var errSwitched = errors.New("wire: the session follows another conversation")

// resume moves the session to conversation id: subscribed at once (so
// nothing of it is missed), followed once what is queued of the previous
// one is delivered; its History, with ref, comes next.
func (s *Session) resume(id, ref string) {
	if id == "" {
		id = hearth.MainConversation
	}
	watch := s.opts.Watch
	watch.Conversation = id
	sub, err := s.core.Subscribe(watch)
	if err != nil {
		s.refuse(err, ref)
		return
	}
	s.mu.Lock()
	if s.subs == nil { // closed meanwhile
		s.mu.Unlock()
		sub.Close()
		return
	}
	prev := s.sub
	s.sub = sub
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	prev.Reply(&switchTo{sub: sub, ref: ref})
}

// newConversation creates a conversation and resumes it.
func (s *Session) newConversation(m *ipc.NewConversation) {
	info, err := s.core.NewConversation(m.ConversationID)
	if err != nil {
		s.refuse(err, m.Ref)
		return
	}
	s.resume(info.ID, m.Ref)
}

// MaxConversationList bounds a conversation_list: the most recently
// active ones, so that the list fits one line.
const MaxConversationList = 1000

// ConversationList is the list of conversations on the wire (the
// MaxConversationList most recently active); current is the one the
// asking client follows.
func ConversationList(ref, current string, cs []hearth.ConversationInfo) *ipc.ConversationList {
	cs = cs[:min(len(cs), MaxConversationList)]
	out := &ipc.ConversationList{Ref: ref, Current: current, Conversations: make([]ipc.ConversationInfo, len(cs))}
	for i, c := range cs {
		out.Conversations[i] = ConversationInfo(c)
	}
	return out
}

// ConversationInfo is one conversation on the wire.
func ConversationInfo(c hearth.ConversationInfo) ipc.ConversationInfo {
	return ipc.ConversationInfo{ID: c.ID, Title: c.Title, Created: c.Created, LastActive: c.LastActive, Turns: c.Records}
}
