package voice

// Event is one typed happening of a session, delivered in order on
// Session.Events.
type Event interface{ voiceEvent() }

// SessionReady: the provider applied session.update (session.updated);
// microphone audio flows from now on. Resumed is true after a reconnect.
type SessionReady struct {
	Model          string
	ConversationID string
	Resumed        bool
}

// SpeechStarted: server VAD heard the user begin (the agent's cue to stop
// playback: see Session.InterruptPlayback).
type SpeechStarted struct {
	ItemID       string
	AudioStartMS int
}

// SpeechStopped: server VAD heard the user end a turn.
type SpeechStopped struct {
	ItemID     string
	AudioEndMS int
}

// UserTranscript is the user's words of one item. Text is the whole text
// so far (it may correct earlier partials); exactly one Final per item.
type UserTranscript struct {
	ItemID string
	Text   string
	Final  bool
}

// AgentAudio is reply audio: 24 kHz int16 little-endian mono PCM, in order.
type AgentAudio struct {
	ResponseID string
	ItemID     string
	PCM        []byte
}

// AgentTranscript is the agent's words of one item. Text is the whole text
// so far. Final carries the complete transcript; a later Final with
// Truncated set replaces it with what was actually heard before barge-in.
type AgentTranscript struct {
	ResponseID string
	ItemID     string
	Text       string
	Final      bool
	Truncated  bool
}

// ResponseDone ends a response; Status is completed, cancelled,
// incomplete or failed.
type ResponseDone struct {
	ResponseID string
	Status     string
}

// FunctionCall asks the client to run a tool; answer with
// Session.SendFunctionOutputs. Each CallID is delivered once.
type FunctionCall struct {
	CallID    string
	Name      string
	Arguments string
}

// Error is an error event of the provider. Recoverable errors leave the
// session open.
type Error struct {
	Type        string
	Code        string
	Message     string
	Recoverable bool
}

// Reconnecting: the connection dropped and the session is being resumed.
type Reconnecting struct {
	Attempt int
	Err     error
}

// Closed is the last event; Err is nil after Session.Close.
type Closed struct{ Err error }

func (SessionReady) voiceEvent()    {}
func (SpeechStarted) voiceEvent()   {}
func (SpeechStopped) voiceEvent()   {}
func (UserTranscript) voiceEvent()  {}
func (AgentAudio) voiceEvent()      {}
func (AgentTranscript) voiceEvent() {}
func (ResponseDone) voiceEvent()    {}
func (FunctionCall) voiceEvent()    {}
func (Error) voiceEvent()           {}
func (Reconnecting) voiceEvent()    {}
func (Closed) voiceEvent()          {}
