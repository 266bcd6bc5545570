// Package ipc holds protocol v1 between hearth and its clients: the wire
// types, the NDJSON codec and a client that dials, authenticates, streams
// events and reconnects.
//
// The wire is one JSON object per line. Every object carries a "type" field
// naming one of the message types below. Unknown fields are ignored; an
// unknown type is reported as *UnknownTypeError so that a peer can answer
// with an error and keep the connection open.
//
// This package never imports hearth or memory: wire types are separate from
// the daemon's domain types and are converted at the edge.
package ipc

import "time"

// ProtocolVersion is the version of the wire protocol this package speaks.
// A connect without a version is taken as version 1.
const ProtocolVersion = 1

// MaxLineBytes bounds one NDJSON line, newline excluded. A longer line is
// an error after which the connection is closed.
const MaxLineBytes = 1 << 20

// Message types sent by clients.
const (
	TypeConnect        = "connect"
	TypeMessage        = "message"
	TypeVoiceRequest   = "voice_request"
	TypeTranscript     = "transcript"
	TypeStopVoice      = "stop_voice"
	TypeVoiceToolCall  = "voice_tool_call"
	TypeDisconnect     = "disconnect"
	TypePing           = "ping"
	TypeCancel         = "cancel"
	TypeConfirm        = "confirm"
	TypeSearch         = "search"
	TypeHealth         = "health"
	TypeHistoryQuery   = "history_query"
	TypeForget         = "forget"
	TypeProposals      = "proposals"
	TypeProposalDecide = "proposal_decide"
)

// Message types sent by hearth.
const (
	TypeHistory         = "history"
	TypeToken           = "token"
	TypeStatus          = "status"
	TypeTurn            = "turn"
	TypeDone            = "done"
	TypeToolCall        = "tool_call"
	TypeToolResult      = "tool_result"
	TypeVoiceCredential = "voice_credential"
	TypeVoiceToolResult = "voice_tool_result"
	TypeError           = "error"
	TypePong            = "pong"
	TypeConfirmRequest  = "confirm_request"
	TypeSearchResults   = "search_results"
	TypeHealthReport    = "health_report"
	TypeHistoryPage     = "history_page"
	TypeForgotten       = "forgotten"
	TypeProposal        = "proposal"
	TypeProposalList    = "proposal_list"
	TypeProposalDecided = "proposal_decided"
)

// Msg is any protocol message. Type reports the value of its "type" field.
type Msg interface {
	Type() string
}

// Roles of a turn.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
	RoleTool  = "tool" // a tool call's outcome; Turn.Tool holds it
)

// Modes of a turn.
const (
	ModeText  = "text"
	ModeVoice = "voice"
)

// Agent states carried by Status.
const (
	StateIdle     = "idle"
	StateThinking = "thinking"
	StateTool     = "tool"
)

// Error codes carried by Error. Messages that accompany them are safe to
// show: they never hold paths, stack traces or secrets.
const (
	CodeBadRequest      = "bad_request"      // malformed JSON or a missing field; the connection stays open
	CodeUnknownType     = "unknown_type"     // a type this hearth does not know; the connection stays open
	CodeLineTooLong     = "line_too_long"    // a line over MaxLineBytes; the connection is closed
	CodeUnauthorized    = "unauthorized"     // wrong or missing token, or a message before connect; closed
	CodeProtocol        = "protocol_version" // the peer speaks a protocol version this side does not; closed
	CodeHandshake       = "handshake_timeout"
	CodeTooManyClients  = "too_many_clients"
	CodeSlowClient      = "slow_client" // the client's queue overflowed; it is disconnected and should resync
	CodeNoProvider      = "no_provider" // no model provider is configured
	CodeProviderError   = "provider_error"
	CodeToolError       = "tool_error"
	CodeContextOverflow = "context_overflow"
	CodeUnavailable     = "unavailable" // the feature is not available on this hearth
	CodeShuttingDown    = "shutting_down"
	CodeInternal        = "internal"
	CodeCancelled       = "cancelled"         // the turn was cancelled by a client
	CodeConfigInvalid   = "config_invalid"    // a changed preference file is invalid; the last good one stays
	CodeNoVoiceProvider = "no_voice_provider" // no realtime voice provider is configured
	CodeRateLimited     = "rate_limited"      // the identity's requests a minute are spent; retry after RetryAfterMS
)

