package hearth

import (
	"encoding/json"
	"time"

	"github.com/mnemo/mnemo/memory/journal"
)

// Event is what the core publishes to its subscribers: typed domain values,
// never wire bytes. Doors convert them to their own wire types at the edge.
//
// Every stored record is published exactly once, as a TurnStored,
// ToolOutcome or ReplyDone carrying the record as the journal holds it.
type Event interface {
	// Class is the class a subscriber opts into to receive the event.
	Class() Class
}

// Class is a set of event classes a subscriber receives (see WatchOptions).
type Class uint8

// Event classes. A subscriber names the classes it wants; the snapshot and
// the replies to its own requests always reach it.
const (
	// ClassTurns: stored records (TurnStored, ToolOutcome, ReplyDone) and
	// forgotten ones (Forgotten).
	ClassTurns Class = 1 << iota
	// ClassTokens: the text of a reply as it streams (Token); lossless,
	// coalesced while the subscriber is behind.
	ClassTokens
	// ClassActivity: what the agent is doing (StateChanged, ToolStarted).
	ClassActivity
	// ClassConfirm: confirmations waiting for the owner (ConfirmAsked).
	ClassConfirm
	// ClassProblems: errors about turns (Problem).
	ClassProblems
	// ClassNotices: changes of configuration and other notices (Notice).
	ClassNotices

	// ClassAll is every class: what a chat client wants.
	ClassAll = ClassTurns | ClassTokens | ClassActivity | ClassConfirm | ClassProblems | ClassNotices

	classAlways Class = 1 << 7 // the snapshot and replies
)

// Agent states, as StateChanged and Snapshot carry them.
const (
	StateIdle     = "idle"
	StateThinking = "thinking"
	StateTool     = "tool"
)

// Snapshot is the first event of every subscription: the conversation as
// it stands, registered under the same lock as every later event, so that
// nothing is missed or doubled between it and the deltas that follow.
type Snapshot struct {
	Conversation string
	Turns        []journal.Record // the last HistoryTurns records, oldest first
	State        string
	Detail       string // what StateChanged last said of State, e.g. a retry
	Pending      string // the text of the reply streaming now
	Provider     string // of the latest turn's model; "" before any
	Model        string
	Version      string   // hearth's version
	Features     []string // what this hearth offers (see Features)
}

// TurnStored is a record committed to the journal: a message, a
// transcript, an agent step that asked for tools, or a memory the agent
// kept. Ref is the sender's reference, when it had one.
type TurnStored struct {
	Record journal.Record
	Ref    string
}

// ToolOutcome is a committed tool record: the outcome of one call.
type ToolOutcome struct {
	Record journal.Record
}

// ReplyDone is the committed reply that ends a turn.
type ReplyDone struct {
	Record journal.Record
	Usage  *Usage
	Model  string
}

// Usage is what a reply cost in tokens, as the provider counted.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Token is a chunk of the reply streaming now.
type Token struct {
	Text string
}

// StateChanged says what the agent is doing now. Detail names the tool,
// or, while thinking, a failed model call being retried ("provider not
// responding, retry 2/3 in 4 s"); "" clears it.
type StateChanged struct {
	State, Detail string
}

// ToolStarted is a tool call the agent begins; Args have secrets redacted.
type ToolStarted struct {
	ID, Name string
	Args     json.RawMessage
	Reason   string
}

// ConfirmAsked is a confirm-class tool call waiting for the owner; any
// subscriber may answer it with Confirm.
type ConfirmAsked struct {
	ID, Name  string
	Args      json.RawMessage
	Reason    string
	Effect    string
	ExpiresAt time.Time
}

// Problem is an error about a turn, safe to show: a fixed message, never
// paths, bodies or secrets. Ref is the reference of the request it is
// about, when known.
type Problem struct {
	Code    string
	Message string
	Ref     string
	// InTools is set on a turn's failure that ended it in its tool loop:
	// the model was still calling tools when the iteration limit came,
	// or a tool's outcome could not be stored. The HTTP doors call it
	// tool_error (seed 000); the code stays the one clients know.
	InTools bool
}

func (e *Problem) Error() string { return e.Message }

// Notice is something the owner should know that is not about one turn,
// such as a preference file that was changed and is invalid. Code is one
// of the Code constants.
type Notice struct {
	Code    string
	Message string
}

// Forgotten is records forgotten: they left the journal's live view and
// every index; a subscriber drops them from its view. It must arrive.
type Forgotten struct {
	IDs []string
	By  string // ByOwner or ByAgent
}

// Reply is a door's answer to one of its own subscriber's requests (a
// pong, search results), delivered in order with the subscriber's events
// and never to anyone else. The core carries Value without looking at it.
type Reply struct {
	Value any
}

func (*Snapshot) Class() Class     { return classAlways }
func (*TurnStored) Class() Class   { return ClassTurns }
func (*ToolOutcome) Class() Class  { return ClassTurns }
func (*ReplyDone) Class() Class    { return ClassTurns }
func (*Token) Class() Class        { return ClassTokens }
func (*StateChanged) Class() Class { return ClassActivity }
func (*ToolStarted) Class() Class  { return ClassActivity }
func (*ConfirmAsked) Class() Class { return ClassConfirm }
func (*Problem) Class() Class      { return ClassProblems }
func (*Notice) Class() Class       { return ClassNotices }
func (*Reply) Class() Class        { return classAlways }
func (*Forgotten) Class() Class    { return ClassTurns }

// Codes of Problem and Notice, and of the errors commands return. They
// are the protocol's error codes (DESIGN.md lists them); doors map them to
// their own wire.
const (
	CodeBadRequest      = "bad_request"
	CodeUnavailable     = "unavailable"
	CodeInternal        = "internal"
	CodeNoProvider      = "no_provider"
	CodeProviderError   = "provider_error"
	CodeContextOverflow = "context_overflow"
	CodeToolError       = "tool_error"
	CodeCancelled       = "cancelled"
	CodeShuttingDown    = "shutting_down"
	CodeSlowClient      = "slow_client"
	CodeConfigInvalid   = "config_invalid"
)

// Size estimates the bytes of text an event carries: the default cost of
// an event in a subscriber's queue (see WatchOptions.Cost).
func Size(ev Event) int64 {
	const overhead = 64
	switch e := ev.(type) {
	case *Token:
		return int64(len(e.Text))
	case *TurnStored:
		return overhead + recordSize(e.Record)
	case *ToolOutcome:
		return overhead + recordSize(e.Record)
	case *ReplyDone:
		return overhead + recordSize(e.Record)
	case *Snapshot:
		n := int64(overhead + len(e.Pending))
		for _, r := range e.Turns {
			n += recordSize(r)
		}
		return n
	case *ToolStarted:
		return overhead + int64(len(e.Args)+len(e.Reason))
	case *ConfirmAsked:
		return overhead + int64(len(e.Args)+len(e.Reason))
	case *Problem:
		return overhead + int64(len(e.Message))
	case *ProposalQueued:
		return overhead + int64(len(e.Proposal.Content)+len(e.Proposal.Reason)+len(e.Why)+len(e.Current))
	case *ProposalDecided:
		return overhead + int64(len(e.Why))
	}
	return overhead
}

func recordSize(r journal.Record) int64 {
	n := len(r.Text)
	for _, c := range r.ToolCalls {
		n += len(c.Arguments) + len(c.Reason)
	}
	if r.Tool != nil {
		n += len(r.Tool.Arguments) + len(r.Tool.Error)
	}
	return int64(n)
}
