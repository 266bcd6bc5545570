package ipc

import "time"

// Messages of conversations (DESIGN.md "Conversations"). A connection
// follows one conversation: "main" unless its Connect, a NewConversation
// or a Resume names another.
const (
	TypeConversations    = "conversations"     // client
	TypeConversationList = "conversation_list" // hearth
	TypeNewConversation  = "new_conversation"  // client
	TypeResume           = "resume"            // client
)

// CodeConversationNotFound: no conversation has the id a request named.
// CodeConflict: NewConversation named an id that exists.
const (
	CodeConversationNotFound = "conversation_not_found"
	CodeConflict             = "conflict"
)

// Conversations asks for the list of conversations. Answered by
// ConversationList with Ref.
//
//	{"type":"conversations","ref":"l1"}
type Conversations struct {
	Ref string `json:"ref,omitempty"`
}

// ConversationList answers Conversations, the most recently active first.
// Current is the conversation the asking connection follows.
//
//	{"type":"conversation_list","ref":"l1","current":"main","conversations":[{"id":"main","title":"hello","created":"…","last_active":"…","turns":12}]}
type ConversationList struct {
	Ref           string             `json:"ref,omitempty"`
	Current       string             `json:"current,omitempty"`
	Conversations []ConversationInfo `json:"conversations"`
}

// ConversationInfo is one conversation: its id, its title (the first
// user message's first 60 characters; empty before one, or once it was
// forgotten), when it was created and last active, and the turns stored.
type ConversationInfo struct {
	ID         string    `json:"id"`
	Title      string    `json:"title,omitempty"`
	Created    time.Time `json:"created,omitzero"`
	LastActive time.Time `json:"last_active,omitzero"`
	Turns      int       `json:"turns"`
}

// NewConversation creates a conversation and switches the connection to
// it: answered by a History of it (Ref echoed), or an Error with Ref
// (bad_request for an invalid id, conflict for one that exists).
// ConversationID is the id wanted (1 to 64 of a-z, 0-9, '-', '_'); absent,
// hearth mints one.
//
//	{"type":"new_conversation","conversation_id":"trip-2026","ref":"n1"}
type NewConversation struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Ref            string `json:"ref,omitempty"`
}

// Resume switches the connection to an existing conversation: answered
// by a History of it (Ref echoed), then its events; an unknown id gets
// Error conversation_not_found with Ref and the connection stays where it
// was.
//
//	{"type":"resume","conversation_id":"trip-2026","ref":"r1"}
type Resume struct {
	ConversationID string `json:"conversation_id"`
	Ref            string `json:"ref,omitempty"`
}

func (*Conversations) Type() string    { return TypeConversations }
func (*ConversationList) Type() string { return TypeConversationList }
func (*NewConversation) Type() string  { return TypeNewConversation }
func (*Resume) Type() string           { return TypeResume }

func newConversationsMsg(typ string) Msg {
	switch typ {
	case TypeConversations:
		return new(Conversations)
	case TypeConversationList:
		return new(ConversationList)
	case TypeNewConversation:
		return new(NewConversation)
	case TypeResume:
		return new(Resume)
	}
	return nil
}