// Turn is one stored turn of the conversation as it crosses the wire.
type Turn struct {
	ID      string    `json:"id"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
	TS      time.Time `json:"ts"`
	Mode    string    `json:"mode"`
	// Incomplete marks an agent reply cut short (provider failure,
	// cancellation, shutdown); Content holds what had streamed.
	Incomplete bool `json:"incomplete,omitempty"`
	// Truncated marks Content cut to fit one line (see MaxTurnContent);
	// the journal holds the whole turn, and a reply's tokens carried all
	// of it.
	Truncated bool `json:"truncated,omitempty"`
	// ToolCalls are the calls an agent turn made beside its text.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Tool is the outcome of a call, on a turn with role "tool".
	Tool *ToolResult `json:"tool,omitempty"`
}

// MaxTurnContent bounds Turn.Content on the wire so that any turn, even one
// whose every byte needs a six-byte JSON escape, fits in one line.
const MaxTurnContent = MaxLineBytes / 8

// Usage is token accounting for one model reply, when the provider reports it.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Connect is the first message of every connection.
//
//	{"type":"connect","token":"…","client":"mnemo/0.1","protocol":1}
type Connect struct {
	Token    string `json:"token"`
	Client   string `json:"client,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
	// ConversationID is the conversation to follow (absent: "main"); an
	// unknown one gets Error conversation_not_found and a close.
	ConversationID string `json:"conversation_id,omitempty"`
}

// Message is a text turn from the owner.
//
//	{"type":"message","content":"hello","ref":"c1"}
type Message struct {
	Content string `json:"content"`
	// Ref is an optional client-chosen id echoed in the Turn that stores
	// this message and in any Error about it.
	Ref string `json:"ref,omitempty"`
	// ConversationID sends the message into that conversation (absent:
	// the one the connection follows) without following it.
	ConversationID string `json:"conversation_id,omitempty"`
}

// VoiceRequest asks hearth for an ephemeral realtime voice credential.
// Ref, when set, is echoed in the VoiceCredential or the Error that
// answers it (hearths before it leave it out).
//
//	{"type":"voice_request","ref":"vr1"}
type VoiceRequest struct {
	Ref string `json:"ref,omitempty"`
}

// Transcript is a finished voice turn, appended to the same history.
//
//	{"type":"transcript","role":"user","text":"hi there"}
//
// Incomplete marks an agent turn cut short whose heard text never came
// (the session closed first): Text is what was known, more than was heard.
type Transcript struct {
	Role       string `json:"role"`
	Text       string `json:"text"`
	Ref        string `json:"ref,omitempty"`
	Incomplete bool   `json:"incomplete,omitempty"`
}

// StopVoice tells hearth that the voice session ended.
//
//	{"type":"stop_voice"}
type StopVoice struct{}

// VoiceToolCall asks hearth to run a tool the realtime voice model called
// (feature "voice"): hearth runs it through the same registry,
// permission classes, confirmation and journal as a text turn's tool
// call, and answers with VoiceToolResult carrying the same CallID and
// Ref. Arguments is the model's JSON arguments string, as received.
//
//	{"type":"voice_tool_call","call_id":"call_1","name":"memory_search","arguments":"{\"query\":\"coffee\"}","ref":"vt1"}
type VoiceToolCall struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Ref       string `json:"ref,omitempty"`
}

