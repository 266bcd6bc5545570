package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// reconnect takes the harness through an outage and back, to turns.
func (hs *harness) reconnect(turns ...ipc.Turn) {
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: errors.New("EOF")})
	hs.connect(turns...)
}

// statusBar is the status line of the screen (the help line is below it).
func (hs *harness) statusBar() string { return lastLine(hs.screen(), 2) }

// A resync replaces the view with the snapshot: turns hearth no longer has
// go, turns it has stay once, new ones come in.
func TestResyncReplacesTurns(t *testing.T) {
	q1, a2, q3, a4 := userTurn(1, "first question"), agentTurn(2, "first answer"), userTurn(3, "second question"), agentTurn(4, "second answer")
	for _, tc := range []struct {
		name     string
		before   []ipc.Turn
		after    []ipc.Turn
		shown    []string
		gone     []string
		noticeIs string
	}{
		{
			name: "journal lost a turn", before: []ipc.Turn{q1, a2, q3, a4}, after: []ipc.Turn{q1, a2, a4},
			shown: []string{"first question", "first answer", "second answer"}, gone: []string{"second question"},
			noticeIs: "reconnected · resynced · 1 turn no longer on hearth",
		},
		{
			name: "journal lost the newest turns", before: []ipc.Turn{q1, a2, q3, a4}, after: []ipc.Turn{q1, a2},
			shown: []string{"first question", "first answer"}, gone: []string{"second question", "second answer"},
			noticeIs: "reconnected · resynced · 2 turns no longer on hearth",
		},
		{
			name: "another hearth", before: []ipc.Turn{q1, a2}, after: []ipc.Turn{userTurn(7, "elsewhere"), agentTurn(8, "another life")},
			shown: []string{"elsewhere", "another life"}, gone: []string{"first question", "first answer"},
		},
		{
			name: "an empty hearth", before: []ipc.Turn{q1, a2}, after: nil,
			gone:     []string{"first question", "first answer"},
			noticeIs: "reconnected · resynced · 2 turns no longer on hearth",
		},
		{
			name: "nothing changed", before: []ipc.Turn{q1, a2}, after: []ipc.Turn{q1, a2},
			shown: []string{"first question", "first answer"}, noticeIs: "reconnected · resynced\n",
		},
		{
			name: "one gone, one new", before: []ipc.Turn{q1, a2, q3}, after: []ipc.Turn{q1, a2, agentTurn(5, "a new answer")},
			shown: []string{"first question", "first answer", "a new answer"}, gone: []string{"second question"},
			noticeIs: "reconnected · resynced · 1 new turn · 1 turn no longer on hearth",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect(tc.before...)
			hs.reconnect(tc.after...)
			s := hs.screen()
			for _, want := range tc.shown {
				if n := countOf(s, want); n != 1 {
					t.Errorf("%q shown %d times after the resync, want 1:\n%s", want, n, s)
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(s, g) {
					t.Errorf("%q still shown after a resync whose history lacks it:\n%s", g, s)
				}
				if hs.m.chat.byID[tidOf(tc.before, g)] != nil {
					t.Errorf("%q still indexed by id", g)
				}
			}
			if tc.noticeIs != "" {
				hs.wantScreen(tc.noticeIs)
			}
			// What comes next lands after what is there.
			hs.send(&ipc.TurnStored{Turn: userTurn(20, "and now")})
			if s := hs.screen(); !strings.HasSuffix(strings.TrimSpace(chatPart(s)), "and now") {
				t.Errorf("a new turn after the resync is not last:\n%s", s)
			}
		})
	}
}

// tidOf is the id of the turn in turns whose content is text.
func tidOf(turns []ipc.Turn, text string) string {
	for _, t := range turns {
		if t.Content == text {
			return t.ID
		}
	}
	return "?"
}

// chatPart is the screen above the rule over the editor.
func chatPart(s string) string {
	i := strings.Index(s, "────")
	if i < 0 {
		return s
	}
	return s[:i]
}

// A resync keeps what the owner has not sent: the editor's text, and a
// message queued while away.
func TestResyncKeepsUnsentInput(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect(userTurn(1, "kept"), agentTurn(2, "dropped later"))
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: errors.New("EOF")})
	hs.typeText("queued while away", true)
	hs.typeText("half written", false)
	hs.connect(userTurn(1, "kept"))
	hs.wantNoScreen("dropped later")
	hs.wantScreen("queued while away")
	if got := hs.m.in.value(); got != "half written" {
		t.Errorf("editor holds %q after the resync, want the unsent text", got)
	}
	if msgs := sentOf[*ipc.Message](hs.be); len(msgs) != 1 || msgs[0].Content != "queued while away" {
		t.Errorf("sent %+v after the resync, want the queued message", msgs)
	}
}

