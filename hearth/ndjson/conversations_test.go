package ndjson

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// TestConversationsOverNDJSON: a client starts a conversation, talks in
// it without the other client (on main) seeing a thing, the other lists
// it, reads its history, resumes it and talks in it, and unknown or bad
// ids are refused with the connection kept.
func TestConversationsOverNDJSON(t *testing.T) {
	th := startHearth(t, "", func(c *testConfig) { c.Model = newScriptModel() })
	a, b := dial(t, th.addr), dial(t, th.addr)
	send := func(c *ipc.Conn, m ipc.Msg) {
		t.Helper()
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	historyRef := func(ref string) func(ipc.Msg) bool {
		return func(m ipc.Msg) bool { h, ok := m.(*ipc.History); return ok && h.Ref == ref }
	}
	errorRef := func(ref string) func(ipc.Msg) bool {
		return func(m ipc.Msg) bool { e, ok := m.(*ipc.Error); return ok && e.Ref == ref }
	}

	send(b, &ipc.NewConversation{ConversationID: "trip", Ref: "n1"})
	got := recvUntil(t, b, historyRef("n1"))
	if h := got[len(got)-1].(*ipc.History); h.ConversationID != "trip" || len(h.Turns) != 0 {
		t.Fatalf("history of the new conversation: %+v", h)
	}
	send(b, &ipc.Message{Content: "Lisbon in May?", Ref: "m1"})
	got = recvUntil(t, b, isDone)
	if s := streamed(got); s != "echo: Lisbon in May?" {
		t.Errorf("trip's reply streamed %q", s)
	}

	// a, on main, saw none of it: the pong comes before anything else.
	send(a, &ipc.Ping{Ref: "p1"})
	if got := recvUntil(t, a, func(ipc.Msg) bool { return true }); got[0].Type() != ipc.TypePong {
		t.Errorf("main's client got %s before its pong: another conversation's event", got[0].Type())
	}

	send(a, &ipc.Conversations{Ref: "l1"})
	got = recvUntil(t, a, func(m ipc.Msg) bool { return m.Type() == ipc.TypeConversationList })
	list := got[len(got)-1].(*ipc.ConversationList)
	if list.Ref != "l1" || list.Current != "main" || len(list.Conversations) != 2 {
		t.Fatalf("conversation_list: %+v", list)
	}
	if c := list.Conversations[0]; c.ID != "trip" || c.Title != "Lisbon in May?" || c.Turns != 2 {
		t.Errorf("the most recent conversation listed first: %+v", c)
	}

	send(a, &ipc.HistoryQuery{ConversationID: "trip", Limit: 10, Ref: "h1"})
	got = recvUntil(t, a, func(m ipc.Msg) bool { return m.Type() == ipc.TypeHistoryPage })
	if p := got[len(got)-1].(*ipc.HistoryPage); len(p.Turns) != 2 || p.Turns[0].Content != "Lisbon in May?" {
		t.Errorf("trip's history page: %+v", p)
	}

	send(a, &ipc.Resume{ConversationID: "trip", Ref: "r1"})
	got = recvUntil(t, a, historyRef("r1"))
	if h := got[len(got)-1].(*ipc.History); h.ConversationID != "trip" || len(h.Turns) != 2 {
		t.Fatalf("history on resume: %+v", h)
	}
	// a's message goes to the conversation it follows now: b sees it.
	send(a, &ipc.Message{Content: "and June?", Ref: "m2"})
	recvUntil(t, a, isDone)
	got = recvUntil(t, b, isDone)
	if s := streamed(got); s != "echo: and June?" {
		t.Errorf("b, on trip, saw %q", s)
	}
	// A message naming main goes there, and a on trip does not see it:
	// a main client sees its reply, then a's history of main has both.
	onMain := dial(t, th.addr)
	send(a, &ipc.Message{Content: "back home", Ref: "m3", ConversationID: "main"})
	recvUntil(t, onMain, isDone)
	send(a, &ipc.HistoryQuery{ConversationID: "main", Ref: "h2"})
	got = recvUntil(t, a, func(m ipc.Msg) bool { return m.Type() == ipc.TypeHistoryPage })
	for _, m := range got {
		if ts, ok := m.(*ipc.TurnStored); ok {
			t.Errorf("a, on trip, saw main's turn %q", ts.Turn.Content)
		}
	}
	if p := got[len(got)-1].(*ipc.HistoryPage); len(p.Turns) != 2 || p.Turns[0].Content != "back home" {
		t.Errorf("main's history: %+v", p)
	}

	for _, tt := range []struct {
		msg  ipc.Msg
		ref  string
		code string
	}{
		{&ipc.Resume{ConversationID: "nope", Ref: "e1"}, "e1", ipc.CodeConversationNotFound},
		{&ipc.HistoryQuery{ConversationID: "nope", Ref: "e2"}, "e2", ipc.CodeConversationNotFound},
		{&ipc.Message{Content: "x", ConversationID: "nope", Ref: "e3"}, "e3", ipc.CodeConversationNotFound},
		{&ipc.NewConversation{ConversationID: "Bad Id", Ref: "e4"}, "e4", ipc.CodeBadRequest},
		{&ipc.NewConversation{ConversationID: "trip", Ref: "e5"}, "e5", ipc.CodeConflict},
	} {
		send(a, tt.msg)
		got := recvUntil(t, a, errorRef(tt.ref))
		if e := got[len(got)-1].(*ipc.Error); e.Code != tt.code {
			t.Errorf("%s: error %+v, want code %s", tt.msg.Type(), e, tt.code)
		}
	}
	// a is still on trip, connected.
	send(a, &ipc.Conversations{Ref: "l2"})
	got = recvUntil(t, a, func(m ipc.Msg) bool { return m.Type() == ipc.TypeConversationList })
	if l := got[len(got)-1].(*ipc.ConversationList); l.Current != "trip" {
		t.Errorf("after refusals a follows %q", l.Current)
	}

	// A minted id, and connecting straight into a conversation.
	send(b, &ipc.NewConversation{Ref: "n2"})
	got = recvUntil(t, b, historyRef("n2"))
	if id := got[len(got)-1].(*ipc.History).ConversationID; len(id) != 26 {
		t.Errorf("minted conversation id %q", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, th.addr, ipc.DialOptions{Token: testToken, ConversationID: "trip"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := c.History(); h.ConversationID != "trip" || len(h.Turns) != 4 {
		t.Errorf("connect into trip: %s with %d turns", h.ConversationID, len(h.Turns))
	}
	_, err = ipc.Dial(ctx, th.addr, ipc.DialOptions{Token: testToken, ConversationID: "nope"})
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeConversationNotFound {
		t.Errorf("connect into an unknown conversation: %v", err)
	}
}

// TestVoiceStaysOnMain: a client on another conversation is told that
// voice talks in main, not given a credential whose turns it would not
// see.
func TestVoiceStaysOnMain(t *testing.T) {
	th := startHearth(t, "", func(c *testConfig) { c.Model = newScriptModel() })
	c := dial(t, th.addr)
	c.Send(&ipc.NewConversation{ConversationID: "trip", Ref: "n1"})
	recvUntil(t, c, func(m ipc.Msg) bool { h, ok := m.(*ipc.History); return ok && h.Ref == "n1" })
	c.Send(&ipc.VoiceRequest{Ref: "v1"})
	got := recvUntil(t, c, func(m ipc.Msg) bool { e, ok := m.(*ipc.Error); return ok && e.Ref == "v1" })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeUnavailable || !strings.Contains(e.Message, "main") {
		t.Errorf("voice_request on trip: %+v", e)
	}
}