// VoiceToolResult answers VoiceToolCall: Output is what the client sends the
// provider as the call's function_call_output. IsError marks a tool that
// failed or was refused (Output then says why, for the model).
//
//	{"type":"voice_tool_result","call_id":"call_1","output":"…","ref":"vt1"}
type VoiceToolResult struct {
	CallID  string `json:"call_id"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	Ref     string `json:"ref,omitempty"`
}

// Disconnect is a clean goodbye.
//
//	{"type":"disconnect"}
type Disconnect struct{}

// Ping asks for a Pong; clients use it to check a quiet connection.
//
//	{"type":"ping","ref":"p1"}
type Ping struct {
	Ref string `json:"ref,omitempty"`
}

// History answers Connect: the last turns of the conversation, oldest first.
//
//	{"type":"history","turns":[…],"server":"hearth/0.1.0","protocol":1,"conversation_id":"main","state":"idle"}
type History struct {
	Turns          []Turn `json:"turns"`
	Server         string `json:"server"`
	Protocol       int    `json:"protocol"`
	ConversationID string `json:"conversation_id"`
	State          string `json:"state,omitempty"`
	// Detail is the last Status detail of State, such as a model call
	// being retried, for a client that connects meanwhile.
	Detail string `json:"detail,omitempty"`
	// Pending is the part of a reply that has streamed so far when the
	// client connects mid-turn; the rest follows as Token messages.
	Pending  string `json:"pending,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Features lists what this hearth offers (DESIGN.md names each), so
	// that a client decides from it instead of guessing; hearths before
	// it leave it out.
	Features []string `json:"features,omitempty"`
	// Ref echoes the NewConversation or Resume this History answers.
	Ref string `json:"ref,omitempty"`
}

// HasFeature reports whether the hearth that sent h offers feature f.
func (h *History) HasFeature(f string) bool {
	for _, x := range h.Features {
		if x == f {
			return true
		}
	}
	return false
}

// Token is a streamed chunk of the agent's reply, sent to every client.
// A reply's tokens follow the Turn that asked for it and end with Done.
//
//	{"type":"token","content":"Hel"}
type Token struct {
	Content string `json:"content"`
}

// Status reports a change of the agent's state.
//
//	{"type":"status","state":"thinking"}
type Status struct {
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// TurnStored announces a turn committed to the journal (a message or a
// transcript), to every client. Ref echoes the sender's Message.Ref.
//
//	{"type":"turn","turn":{"id":"01J…","role":"user","content":"hello","ts":"…","mode":"text"},"ref":"c1"}
type TurnStored struct {
	Turn Turn   `json:"turn"`
	Ref  string `json:"ref,omitempty"`
}

// Done ends an agent reply: Turn is the stored record.
//
//	{"type":"done","turn":{…},"usage":{"input_tokens":12,"output_tokens":40},"model":"grok-4.3"}
type Done struct {
	Turn  Turn   `json:"turn"`
	Usage *Usage `json:"usage,omitempty"`
	Model string `json:"model,omitempty"`
}

// ToolCall reports a tool the agent is calling. Arguments have secrets
// redacted.
//
//	{"type":"tool_call","id":"call_1","name":"current_time","arguments":{},"reason":"…"}
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// ToolResult reports the outcome of a tool call: a summary or an error.
//
//	{"type":"tool_result","id":"call_1","name":"current_time","result":"…","duration_ms":3}
type ToolResult struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Arguments  any    `json:"arguments,omitempty"` // secrets redacted
	Reason     string `json:"reason,omitempty"`
	Result     string `json:"result,omitempty"` // a summary, bounded
	Error      string `json:"error,omitempty"`  // safe for display
	DurationMS int64  `json:"duration_ms"`
	// Confirmed is the owner's answer for a confirm tool; nil when none
	// was needed.
	Confirmed *bool `json:"confirmed,omitempty"`
}

