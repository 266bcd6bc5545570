package memory

// The vocabulary of memory shared by hearth, its tools and recall: who
// said a record, how, what a search finds, what a turn asks to be
// reminded of, and how the index is doing. It stays free of the journal
// and recall packages so that anything may import it.

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Roles of a record: who said it. A tool result and a memory kept with
// cache_store are records of role "tool".
const (
	RoleUser  = "user"
	RoleAgent = "agent"
	RoleTool  = "tool"
)

// Modes of a record: typed or spoken.
const (
	ModeText  = "text"
	ModeVoice = "voice"
)

// Kinds of what memory holds: a conversation turn (user or agent, text or
// voice), a tool call and its result (role "tool"), or a section of a
// knowledge note in the vault (knowledge/…, no role).
const (
	KindTurn      = "turn"
	KindTool      = "tool"
	KindKnowledge = "knowledge"
)

// Statuses of a knowledge note (the vault's front matter "status"). A
// search finds active notes unless it asks for others.
const (
	StatusActive       = "active"
	StatusSuperseded   = "superseded"
	StatusContradicted = "contradicted"
	StatusDeprecated   = "deprecated"
	StatusDraft        = "draft"
	// StatusNeedsRewrite: some of the note's sources were forgotten; it
	// waits to be rewritten without them.
	StatusNeedsRewrite = "needs_rewrite"
)

var (
	roles    = []string{RoleUser, RoleAgent, RoleTool}
	kinds    = []string{KindTurn, KindTool, KindKnowledge}
	statuses = []string{StatusActive, StatusSuperseded, StatusContradicted, StatusDeprecated, StatusDraft, StatusNeedsRewrite}
)

// Statuses returns the note statuses a search filters on.
func Statuses() []string { return slices.Clone(statuses) }

// Roles returns the roles a search filters on.
func Roles() []string { return slices.Clone(roles) }

// Kinds returns the kinds a search filters on.
func Kinds() []string { return slices.Clone(kinds) }

// maxField bounds a value quoted back in an error.
const maxField = 64

// SearchRequest is one memory search: the K best hits for Query among the
// records that pass every filter. A zero filter does not filter; a record
// passes a list filter when it has any of the values listed.
type SearchRequest struct {
	Query string
	K     int
	Roles []string  // RoleUser, RoleAgent, RoleTool: narrows turns and tool results
	Kinds []string  // KindTurn, KindTool, KindKnowledge
	Since time.Time // TS >= Since
	Until time.Time // TS < Until
	// Statuses narrows knowledge notes; none is active only, so that a
	// superseded, contradicted, deprecated or draft note is found only
	// when asked for.
	Statuses []string
	// MinConfidence narrows knowledge notes to those whose confidence is
	// at least this (0..1); 0 does not filter.
	MinConfidence float64
}

// NoteStatuses is the statuses of knowledge notes r finds: r.Statuses,
// or active only.
func (r SearchRequest) NoteStatuses() []string {
	if len(r.Statuses) == 0 {
		return []string{StatusActive}
	}
	return r.Statuses
}

// WantsKnowledge reports whether r may find knowledge notes.
func (r SearchRequest) WantsKnowledge() bool {
	return len(r.Kinds) == 0 || slices.Contains(r.Kinds, KindKnowledge)
}

// WantsRecords reports whether r may find turns or tool results.
func (r SearchRequest) WantsRecords() bool {
	return len(r.Kinds) == 0 || slices.Contains(r.Kinds, KindTurn) || slices.Contains(r.Kinds, KindTool)
}

