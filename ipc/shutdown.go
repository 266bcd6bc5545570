package ipc

// TypeShutdown is sent by clients: the owner asks hearth to stop.
const TypeShutdown = "shutdown"

// CodeForbidden refuses a request this client may not make (Shutdown
// from a client that is not the owner); the connection stays open.
const CodeForbidden = "forbidden"

// Shutdown asks hearth to shut down gracefully, as SIGTERM does: it
// finishes the reply in flight, tells every client (an error
// shutting_down) and flushes the journal. Only the owner may ask; anyone
// else is answered an error forbidden with Ref, and a hearth that cannot
// be stopped this way (mnemo --local) an error unavailable.
//
//	{"type":"shutdown","ref":"s1"}
type Shutdown struct {
	Ref string `json:"ref,omitempty"`
}

func (*Shutdown) Type() string { return TypeShutdown }