// A view scrolled up stays scrolled up through a resync, near where it
// was, even when the turn it was anchored on is gone.
func TestResyncKeepsScrollPosition(t *testing.T) {
	var turns []ipc.Turn
	for i := 1; i <= 60; i++ {
		turns = append(turns, userTurn(i, fmt.Sprintf("message number %d", i)))
	}
	for _, tc := range []struct {
		name     string
		dropTop  bool
		wantText string
	}{
		{name: "anchor kept"},
		{name: "anchor gone", dropTop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 80, 24)
			hs.connect(turns...)
			hs.key(tea.KeyPgUp)
			hs.key(tea.KeyPgUp)
			if hs.m.chat.follow {
				t.Fatal("still following after page up")
			}
			top := hs.m.chat.top.key.id
			i := strings.Index(tidsJoined(turns), top) / len(top+",")
			after := turns
			if tc.dropTop {
				after = append(append([]ipc.Turn(nil), turns[:i]...), turns[i+1:]...)
			}
			hs.reconnect(after...)
			if hs.m.chat.follow {
				t.Fatalf("the resync jumped a scrolled view to the end")
			}
			s := chatPart(hs.screen())
			if tc.dropTop && strings.Contains(s, turns[i].Content+"\n") {
				t.Errorf("%q still shown:\n%s", turns[i].Content, s)
			}
			// The view shows the turn after the anchor near its top.
			next := turns[i+1].Content + "\n"
			if j := strings.Index(s, next); j < 0 || strings.Count(s[:j], "\n") > 4 {
				t.Errorf("after the resync the view is not where it was (want %q near the top):\n%s", next, s)
			}
		})
	}
}

func tidsJoined(turns []ipc.Turn) string {
	var b strings.Builder
	for _, t := range turns {
		b.WriteString(t.ID + ",")
	}
	return b.String()
}

// A notice that hearth is going away (or dropped us) is about the old
// connection: it goes when the client is back.
func TestOutageNoticeClearsOnResync(t *testing.T) {
	for _, e := range []*ipc.Error{
		{Code: ipc.CodeShuttingDown, Message: "hearth is shutting down"},
		{Code: ipc.CodeSlowClient, Message: "this client fell behind"},
	} {
		t.Run(e.Code, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect(userTurn(1, "hi"))
			hs.send(e)
			want := map[string]string{ipc.CodeShuttingDown: "hearth is shutting down", ipc.CodeSlowClient: "falling behind"}[e.Code]
			if !strings.Contains(hs.statusBar(), want) {
				t.Fatalf("status bar lacks %q: %q", want, hs.statusBar())
			}
			hs.reconnect(userTurn(1, "hi"))
			if s := hs.statusBar(); strings.Contains(s, want) || !strings.Contains(s, "● resynced") {
				t.Errorf("status bar after the resync: %q, want resynced without %q", s, want)
			}
		})
	}
}

// "cancelling the reply…" lasts until the reply ends, however it ends,
// and does not come back with the next reply.
func TestCancellingNoticeClearsWhenReplyEnds(t *testing.T) {
	cut := agentTurn(2, "Once upon")
	cut.Incomplete = true
	for _, tc := range []struct {
		name string
		end  []tea.Msg
	}{
		{"done", []tea.Msg{&ipc.Done{Turn: cut}}},
		{"cancelled error", []tea.Msg{&ipc.Error{Code: ipc.CodeCancelled, Message: "cancelled", Ref: "r1"}}},
		{"idle", []tea.Msg{&ipc.Status{State: ipc.StateIdle}}},
		{"a new turn", []tea.Msg{&ipc.TurnStored{Turn: userTurn(3, "next please"), Ref: "theirs"}}},
		{"a resync", []tea.Msg{
			&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: errors.New("EOF")},
			&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{Turns: []ipc.Turn{userTurn(1, "long story please"), cut}, State: ipc.StateIdle}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect(userTurn(1, "long story please"))
			hs.send(&ipc.Status{State: ipc.StateThinking}, &ipc.Token{Content: "Once upon"})
			hs.key(tea.KeyEsc)
			if c := sentOf[*ipc.Cancel](hs.be); len(c) != 1 || c[0].Ref != "r1" {
				t.Fatalf("sent cancels %+v, want one with ref r1", c)
			}
			if !strings.Contains(hs.statusBar(), "cancelling the reply") {
				t.Fatalf("status bar lacks the cancelling notice: %q", hs.statusBar())
			}
			hs.send(tc.end...)
			if s := hs.statusBar(); strings.Contains(s, "cancelling") {
				t.Errorf("status bar still says %q after the reply ended", s)
			}
			// The next reply, start to end: never "cancelling".
			for _, msg := range []tea.Msg{
				&ipc.Status{State: ipc.StateIdle},
				&ipc.TurnStored{Turn: userTurn(5, "another"), Ref: "x"},
				&ipc.Status{State: ipc.StateThinking},
				&ipc.Token{Content: "fresh reply"},
				frameMsg{},
				&ipc.Done{Turn: agentTurn(6, "fresh reply")},
				&ipc.Status{State: ipc.StateIdle},
			} {
				hs.send(msg)
				if s := hs.statusBar(); strings.Contains(s, "cancelling") {
					t.Fatalf("status bar says %q during a later reply (at %T)", s, msg)
				}
			}
		})
	}
}
