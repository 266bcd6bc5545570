package ndjson

import (
	"context"
	"errors"
	"slices"
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

// TestVoiceInAConversation: a client on a conversation other than main
// gets a credential whose injection holds that conversation's turns, and
// its transcripts go there: it sees them stored, the conversation's
// history holds them, and a client on main sees none of it.
func TestVoiceInAConversation(t *testing.T) {
	th := startHearth(t, "", func(c *testConfig) { c.Model = newScriptModel(); c.Voice = staticMinter{} })
	onMain, c := dial(t, th.addr), dial(t, th.addr)
	send := func(m ipc.Msg) {
		t.Helper()
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	send(&ipc.NewConversation{ConversationID: "trip", Ref: "n1"})
	recvUntil(t, c, func(m ipc.Msg) bool { h, ok := m.(*ipc.History); return ok && h.Ref == "n1" })
	send(&ipc.Message{Content: "Lisbon in May?", Ref: "m1"})
	recvUntil(t, c, isDone)

	send(&ipc.VoiceRequest{Ref: "v1"})
	got := recvUntil(t, c, func(m ipc.Msg) bool {
		switch m := m.(type) {
		case *ipc.VoiceCredential:
			return m.Ref == "v1"
		case *ipc.Error:
			return m.Ref == "v1"
		}
		return false
	})
	cred, ok := got[len(got)-1].(*ipc.VoiceCredential)
	if !ok {
		t.Fatalf("voice_request on trip: %+v", got[len(got)-1])
	}
	if !strings.Contains(cred.Instructions, "Lisbon in May?") {
		t.Errorf("the credential's instructions lack trip's turn:\n%s", cred.Instructions)
	}
	send(&ipc.Transcript{Role: ipc.RoleUser, Text: "and the Algarve after?", Ref: "t1"})
	got = recvUntil(t, c, func(m ipc.Msg) bool { s, ok := m.(*ipc.TurnStored); return ok && s.Ref == "t1" })
	if s := got[len(got)-1].(*ipc.TurnStored); s.Turn.Mode != ipc.ModeVoice {
		t.Errorf("transcript stored as %+v", s.Turn)
	}
	send(&ipc.StopVoice{})

	send(&ipc.HistoryQuery{ConversationID: "trip", Ref: "h1"})
	got = recvUntil(t, c, func(m ipc.Msg) bool { p, ok := m.(*ipc.HistoryPage); return ok && p.Ref == "h1" })
	var texts []string
	for _, tr := range got[len(got)-1].(*ipc.HistoryPage).Turns {
		texts = append(texts, tr.Content)
	}
	if !slices.Contains(texts, "and the Algarve after?") {
		t.Errorf("trip's history %q lacks the transcript", texts)
	}
	if err := onMain.Send(&ipc.Ping{Ref: "p"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range recvUntil(t, onMain, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok }) {
		if s, ok := m.(*ipc.TurnStored); ok {
			t.Errorf("a client on main saw trip's turn %q", s.Turn.Content)
		}
	}
}
