package httpdoor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
)

// ConversationCore is what the door needs of the core's conversations
// (DESIGN.md "Conversations").
type ConversationCore interface {
	SendTo(ctx context.Context, conv, ref, content string) error
	NewConversation(id string) (hearth.ConversationInfo, error)
	Conversation(id string) (hearth.ConversationInfo, error)
	Conversations() []hearth.ConversationInfo
	History(ctx context.Context, q hearth.HistoryQuery) (hearth.HistoryPage, error)
}

// conversationRoutes are the conversations' endpoints: listing and
// reading one's history are conversation read.
func (d *Door) conversationRoutes() map[string]route {
	return map[string]route{
		"GET /v1/conversations":      {res: auth.ResConversation, act: auth.ActRead, h: d.listConversations},
		"GET /v1/conversations/{id}": {res: auth.ResConversation, act: auth.ActRead, h: d.conversationHistory},
	}
}

// conversationHeader names the conversation of a /v1/chat/completions
// request, as metadata.conversation_id does.
const conversationHeader = "X-Conversation-ID"

// errConversationNotFound is 404 for a conversation id nobody has.
func errConversationNotFound(param string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: hearth.CodeConversationNotFound, param: param,
		msg: "no conversation has that id; leave it out to start a new one (GET /v1/conversations lists them)"}
}

// known resolves a conversation id a request named: "" stays "", an
// unknown (or invalid) one is 404.
func (d *Door) known(id, param string) (string, error) {
	if id == "" {
		return "", nil
	}
	info, err := d.core.Conversation(id)
	if err != nil {
		var p *hearth.Problem
		if errors.As(err, &p) && p.Code == hearth.CodeConversationNotFound {
			return "", errConversationNotFound(param)
		}
		return "", err
	}
	return info.ID, nil
}

// chatConversation is the conversation a /v1/chat/completions request
// names, in metadata.conversation_id or the X-Conversation-ID header;
// "" (main, the shared conversation) when it names none.
func (d *Door) chatConversation(c *call, metadata json.RawMessage) (string, error) {
	var meta struct {
		ConversationID string `json:"conversation_id"`
	}
	if len(metadata) > 0 && string(metadata) != "null" {
		if err := json.Unmarshal(metadata, &meta); err != nil {
			return "", &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "bad_request", param: "metadata.conversation_id",
				msg: "metadata.conversation_id must be a string"}
		}
	}
	if meta.ConversationID != "" {
		return d.known(meta.ConversationID, "metadata.conversation_id")
	}
	return d.known(c.r.Header.Get(conversationHeader), conversationHeader)
}

// conversationJSON is one conversation in the door's answers.
type conversationJSON struct {
	ID         string     `json:"id"`
	Object     string     `json:"object"` // "conversation"
	Title      string     `json:"title"`
	Created    *time.Time `json:"created"`
	LastActive *time.Time `json:"last_active"`
	Turns      int        `json:"turns"`
}

func toConversationJSON(c hearth.ConversationInfo) conversationJSON {
	out := conversationJSON{ID: c.ID, Object: "conversation", Title: c.Title, Turns: c.Records}
	if !c.Created.IsZero() {
		out.Created = &c.Created
	}
	if !c.LastActive.IsZero() {
		out.LastActive = &c.LastActive
	}
	return out
}

type conversationList struct {
	Object    string             `json:"object"` // "list"
	Data      []conversationJSON `json:"data"`
	RequestID string             `json:"request_id"`
}

// maxConversations bounds GET /v1/conversations: the most recently
// active ones.
const maxConversations = 1000

// listConversations answers GET /v1/conversations: every conversation,
// the most recently active first.
func (d *Door) listConversations(c *call) error {
	cs := d.core.Conversations()
	cs = cs[:min(len(cs), maxConversations)]
	out := conversationList{Object: "list", Data: make([]conversationJSON, len(cs)), RequestID: c.id}
	for i, x := range cs {
		out.Data[i] = toConversationJSON(x)
	}
	writeJSON(c, http.StatusOK, out)
	return nil
}

type historyTurn struct {
	ID         string    `json:"id"`
	Role       string    `json:"role"`
	Content    string    `json:"content"`
	TS         time.Time `json:"ts"`
	Mode       string    `json:"mode"`
	Incomplete bool      `json:"incomplete,omitempty"`
	Tool       string    `json:"tool,omitempty"` // a tool record's tool
}

type conversationHistory struct {
	conversationJSON
	Messages  []historyTurn `json:"messages"`
	More      bool          `json:"more"`
	RequestID string        `json:"request_id"`
}

// conversationHistory answers GET /v1/conversations/{id}: the
// conversation and its turns, oldest first — the newest ?limit (default
// 50, at most 1000), or, with ?after=<turn id>, those after it (more
// says there are others after the page).
func (d *Door) conversationHistory(c *call) error {
	id, err := d.known(c.r.PathValue("id"), "id")
	if err != nil {
		return err
	}
	limit, after := 50, c.r.URL.Query().Get("after")
	if v := c.r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > hearth.MaxHistoryPage {
			return &apiError{status: http.StatusUnprocessableEntity, typ: "invalid_request_error", code: "out_of_range", param: "limit",
				msg: "limit is a whole number from 1 to 1000", clarify: &clarify{MissingFields: []string{}, BadTypes: []string{}, OutOfRange: []string{"limit"}}}
		}
		limit = n
	}
	q := hearth.HistoryQuery{Conversation: id, After: after}
	if after == "" {
		q.Limit = limit // the newest
	}
	page, err := d.core.History(c.r.Context(), q)
	if err != nil {
		return err
	}
	if len(page.Records) > limit { // the oldest after the turn
		page.Records, page.More = page.Records[:limit], true
	}
	info, err := d.core.Conversation(id)
	if err != nil {
		return err
	}
	out := conversationHistory{conversationJSON: toConversationJSON(info), Messages: make([]historyTurn, 0, len(page.Records)), More: page.More, RequestID: c.id}
	for _, r := range page.Records {
		t := historyTurn{ID: r.ID, Role: r.Role, Content: r.Text, TS: r.TS, Mode: r.Mode, Incomplete: r.Incomplete}
		if t.Mode == "" {
			t.Mode = "text"
		}
		if r.Tool != nil {
			t.Tool = r.Tool.Name
		}
		out.Messages = append(out.Messages, t)
	}
	writeJSON(c, http.StatusOK, out)
	return nil
}

// convName is how a log or a transcript names conversation conv.
func convName(conv string) string {
	if conv == "" {
		return hearth.MainConversation
	}
	return conv
}
