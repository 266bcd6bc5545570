package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// Conversation codes of Problem.
const (
	// CodeConversationNotFound: no conversation has the id asked for.
	CodeConversationNotFound = "conversation_not_found"
	// CodeConflict: a conversation with the id asked for exists already.
	CodeConflict = "conflict"
)

// ConversationInfo is one conversation as a list shows it. Every field
// derives from the journal (see DESIGN.md "Conversations").
type ConversationInfo struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"` // the first user message's first TitleRunes characters
	// TitleID is the record the title comes from: forgetting it clears
	// the title.
	TitleID    string    `json:"title_id,omitempty"`
	Created    time.Time `json:"created,omitzero"`
	LastActive time.Time `json:"last_active,omitzero"`
	Records    int       `json:"records"` // turns stored
	First      string    `json:"first,omitempty"`
	Last       string    `json:"last,omitempty"`
}

// TitleRunes bounds a conversation's title.
const TitleRunes = 60

// registryFile is the registry's cache on disk (ConversationsFile).
type registryFile struct {
	Version int                `json:"version"`
	Through string             `json:"through"` // the newest journal id it reflects
	Convs   []ConversationInfo `json:"conversations"`
}

// registry is every conversation known, loaded or not; guarded by
// Hearth.mu.
type registry struct {
	through string
	convs   map[string]*ConversationInfo
	wake    chan struct{} // capacity 1: the cache on disk is behind
}

// convField is the journal's Record.Conv of conversation id.
func convField(id string) string {
	if id == MainConversation {
		return ""
	}
	return id
}

// convOf is the conversation of a journal record.
func convOf(r journal.Record) string {
	if r.Conv == "" {
		return MainConversation
	}
	return r.Conv
}

// title is a conversation's title from its first user message: one
// line, at most TitleRunes characters.
func title(text string) string {
	text = strings.Join(strings.FieldsFunc(text, unicode.IsSpace), " ")
	if utf8.RuneCountInString(text) <= TitleRunes {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:TitleRunes-1])) + "…"
}

// loadRegistry reads the registry's cache and catches up with the
// journal from its cursor; without a usable cache it is rebuilt from the
// whole journal.
func (h *Hearth) loadRegistry(ctx context.Context) error {
	reg := &registry{convs: map[string]*ConversationInfo{}, wake: make(chan struct{}, 1)}
	h.reg = reg
	rebuild := true
	if path := h.cfg.ConversationsFile; path != "" {
		b, err := os.ReadFile(path)
		var f registryFile
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			h.log.Warn("conversations: cache unreadable; rebuilding it from the journal", "err", err)
		case json.Unmarshal(b, &f) != nil || f.Version != 1:
			h.log.Warn("conversations: cache damaged; rebuilding it from the journal")
		default:
			rebuild = false
			reg.through = f.Through
			for _, c := range f.Convs {
				if c.ID == MainConversation || journal.ValidConversation(c.ID) {
					reg.convs[c.ID] = &c
				}
			}
		}
	}
	if rebuild {
		reg.through = ""
		clear(reg.convs)
	}
	start := time.Now()
	n := 0
	err := h.cfg.Journal.ScanAfter(ctx, reg.through, func(r journal.Record) error {
		n++
		h.noteLocked(r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("conversations: %w", err)
	}
	if _, ok := reg.convs[MainConversation]; !ok {
		reg.convs[MainConversation] = &ConversationInfo{ID: MainConversation}
	}
	h.log.Info("conversations", "count", len(reg.convs), "rebuilt", rebuild, "records_read", n, "ms", time.Since(start).Milliseconds())
	if n > 0 || rebuild {
		h.registryDirtyLocked()
	}
	return nil
}

// noteLocked counts a stored record in the registry; h.mu is held (or
// nothing else runs yet).
func (h *Hearth) noteLocked(r journal.Record) {
	reg := h.reg
	if r.ID > reg.through {
		reg.through = r.ID
	}
	if r.IsTombstone() {
		for _, c := range reg.convs {
			if c.TitleID != "" && slices.Contains(r.Forgets, c.TitleID) {
				c.Title, c.TitleID = "", ""
			}
		}
		return
	}
	if !r.IsTurn() || r.Redacted {
		return
	}
	id := convOf(r)
	c := reg.convs[id]
	if c == nil {
		c = &ConversationInfo{ID: id}
		reg.convs[id] = c
	}
	if c.First == "" {
		c.First = r.ID
	}
	if c.Created.IsZero() || c.Records == 0 {
		c.Created = r.TS
	}
	c.Last, c.LastActive = r.ID, r.TS
	c.Records++
	if c.Title == "" && r.Role == memory.RoleUser && strings.TrimSpace(r.Text) != "" {
		c.Title, c.TitleID = title(r.Text), r.ID
	}
}

// registryDirtyLocked wakes the registry's saver.
func (h *Hearth) registryDirtyLocked() {
	if h.cfg.ConversationsFile == "" {
		return
	}
	select {
	case h.reg.wake <- struct{}{}:
	default:
	}
}

// startRegistry saves the registry's cache whenever it is behind, and
// once more when stopped (Run stops it after the turns are done).
func (h *Hearth) startRegistry() (stop func()) {
	if h.cfg.ConversationsFile == "" {
		return func() {}
	}
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				h.saveRegistry()
				return
			case <-h.reg.wake:
				h.saveRegistry()
			}
		}
	}()
	return func() { close(quit); <-done }
}