// VoiceCredential carries an ephemeral realtime credential and the
// session settings the client sends in its session.update. The API key
// never leaves hearth: Token is a short-lived client secret, good for
// opening one session before ExpiresAt.
//
//	{"type":"voice_credential","token":"…","expires_at":"…","url":"wss://api.x.ai/v1/realtime?model=…",
//	 "model":"…","dialect":"xai","voice":"eve","instructions":"…",
//	 "vad":{"type":"server_vad","threshold":0.2,"silence_ms":500,"prefix_padding_ms":300},
//	 "transcription_model":"grok-transcribe","tools":[{"name":"…","description":"…","parameters":{…}}]}
type VoiceCredential struct {
	Token        string    `json:"token"`
	ExpiresAt    time.Time `json:"expires_at"`
	Instructions string    `json:"instructions,omitempty"`
	Model        string    `json:"model,omitempty"`
	URL          string    `json:"url,omitempty"`
	// Dialect is the realtime protocol the URL speaks: DialectXAI or
	// DialectOpenAI.
	Dialect            string      `json:"dialect,omitempty"`
	Voice              string      `json:"voice,omitempty"`
	VAD                *VoiceVAD   `json:"vad,omitempty"`
	TranscriptionModel string      `json:"transcription_model,omitempty"`
	Tools              []VoiceTool `json:"tools,omitempty"`
	// Ref is the VoiceRequest's ref, echoed.
	Ref string `json:"ref,omitempty"`
}

// Realtime dialects of VoiceCredential.Dialect.
const (
	DialectXAI    = "xai"
	DialectOpenAI = "openai"
)

// VoiceVAD is a voice session's turn detection: Type VADServer (the
// provider detects speech with Threshold, SilenceMS and PrefixPaddingMS)
// or VADManual (the client commits each turn: push-to-talk).
type VoiceVAD struct {
	Type            string  `json:"type"`
	Threshold       float64 `json:"threshold,omitempty"`
	SilenceMS       int64   `json:"silence_ms,omitempty"`
	PrefixPaddingMS int64   `json:"prefix_padding_ms,omitempty"`
}

// Turn detection types of VoiceVAD.Type.
const (
	VADServer = "server_vad"
	VADManual = "manual"
)

// VoiceTool is a function the voice session is offered; Parameters is its
// JSON Schema.
type VoiceTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

// Error is a failure safe for display.
//
//	{"type":"error","code":"no_provider","message":"no model provider is configured: …"}
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Ref     string `json:"ref,omitempty"`
	// RetryAfterMS is how long to wait before asking again (code
	// rate_limited); the connection stays open.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// Error implements the error interface so a received Error can be returned.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Cancel asks hearth to stop the reply in flight. What streamed so far is
// stored, marked incomplete, and the turn ends with Error code cancelled.
//
//	{"type":"cancel"}
type Cancel struct {
	Ref string `json:"ref,omitempty"`
}

// ConfirmRequest asks the owner to approve a tool call of permission
// class confirm. Any client may answer with Confirm; no answer before
// ExpiresAt means no.
//
//	{"type":"confirm_request","id":"call_1","name":"fs_write","arguments":{"path":"notes.md"},"reason":"…","effect":"writes_local","expires_at":"…"}
type ConfirmRequest struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Arguments any       `json:"arguments,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Effect    string    `json:"effect,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Confirm answers a ConfirmRequest.
//
//	{"type":"confirm","id":"call_1","approve":true}
type Confirm struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

// Kinds of a search hit, and of the records a Search may be narrowed to.
const (
	KindTurn = "turn" // a conversation turn (user or agent, text or voice)
	KindTool = "tool" // a tool result, or a memory the agent kept
	// KindKnowledge is a section of a knowledge note in the memory vault.
	KindKnowledge = "knowledge"
)

// Search asks hearth's memory for turns matching Query. The filters are
// optional and combine: Roles and Kinds keep records with any of the
// values listed (roles "user", "agent", "tool"; kinds KindTurn,
// KindTool); Since keeps records from that time on, Until those before
// it. Knowledge notes (kind KindKnowledge) are narrowed by Statuses
// (none: active only) and MinConfidence (0..1; 0 does not filter); roles
// narrow only turns and tool results. Unknown roles, kinds or statuses, a
// confidence outside [0, 1], or Since not before Until, are a bad_request
// error.
//
//	{"type":"search","query":"garden plans","k":10,"ref":"s1"}
//	{"type":"search","query":"garden","roles":["user"],"kinds":["turn"],"since":"2026-01-01T00:00:00Z","until":"2026-02-01T00:00:00Z","ref":"s2"}
//	{"type":"search","query":"lisbon","kinds":["knowledge"],"statuses":["active","superseded"],"min_confidence":0.5,"ref":"s3"}
type Search struct {
	Query         string    `json:"query"`
	K             int       `json:"k,omitempty"` // 0 means hearth's default
	Roles         []string  `json:"roles,omitempty"`
	Kinds         []string  `json:"kinds,omitempty"`
	Since         time.Time `json:"since,omitzero"`
	Until         time.Time `json:"until,omitzero"`
	Statuses      []string  `json:"statuses,omitempty"`
	MinConfidence float64   `json:"min_confidence,omitempty"`
	Ref           string    `json:"ref,omitempty"`
}

