package ipc

import "testing"

// TestClientRunFollowsConversation: a History received mid-connection
// (a resume) moves the client, which reconnects into that conversation;
// when hearth no longer has it, the client falls back to main at once.
func TestClientRunFollowsConversation(t *testing.T) {
	hellos := make(chan string, 10)
	h := startHearth(t, func(n int, c *srvConn) {
		hello := c.hello(t)
		if hello == nil {
			return
		}
		hellos <- hello.ConversationID
		switch n {
		case 1:
			c.w.Write(history("on main"))
			trip := history("on trip")
			trip.ConversationID, trip.Ref = "trip", "r1"
			c.w.Write(trip) // then hang up
		case 2:
			c.w.Write(&Error{Code: CodeConversationNotFound, Message: "no conversation has the id \"trip\""})
		case 3:
			c.w.Write(history("on main"))
			<-t.Context().Done() // open until the test ends
		}
	})
	c, events, _ := runClient(t, testCtx(t), h.addr)
	wantState(t, recv(t, events), StateConnecting, 0)
	wantState(t, recv(t, events), StateConnected, 0)
	if ev := recv(t, events); ev.Msg == nil || ev.Msg.(*History).ConversationID != "trip" {
		t.Fatalf("got %+v, want trip's history", ev.Event)
	}
	wantState(t, recv(t, events), StateReconnecting, 1)
	if s := wantState(t, recv(t, events), StateConnected, 0); s.History.ConversationID != "main" {
		t.Errorf("reconnected to %q", s.History.ConversationID)
	}
	for i, want := range []string{"", "trip", ""} {
		if got := recv(t, hellos); got != want {
			t.Errorf("connect %d named %q, want %q", i+1, got, want)
		}
	}
	if got := c.Conversation(); got != "main" {
		t.Errorf("Conversation() = %q", got)
	}
}
