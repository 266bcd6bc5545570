package hearth

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// Commands return a *Problem when they refuse: its Code and Message are
// safe to show to whoever sent the request.

// Send queues a text message from the owner; the agent answers it in
// turn. ref is echoed in the events about it.
func (h *Hearth) Send(ref, content string) error {
	return h.send(nil, ref, content)
}

// SendAs is Send for a sender whose identity ctx carries (auth.WithIdentity):
// the turn's tools see it in their ctx. Without one it is Send.
func (h *Hearth) SendAs(ctx context.Context, ref, content string) error {
	return h.SendTo(ctx, MainConversation, ref, content)
}

// SendTo is SendAs into conversation conv ("": main); an unknown one is
// a *Problem with CodeConversationNotFound.
func (h *Hearth) SendTo(ctx context.Context, conv, ref, content string) error {
	return h.SendWith(ctx, ref, content, SendOptions{Conversation: conv})
}

func (h *Hearth) send(id *auth.Identity, ref, content string) error {
	return h.sendWith(id, ref, content, SendOptions{})
}

// SendOptions are settings of one message, for its turn only.
type SendOptions struct {
	// Conversation is the conversation it goes to; "": main. An unknown
	// one is a *Problem with CodeConversationNotFound.
	Conversation string
	// Model, when set, answers this turn instead of the Models' choice
	// (an HTTP client naming a model). The conversation's model, as
	// every client sees it and as later turns resolve it, stays.
	Model Model
}

// SendWith is SendAs with the turn's own options.
func (h *Hearth) SendWith(ctx context.Context, ref, content string, o SendOptions) error {
	if id, ok := auth.From(ctx); ok {
		return h.sendWith(&id, ref, content, o)
	}
	return h.sendWith(nil, ref, content, o)
}

func (h *Hearth) sendWith(id *auth.Identity, ref, content string, o SendOptions) error {
	if strings.TrimSpace(content) == "" {
		return &Problem{Code: CodeBadRequest, Message: "message content is empty", Ref: ref}
	}
	return h.enqueueIn(o.Conversation, turnReq{ref: ref, id: id, model: o.Model, rec: journal.Record{Role: memory.RoleUser, Text: content, Mode: memory.ModeText}})
}

// AddTranscript queues a finished voice turn (role user or agent) in
// main; it is stored with mode voice, in order with messages, and not
// answered: the voice session answers it.
func (h *Hearth) AddTranscript(ref, role, text string) error {
	return h.AddTranscriptIn(MainConversation, ref, role, text, false)
}

// AddCutTranscript is AddTranscript for an agent turn cut short whose
// heard text never came: it is stored marked incomplete.
func (h *Hearth) AddCutTranscript(ref, role, text string) error {
	return h.AddTranscriptIn(MainConversation, ref, role, text, true)
}

// AddTranscriptIn is AddTranscript into conversation conv ("": main), the
// one the voice session talks in; incomplete marks an agent turn cut
// short whose heard text never came. An unknown conversation is a
// *Problem with CodeConversationNotFound.
func (h *Hearth) AddTranscriptIn(conv, ref, role, text string, incomplete bool) error {
	if role != memory.RoleUser && role != memory.RoleAgent {
		return &Problem{Code: CodeBadRequest, Message: `transcript role must be "user" or "agent"`, Ref: ref}
	}
	if strings.TrimSpace(text) == "" {
		return &Problem{Code: CodeBadRequest, Message: "transcript text is empty", Ref: ref}
	}
	return h.enqueueIn(conv, turnReq{ref: ref, rec: journal.Record{Role: role, Text: text, Mode: memory.ModeVoice, Incomplete: incomplete}})
}

// enqueueIn opens conversation conv ("": main) and queues req there,
// opening it again when it went idle in between.
func (h *Hearth) enqueueIn(conv string, req turnReq) error {
	for {
		c, err := h.open(conv)
		if err != nil {
			err.(*Problem).Ref = req.ref
			return err
		}
		err = h.enqueue(c, req)
		if !errors.Is(err, errUnloaded) {
			return err
		}
		// It went idle between open and enqueue: open it again.
	}
}