// SearchResults answers Search, best first.
//
//	{"type":"search_results","ref":"s1","results":[{"turn":{…},"score":3.2,"kind":"turn","session":"main","channel":"chat"}]}
type SearchResults struct {
	Ref     string      `json:"ref,omitempty"`
	Results []SearchHit `json:"results"`
}

// SearchHit is one found turn with its score (higher is better) and its
// provenance: its Kind, the conversation it belongs to (Session) and
// where it came from (Channel: "chat", "voice" or a tool's name). Turn.ID
// is the journal record's id, or "<id>#<n>" for part of a long record.
// Hearths before the provenance fields leave them out.
//
// A knowledge hit (Kind KindKnowledge) is a section of a note: Turn.ID is
// "note:<note id>#<n>", Turn.Content the section's Markdown, Turn.TS when
// the note was last updated; Path is the note's file in the memory root,
// Heading the section's heading ("" before the first), Status and
// Confidence the note's.
type SearchHit struct {
	Turn       Turn    `json:"turn"`
	Score      float64 `json:"score"`
	Kind       string  `json:"kind,omitempty"`
	Session    string  `json:"session,omitempty"`
	Channel    string  `json:"channel,omitempty"`
	Path       string  `json:"path,omitempty"`
	Heading    string  `json:"heading,omitempty"`
	Status     string  `json:"status,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
}

// Health asks hearth how it is doing.
//
//	{"type":"health","ref":"h1"}
type Health struct {
	Ref string `json:"ref,omitempty"`
}

// HealthReport answers Health.
//
//	{"type":"health_report","ref":"h1","state":"idle","clients":2,"model":"grok-4.3","provider":"xai","index":{"backend":"embedded","embedder":"wordvec:wink-sg100d:100000","indexed":120,"lag_ms":0}}
type HealthReport struct {
	Ref      string       `json:"ref,omitempty"`
	State    string       `json:"state"`
	Clients  int          `json:"clients"`
	Provider string       `json:"provider,omitempty"`
	Model    string       `json:"model,omitempty"`
	Index    *IndexHealth `json:"index,omitempty"` // nil: recall is off
	// Dropped counts clients cut off since hearth started because they
	// fell behind; Refused counts connections refused before their
	// handshake (over the unauthenticated budget) and Throttled failed
	// handshakes answered late.
	Dropped   int `json:"dropped,omitempty"`
	Refused   int `json:"refused,omitempty"`
	Throttled int `json:"throttled,omitempty"`
	// Vault is the vault's commit state (feature "vault"); nil: no vault.
	Vault *VaultHealth `json:"vault,omitempty"`
	// Jobs summarises the vault's job runner; nil: no jobs run.
	Jobs *JobsHealth `json:"jobs,omitempty"`
	// Time is hearth's clock when it made the report (mnemo doctor
	// compares it with the client's); zero from an older hearth.
	Time time.Time `json:"time,omitzero"`
}

// IndexHealth is the recall indexer's progress. Failing is safe to show;
// details are in hearth's log.
type IndexHealth struct {
	Backend  string `json:"backend"`
	Embedder string `json:"embedder"`
	Indexed  int    `json:"indexed"` // documents written since hearth started
	LagMS    int64  `json:"lag_ms"`  // how far the index is behind the journal
	// Failures counts consecutive failed indexing batches or, while
	// Unavailable, failed attempts to open the backend.
	Failures int    `json:"failures,omitempty"`
	Failing  string `json:"failing,omitempty"`
	// Unavailable says the backend could not be opened (yet): search uses
	// keywords over the journal and no memories are injected. Failing says
	// whether hearth keeps retrying.
	Unavailable bool `json:"unavailable,omitempty"`
	// Note says why recall is lexical only though it was not configured
	// to be (no word vectors where hearth looked), with the fix.
	Note string `json:"note,omitempty"`
	// Ready says recall is open and has caught up with the journal as it
	// stood when recall opened; until then searches may use keywords.
	Ready bool `json:"ready,omitempty"`
	// Rebuilding says the index was dropped (mnemo memory purge index)
	// and is being rebuilt; search uses keywords until it is done.
	Rebuilding bool `json:"rebuilding,omitempty"`
	// Searches counts searches answered by recall and by the keyword
	// fallback since hearth started.
	RecallSearches  int `json:"recall_searches,omitempty"`
	KeywordSearches int `json:"keyword_searches,omitempty"`
}

// HistoryQuery reads stored turns back beyond the snapshot a connect
// gets (feature "history_query"): the newest Limit turns (0: all of them)
// after the turn After ("": from the first) and from Since on. They come
// oldest first in one HistoryPage, or, when they do not fit one, in the
// first pages of them: More says there is more of the selection, which
// the same query with After set to the page's last turn id continues.
//
//	{"type":"history_query","limit":20,"ref":"h1"}
//	{"type":"history_query","since":"2026-11-01T00:00:00Z","after":"01KAK3J7Y0…","ref":"h2"}
type HistoryQuery struct {
	Limit int       `json:"limit,omitempty"`
	After string    `json:"after,omitempty"`
	Since time.Time `json:"since,omitzero"`
	Ref   string    `json:"ref,omitempty"`
	// ConversationID is the conversation read (absent: the one the
	// connection follows).
	ConversationID string `json:"conversation_id,omitempty"`
}

// HistoryPage answers HistoryQuery: turns oldest first.
//
//	{"type":"history_page","ref":"h1","turns":[…],"more":true}
type HistoryPage struct {
	Ref   string `json:"ref,omitempty"`
	Turns []Turn `json:"turns"`
	More  bool   `json:"more,omitempty"`
}

// Forget asks hearth to forget turns, named by their ids or by the ids of
// search hits ("<id>#<n>" names the record it is part of). They leave the
// conversation, every client's view and every index; the journal keeps a
// tombstone. Purge also removes their text (and that of every turn
// forgotten before) from the journal on disk: the owner's confirmed
// decision, not undoable. Answered by Forgotten with Ref, after every
// client was sent Forgotten without it.
//
//	{"type":"forget","ids":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"],"ref":"f1"}
//	{"type":"forget","ids":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F#2"],"purge":true,"ref":"f2"}
type Forget struct {
	IDs   []string `json:"ids"`
	Purge bool     `json:"purge,omitempty"`
	Ref   string   `json:"ref,omitempty"`
}

// Forgotten says turns were forgotten: a client drops them from its view.
// Every client gets it without Ref; the client that asked gets it again
// with its Ref, Unknown (ids that named no turn, or one forgotten already)
// and, after a purge, Purged.
//
//	{"type":"forgotten","ids":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"],"by":"owner"}
//	{"type":"forgotten","ids":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"],"by":"owner","ref":"f1"}
type Forgotten struct {
	IDs     []string `json:"ids"`
	By      string   `json:"by,omitempty"` // "owner", or "agent" when the forget tool asked
	Ref     string   `json:"ref,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
	Purged  *Purged  `json:"purged,omitempty"`
	// Vault is what the forget changed in the vault: the notes,
	// summaries and entity notes made from the turns.
	Vault *ForgottenVault `json:"vault,omitempty"`
	// GitKeeps, after a purge, names the vault files whose earlier
	// versions, made from forgotten turns, git's history still holds
	// (hearth does not rewrite history).
	GitKeeps []string `json:"git_keeps,omitempty"`
}