// Validate checks the filters: known roles and kinds, and a time range
// that is not empty. Its errors are safe to show.
func (r SearchRequest) Validate() error {
	for _, v := range r.Roles {
		if !slices.Contains(roles, v) {
			return fmt.Errorf("unknown role %q: use user, agent or tool", Shorten(v, maxField))
		}
	}
	for _, v := range r.Kinds {
		if !slices.Contains(kinds, v) {
			return fmt.Errorf("unknown kind %q: use turn, tool or knowledge", Shorten(v, maxField))
		}
	}
	for _, v := range r.Statuses {
		if !slices.Contains(statuses, v) {
			return fmt.Errorf("unknown status %q: use active, superseded, contradicted, deprecated or draft", Shorten(v, maxField))
		}
	}
	if r.MinConfidence < 0 || r.MinConfidence > 1 {
		return fmt.Errorf("min confidence %g is outside [0, 1]", r.MinConfidence)
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Since.Before(r.Until) {
		return fmt.Errorf("since (%s) must be before until (%s)", r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// Matches reports whether a record of that kind and role, said at ts,
// passes the filters (the journal's records: turns and tool results).
func (r SearchRequest) Matches(kind, role string, ts time.Time) bool {
	return (len(r.Kinds) == 0 || slices.Contains(r.Kinds, kind)) &&
		(len(r.Roles) == 0 || slices.Contains(r.Roles, role)) &&
		(r.Since.IsZero() || !ts.Before(r.Since)) &&
		(r.Until.IsZero() || ts.Before(r.Until))
}

// Hit is one memory found by a search, with its provenance: which record
// (ID, "<record id>#<n>" for a chunk of a long one), what it is (Kind),
// who said it (Role), which conversation (Session), where it came from
// (Channel: "chat", "voice", a tool's name), whether it was typed or
// spoken (Mode) and when (TS). Score ranks hits of one search, higher
// better; scores of different searches do not compare.
//
// A knowledge hit (Kind KindKnowledge, ID "note:<note id>#<n>") is one
// section of a note: Path is the note's file in the memory root
// ("knowledge/people/ana.md"), Heading the section's heading ("" for the
// text before the first), Status and Confidence the note's; TS is when
// the note was last updated. It has no Role, Session or Mode.
type Hit struct {
	ID, Kind, Role   string
	Session, Channel string
	Mode             string
	Text             string
	TS               time.Time
	Score            float64

	Path, Heading, Status string
	Confidence            float64
}

// ContextRequest asks memory for the context of one turn: the older turns
// and tool results relevant to Query, each part within its token
// allowance, leaving out what the context window already holds.
type ContextRequest struct {
	Query   string          // the newest user turn, or where the last session left off
	Exclude map[string]bool // record ids already in the context window or injected
	Turns   int             // token allowance for relevant older turns
	Tools   int             // token allowance for relevant tool results
	// Knowledge is the token allowance for sections of active knowledge
	// notes relevant to Query: the first tier, assembled before turns.
	// What it leaves unused goes to the older turns.
	Knowledge int
	// Session marks the block injected once as a session starts (seed
	// 004), relevant to where the conversation left off, rather than to
	// one message.
	Session bool
	// Injected, when set, is given the record ids the block shows, so that
	// later blocks of the session leave them out.
	Injected map[string]bool
}

// IndexHealth is how recall is doing. Failing is safe to show; details
// are in the log.
type IndexHealth struct {
	Backend  string // "embedded" or "qdrant"
	Embedder string // the embedder's name, or what is being opened
	// Opening: the first attempt to open recall has not ended yet (or has
	// not started); search uses keywords meanwhile.
	Opening bool
	// Unavailable: recall could not be opened (yet): search uses keywords
	// over the journal and no memories are injected. Failing says whether
	// it keeps retrying.
	Unavailable bool
	// Ready: recall is open and its indexer has caught up with the journal
	// as it stood when recall opened, so that a search finds every turn
	// stored before then.
	Ready bool
	// Rebuilding: the index was dropped on the owner's request and is
	// being rebuilt from the journal and the vault's notes; search uses
	// keywords meanwhile, and IndexedSinceStart counts the progress.
	Rebuilding bool
	// IndexedSinceStart counts the documents this process indexed.
	IndexedSinceStart int
	// Lag is how far the index is behind the journal.
	Lag time.Duration
	// Failures counts consecutive failed indexing batches or, while
	// Unavailable, failed attempts to open the backend.
	Failures int
	Failing  string
	// Note says why recall is lexical only when it was not configured to
	// be (the default word vectors were not found), with the fix; safe to
	// show.
	Note string
	// Searches counts the searches (not the memory blocks injected into
	// turns) each path answered since start.
	Searches SearchCounts
}

// SearchCounts counts the searches answered by hybrid recall and by the
// keyword fallback over the journal.
type SearchCounts struct {
	Recall, Keyword int
}

// Shorten cuts s to at most n bytes on a UTF-8 boundary, marking the cut
// with "…" when there is room: how a value too long to show is shown.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	k := n - len(ell)
	if k < 0 {
		k, n = n, 0
	}
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	if n == 0 {
		return s[:k]
	}
	return s[:k] + ell
}

// EstimateTokens is the one token estimate of context assembly: 4 bytes
// a token, rounded up, so any non-empty text is at least 1.
func EstimateTokens(s string) int {
	return (len(s) + 3) / 4
}