// enqueue takes req into c's queue, or refuses it: a full queue, or a
// queue already drained by shutdown. Checked under the lock that drain
// takes, so that a request is stored or refused, never lost.
func (h *Hearth) enqueue(c *conversation, req turnReq) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.unloaded {
		return errUnloaded
	}
	if c.closed {
		return &Problem{Code: CodeShuttingDown, Message: "hearth is shutting down; the message was not stored", Ref: req.ref}
	}
	select {
	case c.turns <- req:
		if h.asked++; h.asked == 1 {
			h.settled = make(chan struct{})
		}
		return nil
	default:
		return &Problem{Code: CodeUnavailable, Message: "hearth is busy: too many messages are waiting; try again shortly", Ref: req.ref}
	}
}

// Cancel stops the reply in flight; its text so far is stored, marked
// incomplete.
func (h *Hearth) Cancel(ref string) error {
	return h.CancelIn(MainConversation, ref)
}

// CancelIn is Cancel in conversation conv ("": main).
func (h *Hearth) CancelIn(conv, ref string) error {
	if conv == "" {
		conv = MainConversation
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.convs[conv]
	if c == nil || c.cancelTurn == nil {
		return &Problem{Code: CodeBadRequest, Message: "there is no reply in flight to cancel", Ref: ref}
	}
	c.cancelTurn(errCancelled)
	return nil
}

// Confirm answers a ConfirmAsked of any conversation; the first answer
// wins.
func (h *Hearth) Confirm(id string, approve bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.convs {
		if ch, ok := c.confirms[id]; ok {
			delete(c.confirms, id)
			ch <- approve
			return nil
		}
	}
	return &Problem{Code: CodeBadRequest, Message: "no confirmation is waiting under that id (it may have expired)"}
}

// Search limits.
const (
	DefaultSearchResults = 10
	MaxSearchResults     = 50
)

// Search searches memory with req's filters; K outside [1, 50] takes 10.
func (h *Hearth) Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	if h.cfg.Memory == nil {
		return nil, &Problem{Code: CodeUnavailable, Message: "memory search is not available on this hearth"}
	}
	if strings.TrimSpace(req.Query) == "" {
		return nil, &Problem{Code: CodeBadRequest, Message: "search query is empty"}
	}
	if req.K <= 0 || req.K > MaxSearchResults {
		req.K = DefaultSearchResults
	}
	if err := req.Validate(); err != nil {
		return nil, &Problem{Code: CodeBadRequest, Message: "search: " + err.Error()}
	}
	hits, err := h.cfg.Memory.Search(ctx, req)
	if err != nil {
		h.log.Warn("search failed", "err", err)
		return nil, &Problem{Code: CodeInternal, Message: "memory search failed; details are in hearth's log"}
	}
	return h.expandSearch(ctx, req, hits), nil
}

// Keep stores a memory the agent chose to keep (the cache_store tool): a
// tool record, committed, indexed and published like every other, in the
// conversation of the turn that kept it (ConversationFrom).
func (h *Hearth) Keep(ctx context.Context, label, content string) (string, error) {
	rec := journal.Record{Role: memory.RoleTool, Text: content, Mode: memory.ModeText, Tool: &journal.ToolResult{Name: "cache_store", Reason: label}}
	c, err := h.open(ConversationFrom(ctx))
	if err != nil {
		return "", err
	}
	stored, err := h.commit(ctx, c, rec, func(r journal.Record) Event { return &TurnStored{Record: r} })
	if err != nil {
		return "", err
	}
	return stored.ID, nil
}

// Health is the core's state in terms safe to show.
type Health struct {
	State           string
	Subscribers     int
	Provider, Model string
	// Dropped counts subscribers cut off for falling behind.
	Dropped int
	// Conversations counts the conversations loaded: main, and those
	// with a turn queued or in flight or a subscriber.
	Conversations int
	// Index is recall's progress; nil while it first opens or when off.
	Index *memory.IndexHealth
	// Vault is the vault's commit state; nil without a vault.
	Vault *VaultHealth
	// Curator is the curator pass's progress; nil when it is off.
	Curator *CuratorHealth
	At      time.Time
}

// Health reports the agent's state, the subscribers and recall.
func (h *Hearth) Health() Health {
	h.mu.Lock()
	r := Health{State: h.conv.state, Subscribers: len(h.subs), Dropped: h.dropped, Conversations: len(h.convs), At: time.Now()}
	if m := h.conv.current; m != nil {
		r.Provider, r.Model = m.Name(), m.Model()
	}
	h.mu.Unlock()
	if h.cfg.Memory != nil {
		r.Index = h.cfg.Memory.Health()
	}
	r.Vault = h.vaultHealth()
	r.Curator = h.CuratorHealth()
	return r
}