// ForgottenVault is what a forget did to the vault: notes removed, notes
// hidden until the curator rewrites them, entity notes changed.
type ForgottenVault struct {
	Removed  []string `json:"removed,omitempty"`
	Hidden   []string `json:"hidden,omitempty"`
	Entities []string `json:"entities,omitempty"`
}

// Purged says what a purge removed from the journal on disk.
type Purged struct {
	Records int `json:"records"`
	Shards  int `json:"shards"`
}

// Proposals asks for the vault's proposals waiting for the owner
// (feature "vault"). Answered by ProposalList with Ref.
//
//	{"type":"proposals","ref":"v1"}
type Proposals struct {
	Ref string `json:"ref,omitempty"`
}

// Proposal is a change to the vault (memory/vault) waiting for the
// owner's review: every client is sent it when policy queues it, and
// ProposalList carries those still waiting. Content is the whole new file
// (create, update), cut to MaxTurnContent (Truncated); Why is why policy
// queued it. Current is the file as it is now, for a client's diff
// ("" for a create, or a file not there), cut the same way
// (CurrentTruncated); Sources are the turns the change cites. Both are
// optional: an older hearth sends neither.
//
//	{"type":"proposal","id":"prop_01K…","op":"create","path":"knowledge/prefs/coffee.md","reason":"the owner said so","author":"agent","why":"the policy reviews changes to knowledge/prefs/","content":"---\n…","created_at":"…","sources":[{"turn":"01K…"}]}
type Proposal struct {
	ID        string    `json:"id"`
	Op        string    `json:"op"`
	Path      string    `json:"path"`
	Reason    string    `json:"reason"`
	Author    string    `json:"author"`
	Why       string    `json:"why,omitempty"`
	Content   string    `json:"content,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	Current          string           `json:"current,omitempty"`
	CurrentTruncated bool             `json:"current_truncated,omitempty"`
	Sources          []ProposalSource `json:"sources,omitempty"`
}

// ProposalSource is a turn a proposal cites: its thread and turn ids.
type ProposalSource struct {
	Thread string `json:"thread,omitempty"`
	Turn   string `json:"turn,omitempty"`
}

// ProposalList answers Proposals: the proposals waiting, oldest first,
// cut to fit one line (More: there are more than it carries).
//
//	{"type":"proposal_list","ref":"v1","proposals":[…]}
type ProposalList struct {
	Ref       string     `json:"ref,omitempty"`
	Proposals []Proposal `json:"proposals"`
	More      bool       `json:"more,omitempty"`
}

// ProposalDecide is the owner's decision on a waiting proposal: approved,
// it is written and committed; rejected, it is dropped. Answered by
// ProposalDecided with Ref, after every client was sent it without.
// Content, with Approve, is the owner's edited version of the proposal's
// file: it is applied instead of what was proposed, authored by the owner.
//
//	{"type":"proposal_decide","id":"prop_01K…","approve":true,"ref":"v2"}
type ProposalDecide struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
	Content string `json:"content,omitempty"`
	Ref     string `json:"ref,omitempty"`
}

// ProposalDecided says a proposal was applied or rejected, by policy
// ("by":"policy") or by the owner: a client drops it from its review
// list. Commit names the git commit of an applied one; CommitFailed says
// it is saved but git could not commit it yet.
//
//	{"type":"proposal_decided","id":"prop_01K…","path":"knowledge/prefs/coffee.md","decision":"applied","why":"approved by the owner","commit":"4f1c…","by":"owner"}
type ProposalDecided struct {
	ID           string `json:"id"`
	Path         string `json:"path,omitempty"`
	Decision     string `json:"decision"` // applied, rejected
	Why          string `json:"why,omitempty"`
	Commit       string `json:"commit,omitempty"`
	CommitFailed bool   `json:"commit_failed,omitempty"`
	By           string `json:"by,omitempty"`
	Ref          string `json:"ref,omitempty"`
}

// Pong answers Ping.
//
//	{"type":"pong","ref":"p1"}
type Pong struct {
	Ref string `json:"ref,omitempty"`
}

func (*Connect) Type() string         { return TypeConnect }
func (*Message) Type() string         { return TypeMessage }
func (*VoiceRequest) Type() string    { return TypeVoiceRequest }
func (*Transcript) Type() string      { return TypeTranscript }
func (*StopVoice) Type() string       { return TypeStopVoice }
func (*VoiceToolCall) Type() string   { return TypeVoiceToolCall }
func (*VoiceToolResult) Type() string { return TypeVoiceToolResult }
func (*Disconnect) Type() string      { return TypeDisconnect }
func (*Ping) Type() string            { return TypePing }
func (*History) Type() string         { return TypeHistory }
func (*Token) Type() string           { return TypeToken }
func (*Status) Type() string          { return TypeStatus }
func (*TurnStored) Type() string      { return TypeTurn }
func (*Done) Type() string            { return TypeDone }
func (*ToolCall) Type() string        { return TypeToolCall }
func (*ToolResult) Type() string      { return TypeToolResult }
func (*VoiceCredential) Type() string { return TypeVoiceCredential }
func (*Error) Type() string           { return TypeError }
func (*Pong) Type() string            { return TypePong }
func (*Cancel) Type() string          { return TypeCancel }
func (*ConfirmRequest) Type() string  { return TypeConfirmRequest }
func (*Confirm) Type() string         { return TypeConfirm }
func (*Search) Type() string          { return TypeSearch }
func (*SearchResults) Type() string   { return TypeSearchResults }
func (*Health) Type() string          { return TypeHealth }
func (*HealthReport) Type() string    { return TypeHealthReport }
func (*HistoryQuery) Type() string    { return TypeHistoryQuery }
func (*HistoryPage) Type() string     { return TypeHistoryPage }
func (*Forget) Type() string          { return TypeForget }
func (*Forgotten) Type() string       { return TypeForgotten }
func (*Proposals) Type() string       { return TypeProposals }
func (*Proposal) Type() string        { return TypeProposal }
func (*ProposalList) Type() string    { return TypeProposalList }
func (*ProposalDecide) Type() string  { return TypeProposalDecide }
func (*ProposalDecided) Type() string { return TypeProposalDecided }

// newMsg returns a zero message of the named type, or nil.
func newMsg(typ string) Msg {
	switch typ {
	case TypeConnect:
		return new(Connect)
	case TypeMessage:
		return new(Message)
	case TypeVoiceRequest:
		return new(VoiceRequest)
	case TypeTranscript:
		return new(Transcript)
	case TypeStopVoice:
		return new(StopVoice)
	case TypeVoiceToolCall:
		return new(VoiceToolCall)
	case TypeVoiceToolResult:
		return new(VoiceToolResult)
	case TypeDisconnect:
		return new(Disconnect)
	case TypePing:
		return new(Ping)
	case TypeHistory:
		return new(History)
	case TypeToken:
		return new(Token)
	case TypeStatus:
		return new(Status)
	case TypeTurn:
		return new(TurnStored)
	case TypeDone:
		return new(Done)
	case TypeToolCall:
		return new(ToolCall)
	case TypeToolResult:
		return new(ToolResult)
	case TypeVoiceCredential:
		return new(VoiceCredential)
	case TypeError:
		return new(Error)
	case TypePong:
		return new(Pong)
	case TypeCancel:
		return new(Cancel)
	case TypeConfirmRequest:
		return new(ConfirmRequest)
	case TypeConfirm:
		return new(Confirm)
	case TypeSearch:
		return new(Search)
	case TypeSearchResults:
		return new(SearchResults)
	case TypeHealth:
		return new(Health)
	case TypeHealthReport:
		return new(HealthReport)
	case TypeHistoryQuery:
		return new(HistoryQuery)
	case TypeHistoryPage:
		return new(HistoryPage)
	case TypeForget:
		return new(Forget)
	case TypeForgotten:
		return new(Forgotten)
	case TypeProposals:
		return new(Proposals)
	case TypeProposal:
		return new(Proposal)
	case TypeProposalList:
		return new(ProposalList)
	case TypeProposalDecide:
		return new(ProposalDecide)
	case TypeProposalDecided:
		return new(ProposalDecided)
	case TypeShutdown:
		return new(Shutdown)
	}
	return newVaultMsg(typ)
}
