package ipc

import "time"

// The vault's core operations (feature "vault"): read, write, edit,
// delete, list and history of the memory root's files. A write is
// answered by ProposalDecided with Ref (every client is sent it without):
// the owner's write is applied, authored by the owner.

// Message types of the vault's operations.
const (
	TypeVaultRead     = "vault_read"     // client
	TypeVaultWrite    = "vault_write"    // client
	TypeVaultList     = "vault_list"     // client
	TypeVaultHistory  = "vault_history"  // client
	TypeVaultFile     = "vault_file"     // hearth
	TypeVaultNotes    = "vault_notes"    // hearth
	TypeVaultChanges  = "vault_changes"  // hearth
	TypeVaultPurge    = "vault_purge"    // client
	TypeVaultPurged   = "vault_purged"   // hearth
	TypeVaultExport   = "vault_export"   // client
	TypeVaultExported = "vault_exported" // hearth
)

// Vault write operations (VaultWrite.Op).
const (
	VaultOpWrite  = "write"  // create or replace the file with Content
	VaultOpEdit   = "edit"   // patch a note (Patch)
	VaultOpDelete = "delete" // deprecate a note; with Hard, remove the file
)

// VaultRead asks for a file of the memory root as it is, or at a version
// (At: a commit hash, abbreviated or not, as VaultChanges names them).
// Answered by VaultFile with Ref.
//
//	{"type":"vault_read","path":"knowledge/prefs/coffee.md","at":"4f1c2d","ref":"r1"}
type VaultRead struct {
	Path string `json:"path"`
	At   string `json:"at,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// VaultFile answers VaultRead: the file's content, cut to MaxTurnContent
// (Truncated), and the commit it was read at ("" for the file as it is).
//
//	{"type":"vault_file","path":"knowledge/prefs/coffee.md","commit":"4f1c…","content":"---\n…","ref":"r1"}
type VaultFile struct {
	Path      string `json:"path"`
	Commit    string `json:"commit,omitempty"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	Ref       string `json:"ref,omitempty"`
}

// VaultPatch is a small edit of a note.
type VaultPatch struct {
	Append     string   `json:"append,omitempty"`   // text added at the end of the body
	TagsAdd    []string `json:"tags_add,omitempty"` // tags added
	Confidence *float64 `json:"confidence,omitempty"`
	Confirmed  bool     `json:"confirmed,omitempty"` // sets last_confirmed_at
}

// VaultWrite is the owner's write: write (create or replace with
// Content), edit (Patch) or delete (a note is deprecated, kept; Hard
// removes the file). Base, when set, is the SHA-256 (hex) of the file the
// write was made against: a file changed since is not written. Reason
// goes into the ledger and the commit.
//
//	{"type":"vault_write","op":"write","path":"knowledge/prefs/coffee.md","content":"---\n…","reason":"my coffee","ref":"w1"}
type VaultWrite struct {
	Op      string      `json:"op"`
	Path    string      `json:"path"`
	Content string      `json:"content,omitempty"`
	Patch   *VaultPatch `json:"patch,omitempty"`
	Hard    bool        `json:"hard,omitempty"`
	Base    string      `json:"base_sha256,omitempty"`
	Reason  string      `json:"reason,omitempty"`
	Ref     string      `json:"ref,omitempty"`
}

// VaultList asks for the notes of knowledge/ (or under Prefix, a path
// prefix), filtered by type, status and tag. Answered by VaultNotes.
//
//	{"type":"vault_list","note_type":"person","status":"active","tag":"family","prefix":"knowledge/people/","ref":"l1"}
type VaultList struct {
	NoteType string `json:"note_type,omitempty"` // "type" names the message
	Status   string `json:"status,omitempty"`
	Tag      string `json:"tag,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Ref      string `json:"ref,omitempty"`
}

// VaultNote is a note as VaultNotes lists it; Error is set (and only
// Path) for a note that does not parse.
type VaultNote struct {
	Path      string    `json:"path"`
	ID        string    `json:"id,omitempty"`
	Title     string    `json:"title,omitempty"`
	NoteType  string    `json:"note_type,omitempty"`
	Status    string    `json:"status,omitempty"`
	Tags      []string  `json:"tags,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Error     string    `json:"error,omitempty"`
}

// VaultNotes answers VaultList, sorted by path, cut to fit one line
// (More: there are more than it carries).
//
//	{"type":"vault_notes","notes":[…],"ref":"l1"}
type VaultNotes struct {
	Notes []VaultNote `json:"notes"`
	More  bool        `json:"more,omitempty"`
	Ref   string      `json:"ref,omitempty"`
}