// saveRegistry writes the registry's cache atomically (a temporary file,
// fsync'd, renamed, the directory fsync'd). A failure is logged: the cache
// is rebuilt from the journal.
func (h *Hearth) saveRegistry() {
	h.mu.Lock()
	f := registryFile{Version: 1, Through: h.reg.through}
	for _, c := range h.reg.convs {
		if c.Records > 0 { // a conversation nothing was said in is not kept
			f.Convs = append(f.Convs, *c)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(f.Convs, func(a, b ConversationInfo) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.Marshal(f)
	if err == nil {
		path := h.cfg.ConversationsFile
		err = writeFileDurable(filepath.Dir(path), filepath.Base(path), append(b, '\n'))
	}
	if err != nil {
		h.log.Warn("conversations: cache not saved; it is rebuilt from the journal", "err", err)
	}
}

// Conversations lists every conversation, the most recently active
// first (one nothing was said in yet by when it was created).
func (h *Hearth) Conversations() []ConversationInfo {
	h.mu.Lock()
	out := make([]ConversationInfo, 0, len(h.reg.convs))
	for _, c := range h.reg.convs {
		out = append(out, *c)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b ConversationInfo) int {
		ta, tb := a.LastActive, b.LastActive
		if ta.IsZero() {
			ta = a.Created
		}
		if tb.IsZero() {
			tb = b.Created
		}
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Conversation returns one conversation's entry, or a *Problem with
// CodeConversationNotFound.
func (h *Hearth) Conversation(id string) (ConversationInfo, error) {
	if id == "" {
		id = MainConversation
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.reg.convs[id]
	if !ok {
		return ConversationInfo{}, notFound(id)
	}
	return *c, nil
}

func notFound(id string) *Problem {
	return &Problem{Code: CodeConversationNotFound, Message: fmt.Sprintf("no conversation has the id %q", clip(id, 80))}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ValidConversationID reports whether a client may name a conversation
// id: 1 to 64 of a-z, 0-9, '-' and '_'.
func ValidConversationID(id string) bool { return journal.ValidConversation(id) }

// NewConversation creates a conversation and returns its entry: under
// id, or, when id is "", under a new one hearth mints (a lower-case
// ULID). An invalid id is CodeBadRequest, one that exists CodeConflict.
// Nothing is stored until its first message: a conversation nothing was
// said in is gone after a restart.
func (h *Hearth) NewConversation(id string) (ConversationInfo, error) {
	if id == "" {
		id = strings.ToLower(ulid.Make().String())
	} else if !journal.ValidConversation(id) {
		return ConversationInfo{}, &Problem{Code: CodeBadRequest, Message: "a conversation id is 1 to 64 of a-z, 0-9, '-' and '_'"}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reg.convs[id]; ok {
		return ConversationInfo{}, &Problem{Code: CodeConflict, Message: fmt.Sprintf("a conversation with the id %q exists already", id)}
	}
	if h.closing {
		return ConversationInfo{}, &Problem{Code: CodeShuttingDown, Message: "hearth is shutting down"}
	}
	c := &ConversationInfo{ID: id, Created: time.Now().UTC()}
	h.reg.convs[id] = c
	return *c, nil
}

// open returns the conversation id ("": main) with its recent records
// read, starting its turn worker once Run runs; an unknown id is a
// *Problem with CodeConversationNotFound.
func (h *Hearth) open(id string) (*conversation, error) {
	if id == "" {
		id = MainConversation
	}
	h.mu.Lock()
	if c := h.convs[id]; c != nil {
		h.mu.Unlock()
		return c, nil
	}
	info, ok := h.reg.convs[id]
	if !ok {
		h.mu.Unlock()
		return nil, notFound(id)
	}
	first := info.First
	h.mu.Unlock()
	// Read outside the lock: no record of id is committed meanwhile, as
	// only a loaded conversation commits (and a second loader loses the
	// race below).
	var recent []journal.Record
	if first != "" {
		var err error
		recent, err = h.cfg.Journal.TailOf(convField(id), h.keep(), firstBound(id, first))
		if err != nil {
			h.log.Error("conversation: read journal", "conversation", id, "err", err)
			return nil, &Problem{Code: CodeInternal, Message: "hearth could not read the conversation from the journal; details are in hearth's log"}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.convs[id]; c != nil {
		return c, nil
	}
	c := h.newConversation(id, recent)
	c.current = h.conv.current
	h.convs[id] = c
	h.startWorkerLocked(c)
	return c, nil
}

// pokeLocked tells conversation id's worker that a follower left, so
// that it unloads the conversation if nothing else holds it. h.mu is
// held.
func (h *Hearth) pokeLocked(id string) {
	c := h.convs[id]
	if c == nil || c == h.conv || !c.started || c.closed {
		return
	}
	for s := range h.subs {
		if s.conv == id {
			return
		}
	}
	select {
	case c.turns <- turnReq{poke: true}:
	default: // a full queue: its worker unloads it after those turns
	}
}

// errUnloaded: the conversation went idle and was unloaded; open it
// again.
var errUnloaded = errors.New("hearth: conversation unloaded")

// unloadIfIdle unloads c, any conversation but main, when nothing is
// queued for it and nobody follows it: its worker ends and its window
// is read from the journal again on its next use. A conversation a
// client made with no message at all stays listed. True when c is gone.
func (h *Hearth) unloadIfIdle(c *conversation) bool {
	if c == h.conv {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(c.turns) > 0 || c.closed || len(c.voiceCalls) > 0 {
		return false
	}
	for s := range h.subs {
		if s.conv == c.id {
			return false
		}
	}
	c.unloaded = true
	delete(h.convs, c.id)
	return true
}

// firstBound is the first record a conversation's journal reads may
// start from: none for main, whose records may predate conversations (a
// hand-edited or imported journal need not keep a record's id and its
// shard's day together); the first record for the others, which only
// this hearth wrote.
func firstBound(id, first string) string {
	if id == MainConversation {
		return ""
	}
	return first
}

// keep is how many recent records a conversation keeps.
func (h *Hearth) keep() int { return max(h.cfg.HistoryTurns, h.cfg.ContextTurns) }

func (h *Hearth) newConversation(id string, recent []journal.Record) *conversation {
	return &conversation{
		id:       id,
		keep:     h.keep(),
		turns:    make(chan turnReq, h.cfg.TurnQueue),
		recent:   recent,
		state:    StateIdle,
		confirms: make(map[string]chan bool),
		voice:    initialMode(recent),
	}
}

// startWorkerLocked starts c's turn worker once Run runs; after Run's
// ctx ended c takes nothing more. h.mu is held.
func (h *Hearth) startWorkerLocked(c *conversation) {
	switch {
	case c.started || h.run == nil:
		return
	case h.run.stopped:
		c.closed = true
		return
	}
	c.started = true
	h.run.workers.Add(1)
	go func() {
		defer h.run.workers.Done()
		h.converse(h.run.ctx, h.run.turnCtx, c)
	}()
}

// conversationKey carries the conversation of the turn in flight in the
// ctx its tools get.
type conversationKey struct{}

// ConversationFrom is the conversation of the turn whose tool ctx is
// (MainConversation outside a turn).
func ConversationFrom(ctx context.Context) string {
	if id, ok := ctx.Value(conversationKey{}).(string); ok {
		return id
	}
	return MainConversation
}
