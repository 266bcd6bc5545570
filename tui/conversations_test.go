package tui

import (
	"strings"
	"testing"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
)

// TestConversationCommands: /new, /conversations and /resume send their
// requests; the History that answers replaces the view and the status
// bar names the conversation; main's is not named.
func TestConversationCommands(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
		Turns: []ipc.Turn{userTurn(1, "hello on main"), agentTurn(2, "hi there")}, Server: "hearth/0.1.0", Protocol: 1,
		ConversationID: "main", State: ipc.StateIdle, Features: []string{"conversations"},
	}})
	hs.wantScreen("hello on main")
	hs.wantNoScreen("conversation main")

	hs.typeText("/new trip", true)
	nc := sentOf[*ipc.NewConversation](hs.be)
	if len(nc) != 1 || nc[0].ConversationID != "trip" || nc[0].Ref == "" {
		t.Fatalf("sent %+v", nc)
	}
	hs.send(&ipc.History{ConversationID: "trip", Ref: nc[0].Ref, Server: "hearth/0.1.0", Protocol: 1, State: ipc.StateIdle, Features: []string{"conversations"}})
	hs.wantNoScreen("hello on main")
	hs.wantScreen("conversation trip")
	hs.wantNoScreen("may be missing") // a switch is no gap

	hs.typeText("/conversations", true)
	cl := sentOf[*ipc.Conversations](hs.be)
	if len(cl) != 1 {
		t.Fatalf("sent %+v", hs.be.all())
	}
	hs.send(&ipc.ConversationList{Ref: cl[0].Ref, Current: "trip", Conversations: []ipc.ConversationInfo{
		{ID: "trip", Title: "Lisbon in May?", Turns: 2, LastActive: epoch},
		{ID: "main", Title: "hello on main", Turns: 2, LastActive: epoch},
	}})
	hs.wantScreen("▸ trip — Lisbon in May? · 2 turns")
	hs.wantScreen("  main — hello on main")

	hs.typeText("/resume", true)
	hs.wantScreen("usage: /resume ID")
	hs.typeText("/resume main", true)
	rs := sentOf[*ipc.Resume](hs.be)
	if len(rs) != 1 || rs[0].ConversationID != "main" {
		t.Fatalf("sent %+v", rs)
	}
	hs.send(&ipc.History{ConversationID: "main", Ref: rs[0].Ref, Turns: []ipc.Turn{userTurn(1, "hello on main"), agentTurn(2, "hi there")},
		Server: "hearth/0.1.0", Protocol: 1, State: ipc.StateIdle, Features: []string{"conversations"}})
	hs.wantScreen("hello on main")
	hs.wantNoScreen("conversation trip")

	// An unknown id: hearth's error is shown.
	hs.typeText("/resume nope", true)
	ref := sentOf[*ipc.Resume](hs.be)[1].Ref
	hs.send(&ipc.Error{Code: ipc.CodeConversationNotFound, Message: `no conversation has the id "nope"`, Ref: ref})
	hs.wantScreen(`no conversation has the id "nope"`)
}

// TestConversationCommandsUnsupported: a hearth that lists its features
// without conversations is not asked.
func TestConversationCommandsUnsupported(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{ConversationID: "main", Server: "hearth/0.1.0", Protocol: 1, Features: []string{"cancel"}}})
	hs.typeText("/conversations", true)
	if n := len(sentOf[*ipc.Conversations](hs.be)); n != 0 {
		t.Fatalf("sent %d conversations requests", n)
	}
	hs.wantScreen("does not support conversations")
}

// TestConversationSwitchWaitsForVoice: with voice on, /new and /resume
// say to stop it first and ask hearth nothing (the session's transcripts
// belong to the conversation it started in); /conversations still lists.
func TestConversationSwitchWaitsForVoice(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{ConversationID: "main", Server: "hearth/0.1.0", Protocol: 1,
		State: ipc.StateIdle, Features: []string{"conversations", "voice"}}})
	hs.m.voice = &voiceUI{desk: voicectl.New(voicectl.Config{})}
	for _, cmd := range []string{"/new trip", "/resume trip"} {
		hs.typeText(cmd, true)
		if !hs.m.flash.err || !strings.Contains(hs.m.flash.text, "/voice stops it") {
			t.Errorf("%s with voice on: status %q", cmd, hs.m.flash.text)
		}
	}
	if n := len(sentOf[*ipc.NewConversation](hs.be)) + len(sentOf[*ipc.Resume](hs.be)); n != 0 {
		t.Errorf("sent %d switches with voice on", n)
	}
	hs.typeText("/conversations", true)
	if n := len(sentOf[*ipc.Conversations](hs.be)); n != 1 {
		t.Errorf("sent %d conversation lists with voice on, want 1", n)
	}
}