// VaultHistory asks for the changes to a file, newest first, at most
// Limit (0: all that fit). Answered by VaultChanges.
//
//	{"type":"vault_history","path":"knowledge/prefs/coffee.md","limit":20,"ref":"h1"}
type VaultHistory struct {
	Path  string `json:"path"`
	Limit int    `json:"limit,omitempty"`
	Ref   string `json:"ref,omitempty"`
}

// VaultChange is one change to a file: the commit that holds it (""
// for a rejection, or a write git could not commit yet), who made it,
// when, what (Op, from the ledger: create, update, edit, deprecate,
// delete, reject…) and why.
type VaultChange struct {
	Commit   string    `json:"commit,omitempty"`
	Author   string    `json:"author"`
	When     time.Time `json:"when"`
	Op       string    `json:"op,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Proposal string    `json:"proposal,omitempty"`
}

// VaultChanges answers VaultHistory (More: older changes were left out).
//
//	{"type":"vault_changes","path":"knowledge/prefs/coffee.md","changes":[…],"ref":"h1"}
type VaultChanges struct {
	Path    string        `json:"path"`
	Changes []VaultChange `json:"changes"`
	More    bool          `json:"more,omitempty"`
	Ref     string        `json:"ref,omitempty"`
}

// VaultPurge is the owner's purge of one layer of memory: index (dropped
// and rebuilt from the journal), summaries, knowledge, proposals, or
// threads (the conversation: only with Confirm). Answered by VaultPurged.
//
//	{"type":"vault_purge","layer":"knowledge","reason":"start over","ref":"p1"}
type VaultPurge struct {
	Layer   string `json:"layer"`
	Confirm bool   `json:"confirm,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Ref     string `json:"ref,omitempty"`
}

// VaultPurged answers VaultPurge: how many files (or turns, for threads)
// it removed, and the commit that holds a vault layer's purge.
//
//	{"type":"vault_purged","layer":"knowledge","removed":12,"commit":"4f1c…","ref":"p1"}
type VaultPurged struct {
	Layer        string `json:"layer"`
	Removed      int    `json:"removed"`
	Commit       string `json:"commit,omitempty"`
	CommitFailed bool   `json:"commit_failed,omitempty"`
	Ref          string `json:"ref,omitempty"`
}

// VaultExport asks hearth to export the memory root to one archive on
// its machine: to Path (absolute), or under the root's
// artifacts/exports/. Answered by VaultExported.
//
//	{"type":"vault_export","path":"/home/ana/mnemo.tar.gz","ref":"e1"}
type VaultExport struct {
	Path string `json:"path,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// VaultExported answers VaultExport: where the archive is, its size, the
// files it holds, and what it left out (Notes).
//
//	{"type":"vault_exported","path":"/home/ana/mnemo.tar.gz","bytes":48213,"files":31,"ref":"e1"}
type VaultExported struct {
	Path  string   `json:"path"`
	Bytes int64    `json:"bytes"`
	Files int      `json:"files"`
	Notes []string `json:"notes,omitempty"`
	Ref   string   `json:"ref,omitempty"`
}

// VaultHealth is the vault's commit state in a HealthReport: Uncommitted
// counts writes saved whose git commit failed and is being retried,
// Failing says why, since Since.
type VaultHealth struct {
	Uncommitted int       `json:"uncommitted"`
	Failing     string    `json:"failing,omitempty"`
	Since       time.Time `json:"since,omitzero"`
}

func (*VaultRead) Type() string     { return TypeVaultRead }
func (*VaultFile) Type() string     { return TypeVaultFile }
func (*VaultWrite) Type() string    { return TypeVaultWrite }
func (*VaultList) Type() string     { return TypeVaultList }
func (*VaultNotes) Type() string    { return TypeVaultNotes }
func (*VaultHistory) Type() string  { return TypeVaultHistory }
func (*VaultChanges) Type() string  { return TypeVaultChanges }
func (*VaultPurge) Type() string    { return TypeVaultPurge }
func (*VaultPurged) Type() string   { return TypeVaultPurged }
func (*VaultExport) Type() string   { return TypeVaultExport }
func (*VaultExported) Type() string { return TypeVaultExported }

// newVaultMsg returns a zero vault message of the named type, or nil.
func newVaultMsg(typ string) Msg {
	switch typ {
	case TypeVaultRead:
		return new(VaultRead)
	case TypeVaultFile:
		return new(VaultFile)
	case TypeVaultWrite:
		return new(VaultWrite)
	case TypeVaultList:
		return new(VaultList)
	case TypeVaultNotes:
		return new(VaultNotes)
	case TypeVaultHistory:
		return new(VaultHistory)
	case TypeVaultChanges:
		return new(VaultChanges)
	case TypeVaultPurge:
		return new(VaultPurge)
	case TypeVaultPurged:
		return new(VaultPurged)
	case TypeVaultExport:
		return new(VaultExport)
	case TypeVaultExported:
		return new(VaultExported)
	}
	return newAuthMsg(typ)
}
