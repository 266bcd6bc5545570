package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/ipc"
)

func TestStreamingCoalescedToFrames(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.typeText("hello", true)
	msgs := sentOf[*ipc.Message](hs.be)
	if len(msgs) != 1 || msgs[0].Content != "hello" || msgs[0].Ref == "" {
		t.Fatalf("sent %+v, want one message hello with a ref", msgs)
	}
	hs.wantScreen("sending…")
	hs.send(&ipc.TurnStored{Turn: userTurn(1, "hello"), Ref: msgs[0].Ref})
	hs.wantNoScreen("sending…")
	if hs.ticks.frames != 0 {
		t.Errorf("%d frame ticks while idle, want none", hs.ticks.frames)
	}

	hs.send(&ipc.Status{State: ipc.StateThinking})
	hs.wantScreen("thinking")
	hs.send(&ipc.Token{Content: "Hel"})
	frames := hs.ticks.frames
	if frames == 0 {
		t.Fatalf("streaming started no frame ticker")
	}
	before := hs.m.Repaints()
	for _, tok := range []string{"lo, ", "**wor", "ld**"} {
		hs.send(&ipc.Token{Content: tok})
	}
	if got := hs.m.Repaints(); got != before {
		t.Errorf("tokens repainted %d times before the frame, want 0", got-before)
	}
	if hs.ticks.frames != frames {
		t.Errorf("tokens started %d more tickers, want one running ticker", hs.ticks.frames-frames)
	}
	hs.wantNoScreen("Hello, world")
	hs.frame()
	hs.wantScreen("Hello, world")
	if got := hs.m.Repaints(); got != before+1 {
		t.Errorf("frame repainted %d times, want 1", got-before)
	}

	hs.send(&ipc.Done{Turn: agentTurn(2, "Hello, **world**"), Usage: &ipc.Usage{InputTokens: 812, OutputTokens: 9}, Model: "grok-4.3"},
		&ipc.Status{State: ipc.StateIdle})
	s := hs.screen()
	if n := countOf(s, "Hello, world"); n != 1 {
		t.Errorf("reply shown %d times after done, want 1:\n%s", n, s)
	}
	hs.wantScreen("812 in · 9 out")
	hs.wantScreen("xai · grok-4.3")
	// The ticker stops once nothing moves.
	frames = hs.ticks.frames
	hs.frame()
	if hs.ticks.frames != frames {
		t.Errorf("frame ticker still running after the reply")
	}
}

// An agent step (text beside tool calls) is stored before its tools run;
// the text that streamed is shown once, and the answer streams after it.
func TestAgentStepDuringStream(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect(userTurn(1, "what tea?"))
	hs.send(&ipc.Token{Content: "let me look"})
	hs.frame()
	step := agentTurn(2, "let me look")
	step.ToolCalls = []ipc.ToolCall{{ID: "c1", Name: "lookup"}}
	hs.send(&ipc.TurnStored{Turn: step, Ref: "r"})
	hs.send(&ipc.Token{Content: "green tea"})
	hs.frame()
	if s := hs.screen(); countOf(s, "let me look") != 1 || countOf(s, "green tea") != 1 {
		t.Errorf("mid-answer the step text shows %d times and the answer %d, want 1 each:\n%s", countOf(s, "let me look"), countOf(s, "green tea"), s)
	}
	hs.send(&ipc.Done{Turn: agentTurn(4, "green tea")})
	s := hs.screen()
	if n := countOf(s, "let me look"); n != 1 {
		t.Errorf("step text shown %d times, want 1:\n%s", n, s)
	}
	if n := countOf(s, "green tea"); n != 1 {
		t.Errorf("answer shown %d times, want 1:\n%s", n, s)
	}
}

func TestStreamFromAnotherClient(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect(userTurn(1, "earlier"))
	hs.send(&ipc.TurnStored{Turn: userTurn(2, "from the other window"), Ref: "theirs"})
	hs.wantScreen("from the other window")
	hs.send(&ipc.Token{Content: "answer to them"})
	hs.frame()
	hs.wantScreen("answer to them")
	hs.send(&ipc.Done{Turn: agentTurn(3, "answer to them")})
	if n := countOf(hs.screen(), "answer to them"); n != 1 {
		t.Errorf("shown %d times", n)
	}
}

func TestReconnectResyncsWithoutDuplicates(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect(userTurn(1, "first question"), agentTurn(2, "first answer"))
	hs.wantScreen("● connected")

	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 2, Retry: 3 * time.Second, Err: errors.New("EOF")})
	hs.wantScreen("reconnecting in 3s (attempt 2)")
	hs.wantScreen("lost the connection to hearth")
	if hs.ticks.second == 0 {
		t.Errorf("no second ticker for the countdown")
	}
	hs.clk.Add(2 * time.Second)
	hs.send(secondMsg{})
	hs.wantScreen("reconnecting in 1s (attempt 2)")
	// A second failed attempt does not add another notice, but a refused
	// dial says how to start hearth.
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 3, Retry: time.Second, Err: errors.New("timeout")})
	if n := countOf(hs.screen(), "lost the connection"); n != 1 {
		t.Errorf("outage notice shown %d times", n)
	}
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 4, Retry: time.Second, Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)})
	hs.wantNoScreen("lost the connection")
	hs.wantScreen("hearth is not running on 127.0.0.1:7744")

	// The fresh history overlaps what we have and adds what was missed.
	hs.connect(userTurn(1, "first question"), agentTurn(2, "first answer"), userTurn(3, "asked elsewhere"), agentTurn(4, "answered while away"))
	s := hs.screen()
	for _, want := range []string{"first question", "first answer", "asked elsewhere", "answered while away"} {
		if n := countOf(s, want); n != 1 {
			t.Errorf("%q shown %d times, want 1:\n%s", want, n, s)
		}
	}
	hs.wantScreen("● resynced")
	hs.wantScreen("reconnected · resynced · 2 new turns")
	if strings.Index(s, "asked elsewhere") < strings.Index(s, "first answer") {
		t.Errorf("merged turns out of order:\n%s", s)
	}
	hs.clk.Add(resyncedTTL + time.Second)
	hs.send(secondMsg{})
	hs.wantScreen("● connected")
}

func TestReconnectMidReplyReplacesStream(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect(userTurn(1, "q"))
	hs.send(&ipc.Status{State: ipc.StateThinking}, &ipc.Token{Content: "partial "})
	hs.frame()
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: errors.New("EOF")})
	// hearth kept streaming while we were away: the snapshot has it all.
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
		Turns: []ipc.Turn{userTurn(1, "q")}, State: ipc.StateThinking, Pending: "partial reply so far",
	}})
	hs.frame()
	s := hs.screen()
	if n := countOf(s, "partial"); n != 1 {
		t.Errorf("stream shown %d times after resync:\n%s", n, s)
	}
	hs.wantScreen("partial reply so far")
}

func TestUnacknowledgedMessageAfterReconnect(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(fmt.Sprintf("stored=%v", stored), func(t *testing.T) {
			hs := newHarness(t, 80, 24)
			hs.connect(userTurn(1, "before"))
			hs.typeText("did it arrive?", true)
			hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: errors.New("EOF")})
			turns := []ipc.Turn{userTurn(1, "before")}
			if stored {
				turns = append(turns, userTurn(2, "did it arrive?"))
			}
			hs.connect(turns...)
			msgs := sentOf[*ipc.Message](hs.be)
			wantSends := 2
			if stored {
				wantSends = 1
			}
			if len(msgs) != wantSends {
				t.Errorf("sent %d times, want %d", len(msgs), wantSends)
			}
			if len(msgs) == 2 && msgs[0].Ref != msgs[1].Ref {
				t.Errorf("resent with a new ref %q, want %q", msgs[1].Ref, msgs[0].Ref)
			}
			if n := countOf(hs.screen(), "did it arrive?"); n != 1 {
				t.Errorf("message shown %d times, want 1:\n%s", n, hs.screen())
			}
		})
	}
}

func TestQueuedWhileDisconnected(t *testing.T) {
	hs := newHarness(t, 120, 24)
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)})
	hs.wantScreen("hearth is not running on 127.0.0.1:7744: start it with `hearth` or `make run`")
	hs.typeText("written offline", true)
	if n := len(sentOf[*ipc.Message](hs.be)); n != 0 {
		t.Fatalf("sent %d messages while disconnected", n)
	}
	hs.wantScreen("queued")
	hs.connect()
	msgs := sentOf[*ipc.Message](hs.be)
	if len(msgs) != 1 || msgs[0].Content != "written offline" {
		t.Fatalf("after connect sent %+v", msgs)
	}
	hs.wantScreen("hearth is up · connected")
	// The write itself fails: the message is queued again, then resent.
	hs.send(SendFailedMsg{Msg: msgs[0], Err: ipc.ErrNotConnected})
	hs.wantScreen("queued")
	hs.send(resendMsg{})
	if n := len(sentOf[*ipc.Message](hs.be)); n != 2 {
		t.Errorf("sent %d times after the retry, want 2", n)
	}
	// A failure report for an attempt that is no longer current is ignored.
	hs.send(SendFailedMsg{Msg: msgs[0], Err: ipc.ErrNotConnected})
	hs.wantScreen("sending…")
}

func TestNoTokenYet(t *testing.T) {
	hs := newHarness(t, 100, 24)
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1, Retry: time.Second, Err: ipc.ErrNoToken})
	hs.wantScreen("hearth has not run on this machine yet")
	hs.send(FatalMsg{Err: &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong token"}})
	hs.wantScreen("✗ not connected")
	hs.wantScreen("hearth refused this client: wrong token")
}

func TestResizeRewraps(t *testing.T) {
	long := strings.Repeat("word ", 60) + "\n\n- a list item that is also rather long, long enough to wrap at forty\n\n```go\nfunc main() { println(\"a code line that is much wider than forty columns\") }\n```\n"
	hs := newHarness(t, 120, 40)
	hs.connect(userTurn(1, strings.Repeat("user text ", 20)), agentTurn(2, long))
	wide := hs.m.chat.items[1].render(hs.m.renderCtx(), 118)
	for _, w := range []int{60, 40, 120} {
		hs.send(tea.WindowSizeMsg{Width: w, Height: 40})
		checkFrame(t, hs.m.View(), w, 40)
		lines := hs.m.chat.items[1].render(hs.m.renderCtx(), w)
		if w < 120 && len(lines) <= len(wide) {
			t.Errorf("at %d columns the reply has %d lines, at 118 %d: not re-wrapped", w, len(lines), len(wide))
		}
	}
	hs.send(tea.WindowSizeMsg{Width: 40, Height: 20})
	checkFrame(t, hs.m.View(), 40, 20)
}

func TestSlashCommands(t *testing.T) {
	turns := []ipc.Turn{userTurn(1, "one"), agentTurn(2, "reply one"), userTurn(3, "two"), agentTurn(4, "reply two"), userTurn(5, "three"), agentTurn(6, "reply three")}
	tests := []struct {
		name  string
		input string
		busy  bool
		check func(t *testing.T, hs *harness, cmd tea.Cmd)
	}{
		{"help", "/help", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("mnemo help")
			hs.wantScreen("/search <query>")
			hs.key(tea.KeyEsc)
			hs.wantNoScreen("mnemo help")
		}},
		{"clear", "/clear", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantNoScreen("reply three")
			hs.wantScreen("type a message")
			hs.send(&ipc.TurnStored{Turn: userTurn(7, "after clear")})
			hs.wantScreen("after clear")
			hs.wantNoScreen("reply three")
		}},
		{"history N", "/history 2", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("three")
			hs.wantScreen("reply three")
			hs.wantNoScreen("reply two")
			hs.wantScreen("showing the last 2 messages")
		}},
		{"history all", "/history", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("reply one")
			hs.wantScreen("showing all 6 messages")
		}},
		{"history bad", "/history x", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("usage: /history N")
		}},
		{"search", "/search garden plans", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			s := sentOf[*ipc.Search](hs.be)
			if len(s) != 1 || s[0].Query != "garden plans" || s[0].Ref == "" {
				t.Fatalf("sent %+v", s)
			}
			hs.wantScreen("search: garden plans")
			hs.wantScreen("searching…")
			hs.send(&ipc.SearchResults{Ref: s[0].Ref, Results: []ipc.SearchHit{{Turn: turns[2], Score: 3.2}, {Turn: turns[3], Score: 1.5}}})
			hs.wantScreen("3.20")
			hs.wantScreen("reply two")
			hs.key(tea.KeyDown)
			hs.key(tea.KeyEnter)
			hs.wantNoScreen("search: garden")
		}},
		{"search empty", "/search", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("usage: /search <query>")
		}},
		{"search with filters", "/search role:user since:2026-11-01 garden plans", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			s := sentOf[*ipc.Search](hs.be)
			want := &ipc.Search{Query: "garden plans", K: 10, Roles: []string{ipc.RoleUser}, Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
			if len(s) != 1 || s[0].Ref == "" {
				t.Fatalf("sent %+v", s)
			}
			want.Ref = s[0].Ref
			if diff := cmp.Diff(want, s[0]); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			hs.wantScreen("search: role:user since:2026-11-01 garden")
			tool := ipc.Turn{ID: tid(9), Role: ipc.RoleTool, Content: "rain for the garden", TS: epoch, Mode: ipc.ModeText}
			hs.send(&ipc.SearchResults{Ref: s[0].Ref, Results: []ipc.SearchHit{{Turn: turns[2], Score: 3.2, Kind: ipc.KindTurn, Channel: "chat"}, {Turn: tool, Score: 1.5, Kind: ipc.KindTool, Channel: "weather"}}})
			hs.wantScreen("tool weather")
			hs.wantScreen("rain for the garden")
		}},
		{"search knowledge", "/search kind:knowledge lisbon", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			s := sentOf[*ipc.Search](hs.be)
			if len(s) != 1 || !slices.Equal(s[0].Kinds, []string{ipc.KindKnowledge}) {
				t.Fatalf("sent %+v", s)
			}
			sec := ipc.Turn{ID: "note:01N#1", Content: "## Home\nAna moved to Lisbon.", TS: epoch, Mode: ipc.ModeText}
			hs.send(&ipc.SearchResults{Ref: s[0].Ref, Results: []ipc.SearchHit{{Turn: sec, Score: 2, Kind: ipc.KindKnowledge, Path: "knowledge/people/ana.md", Heading: "Home", Status: "active", Confidence: 0.9}}})
			hs.wantScreen("note knowledge/people/ana.md")
			hs.wantScreen("Ana moved to Lisbon.")
		}},
		{"search bad filter", "/search role:bot garden", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("role:bot is not one of user, agent, tool")
			if s := sentOf[*ipc.Search](hs.be); len(s) != 0 {
				t.Errorf("sent %+v despite the bad filter", s)
			}
		}},
		{"model", "/model", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("provider xai · model grok-4.3 · hearth/0.1.0")
		}},
		{"cancel idle", "/cancel", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("nothing to cancel")
			if n := len(sentOf[*ipc.Cancel](hs.be)); n != 0 {
				t.Errorf("sent %d cancels", n)
			}
		}},
		{"cancel busy", "/cancel", true, func(t *testing.T, hs *harness, _ tea.Cmd) {
			if n := len(sentOf[*ipc.Cancel](hs.be)); n != 1 {
				t.Errorf("sent %d cancels, want 1", n)
			}
			hs.wantScreen("cancelling the reply")
		}},
		{"voice", "/voice", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("this build of mnemo has no audio")
		}},
		{"tools", "/tools", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("no tool calls yet")
		}},
		{"timestamps", "/timestamps", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("you · 06:05")
		}},
		{"quit", "/quit", false, func(t *testing.T, hs *harness, cmd tea.Cmd) {
			if cmd == nil {
				t.Fatal("no command")
			}
			if _, ok := cmd().(tea.QuitMsg); !ok {
				t.Errorf("/quit did not quit")
			}
		}},
		{"unknown", "/frobnicate", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			hs.wantScreen("unknown command /frobnicate")
		}},
		{"slash escape", "//etc/hosts is a file", false, func(t *testing.T, hs *harness, _ tea.Cmd) {
			m := sentOf[*ipc.Message](hs.be)
			if len(m) != 1 || m[0].Content != "/etc/hosts is a file" {
				t.Errorf("sent %+v", m)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, 120, 40)
			hs.connect(turns...)
			if tt.busy {
				hs.send(&ipc.Status{State: ipc.StateThinking})
			}
			hs.typeText(tt.input, false)
			// Enter is pressed with the completion popup closed.
			hs.m.comp.matches = nil
			cmd := hs.send(tea.KeyMsg{Type: tea.KeyEnter})
			tt.check(t, hs, cmd)
			checkFrame(t, hs.m.View(), 120, 40)
		})
	}
}

func TestCompletion(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.typeText("/h", false)
	hs.wantScreen("/help")
	hs.wantScreen("/history [N]")
	hs.key(tea.KeyTab)
	if v := hs.m.in.value(); v != "/help" {
		t.Errorf("tab completed to %q, want /help", v)
	}
	hs.m.in.set("/h")
	hs.m.comp.refresh("/h")
	hs.key(tea.KeyDown)
	hs.key(tea.KeyTab)
	if v := hs.m.in.value(); v != "/history " {
		t.Errorf("down, tab completed to %q, want \"/history \"", v)
	}
	hs.wantNoScreen("keys and commands") // popup gone once arguments start

	hs.m.in.set("")
	hs.m.comp.refresh("")
	hs.typeText("/mo", false)
	hs.key(tea.KeyEnter) // enter runs the only match
	hs.wantScreen("provider xai")

	hs.typeText("/he", false)
	hs.key(tea.KeyEsc)
	hs.wantNoScreen("keys and commands")
}

func TestErrorsFade(t *testing.T) {
	hs := newHarness(t, 100, 24)
	hs.connect()
	hs.send(&ipc.Error{Code: ipc.CodeProviderError, Message: "the model provider failed; try again"})
	hs.wantScreen("✗ the model provider failed")
	if hs.ticks.second == 0 {
		t.Fatal("no ticker to fade the error")
	}
	hs.clk.Add(flashFade + 500*time.Millisecond)
	hs.send(secondMsg{})
	hs.wantScreen("the model provider failed") // fading, still there
	hs.clk.Add(flashTTL - flashFade)
	hs.send(secondMsg{})
	if strings.Contains(lastLine(hs.screen(), 2), "the model provider failed") {
		t.Errorf("error still in the status bar after %v", flashTTL)
	}
	// The conversation keeps a notice of it.
	hs.wantScreen("✗ the model provider failed")
	seconds := hs.ticks.second
	hs.send(secondMsg{})
	if hs.ticks.second != seconds {
		t.Errorf("second ticker still running with nothing to count")
	}
}

// lastLine returns the n-th line from the end (1 is the last).
func lastLine(s string, n int) string {
	lines := strings.Split(s, "\n")
	return lines[len(lines)-n]
}

func TestConfirmPrompt(t *testing.T) {
	req := func(id string, expires time.Duration) *ipc.ConfirmRequest {
		return &ipc.ConfirmRequest{ID: id, Name: "fs_write", Arguments: map[string]any{"path": "notes.md"}, Reason: "save the notes", Effect: "writes_local", ExpiresAt: epoch.Add(expires)}
	}
	t.Run("approve", func(t *testing.T) {
		hs := newHarness(t, 100, 30)
		hs.connect()
		hs.send(req("call_1", 30*time.Second))
		hs.wantScreen("allow fs_write path=notes.md")
		hs.wantScreen("expires in 30s")
		hs.wantScreen("awaiting confirmation")
		hs.clk.Add(10 * time.Second)
		hs.send(secondMsg{})
		hs.wantScreen("expires in 20s")
		hs.typeText("y", false)
		c := sentOf[*ipc.Confirm](hs.be)
		if len(c) != 1 || c[0].ID != "call_1" || !c[0].Approve {
			t.Fatalf("sent %+v, want approve call_1", c)
		}
		hs.wantNoScreen("expires in")
		hs.wantScreen("allowed fs_write")
		if v := hs.m.in.value(); v != "" {
			t.Errorf("the answer went into the editor: %q", v)
		}
		hs.send(&ipc.ToolResult{ID: "call_1", Name: "fs_write", Result: "wrote 12 bytes", DurationMS: 4, Confirmed: ptr(true)})
		hs.wantScreen("✓ fs_write")
		hs.wantScreen("wrote 12 bytes")
	})
	t.Run("deny", func(t *testing.T) {
		hs := newHarness(t, 100, 30)
		hs.connect()
		hs.send(req("call_2", 30*time.Second))
		hs.typeText("n", false)
		c := sentOf[*ipc.Confirm](hs.be)
		if len(c) != 1 || c[0].Approve {
			t.Fatalf("sent %+v, want deny", c)
		}
		hs.wantScreen("denied fs_write")
	})
	t.Run("expires", func(t *testing.T) {
		hs := newHarness(t, 100, 30)
		hs.connect()
		hs.send(req("call_3", 5*time.Second))
		hs.typeText("hello", false) // keys other than y/n do not leak
		if v := hs.m.in.value(); v != "" {
			t.Errorf("editor got %q while a confirmation was open", v)
		}
		hs.clk.Add(5 * time.Second)
		hs.send(secondMsg{})
		hs.wantNoScreen("allow fs_write")
		hs.wantScreen("no answer for fs_write in time: denied")
		if n := len(sentOf[*ipc.Confirm](hs.be)); n != 0 {
			t.Errorf("sent %d answers after expiry", n)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestUnsupportedByThisHearth(t *testing.T) {
	hs := newHarness(t, 120, 30)
	hs.connect()
	hs.typeText("/search anything", true)
	hs.send(&ipc.Error{Code: ipc.CodeUnknownType, Message: `unknown message type "search"`})
	hs.wantScreen("this hearth does not support /search yet")

	hs.key(tea.KeyEsc)
	hs.send(&ipc.Status{State: ipc.StateThinking})
	hs.key(tea.KeyEsc)
	c := sentOf[*ipc.Cancel](hs.be)
	if len(c) != 1 {
		t.Fatalf("esc while busy sent %d cancels", len(c))
	}
	hs.send(&ipc.Error{Code: ipc.CodeUnknownType, Message: `unknown message type "cancel"`, Ref: c[0].Ref})
	hs.wantScreen("this hearth does not support cancel yet")

	hs.send(&ipc.ConfirmRequest{ID: "c1", Name: "fs_write", ExpiresAt: epoch.Add(time.Minute)})
	hs.typeText("y", false)
	hs.send(&ipc.Error{Code: ipc.CodeBadRequest, Message: "bad request"})
	hs.wantScreen("this hearth does not support confirmations yet")
}

// A hearth that lists its features is taken at its word: what it does not
// list is not sent, and what it lists is not second-guessed from errors.
func TestFeaturesFromHistory(t *testing.T) {
	connectWith := func(hs *harness, features ...string) {
		hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
			Server: "hearth/0.2.0", Protocol: 1, ConversationID: "main", State: ipc.StateIdle, Features: features,
		}})
	}
	t.Run("not offered: not sent", func(t *testing.T) {
		hs := newHarness(t, 120, 30)
		connectWith(hs, "cancel", "confirm")
		hs.typeText("/search anything", true)
		hs.wantScreen("this hearth does not support /search yet")
		if n := len(sentOf[*ipc.Search](hs.be)); n != 0 {
			t.Errorf("sent %d searches to a hearth that does not offer search", n)
		}
	})
	t.Run("filters not offered", func(t *testing.T) {
		hs := newHarness(t, 120, 30)
		connectWith(hs, "search")
		hs.typeText("/search role:user tea", true)
		hs.wantScreen("this hearth does not support /search yet")
		if n := len(sentOf[*ipc.Search](hs.be)); n != 0 {
			t.Errorf("sent %d filtered searches to a hearth without search_filters", n)
		}
	})
	t.Run("offered: an error is an error", func(t *testing.T) {
		hs := newHarness(t, 120, 30)
		connectWith(hs, "search", "search_filters", "cancel")
		hs.typeText("/search anything", true)
		s := sentOf[*ipc.Search](hs.be)
		if len(s) != 1 {
			t.Fatalf("sent %d searches, want 1", len(s))
		}
		hs.send(&ipc.Error{Code: ipc.CodeBadRequest, Message: "search: since must be before until", Ref: s[0].Ref})
		hs.wantScreen("since must be before until")
		hs.wantNoScreen("does not support")
	})
	t.Run("cancel not offered", func(t *testing.T) {
		hs := newHarness(t, 120, 30)
		connectWith(hs, "search")
		hs.send(&ipc.Status{State: ipc.StateThinking})
		hs.key(tea.KeyEsc)
		if n := len(sentOf[*ipc.Cancel](hs.be)); n != 0 {
			t.Errorf("sent %d cancels to a hearth that does not offer cancel", n)
		}
		hs.wantScreen("this hearth does not support cancel yet")
	})
}

func TestCancelledReply(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect(userTurn(1, "long story please"))
	hs.send(&ipc.Status{State: ipc.StateThinking}, &ipc.Token{Content: "Once upon"})
	hs.key(tea.KeyEsc)
	c := sentOf[*ipc.Cancel](hs.be)
	if len(c) != 1 {
		t.Fatalf("sent %d cancels", len(c))
	}
	incomplete := agentTurn(2, "Once upon")
	incomplete.Incomplete = true
	hs.send(&ipc.Done{Turn: incomplete}, &ipc.Error{Code: ipc.CodeCancelled, Message: "cancelled", Ref: c[0].Ref}, &ipc.Status{State: ipc.StateIdle})
	hs.wantScreen("cut short")
	hs.wantScreen("reply cancelled")
	if n := countOf(hs.screen(), "Once upon"); n != 1 {
		t.Errorf("reply shown %d times", n)
	}
}

func TestToolCards(t *testing.T) {
	hs := newHarness(t, 120, 30)
	hs.connect(userTurn(1, "what time is it?"))
	hs.send(&ipc.Status{State: ipc.StateTool, Detail: "current_time"},
		&ipc.ToolCall{ID: "call_1", Name: "current_time", Arguments: map[string]any{"tz": "UTC"}, Reason: "the owner asked the time"})
	hs.wantScreen("current_time tz=UTC")
	hs.wantScreen("running 0ms")
	hs.wantScreen("the owner asked the time")
	hs.clk.Add(1500 * time.Millisecond)
	hs.frame()
	hs.wantScreen("running 1.5s")
	hs.send(&ipc.ToolResult{ID: "call_1", Name: "current_time", Result: "2026-11-22T06:00:02Z", DurationMS: 12})
	hs.wantScreen("✓ current_time")
	hs.wantScreen("12ms")
	hs.wantScreen("→ 2026-11-22T06:00:02Z")
	hs.send(&ipc.ToolCall{ID: "call_2", Name: "web_fetch", Arguments: map[string]any{"url": "https://example.com"}},
		&ipc.ToolResult{ID: "call_2", Name: "web_fetch", Error: "host not allowed", DurationMS: 3})
	hs.wantScreen("✗ web_fetch")
	hs.wantScreen("✗ host not allowed")

	// A stored tool turn replaces the live card of the same call.
	hs.send(&ipc.TurnStored{Turn: ipc.Turn{ID: tid(2), Role: ipc.RoleTool, Content: "2026-11-22T06:00:02Z", TS: epoch, Tool: &ipc.ToolResult{ID: "call_1", Name: "current_time", Result: "2026-11-22T06:00:02Z", DurationMS: 12}}})
	if n := countOf(hs.screen(), "current_time tz=UTC"); n != 1 {
		t.Errorf("card shown %d times after its turn was stored", n)
	}

	// The panel lists them.
	hs.send(tea.KeyMsg{Type: tea.KeyCtrlT})
	hs.wantScreen("│ tools")
	view := hs.screen()
	checkFrame(t, hs.m.View(), 120, 30)
	if n := countOf(view, "web_fetch"); n != 2 {
		t.Errorf("web_fetch shown %d times with the panel open, want 2 (chat and panel)", n)
	}
	hs.send(tea.KeyMsg{Type: tea.KeyCtrlT})
	hs.wantNoScreen("│ tools")

	// Tool turns from history render as cards too.
	hs2 := newHarness(t, 80, 24)
	hs2.connect(userTurn(1, "q"), ipc.Turn{ID: tid(2), Role: ipc.RoleTool, Mode: ipc.ModeText, TS: epoch, Tool: &ipc.ToolResult{ID: "x", Name: "memory_search", Arguments: map[string]any{"query": "garden"}, Result: "3 hits", DurationMS: 40}})
	hs2.wantScreen("✓ memory_search query=garden")
	hs2.wantScreen("40ms")
	hs2.send(tea.KeyMsg{Type: tea.KeyCtrlT})
	hs2.wantScreen("│ tools")
	checkFrame(t, hs2.m.View(), 80, 24)
	hs2.send(tea.KeyMsg{Type: tea.KeyCtrlT}, tea.WindowSizeMsg{Width: 60, Height: 24}, tea.KeyMsg{Type: tea.KeyCtrlT})
	hs2.wantScreen("needs a window 80 columns wide")
	hs2.wantNoScreen("│ tools")
}

func TestScrollLock(t *testing.T) {
	hs := newHarness(t, 80, 24)
	var turns []ipc.Turn
	for i := 1; i <= 60; i++ {
		turns = append(turns, userTurn(i, fmt.Sprintf("message number %d", i)))
	}
	hs.connect(turns...)
	hs.wantScreen("message number 60")
	hs.key(tea.KeyPgUp)
	if hs.m.chat.follow {
		t.Fatal("still following after page up")
	}
	hs.wantNoScreen("message number 60")
	before := hs.screen()
	hs.send(&ipc.TurnStored{Turn: userTurn(61, "message number 61")})
	after := hs.screen()
	if firstLine(before) != firstLine(after) {
		t.Errorf("new output moved a scrolled view: %q → %q", firstLine(before), firstLine(after))
	}
	hs.wantScreen("new messages")
	hs.wantNoScreen("message number 61")

	// Mouse wheel scrolls too.
	top := hs.m.chat.top
	hs.send(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelUp})
	if hs.m.chat.top == top {
		t.Errorf("wheel up did not scroll")
	}
	hs.send(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelDown})
	if hs.m.chat.top != top {
		t.Errorf("wheel down did not scroll back: %+v, want %+v", hs.m.chat.top, top)
	}
	hs.send(tea.KeyMsg{Type: tea.KeyCtrlEnd})
	hs.wantScreen("message number 61")
	hs.wantNoScreen("new messages")

	// Scrolling down to the end follows again.
	hs.key(tea.KeyPgUp)
	hs.key(tea.KeyPgDown)
	hs.key(tea.KeyPgDown)
	if !hs.m.chat.follow {
		t.Errorf("not following after scrolling back down")
	}
	// Sending jumps to the end.
	hs.key(tea.KeyPgUp)
	hs.typeText("mine", true)
	if !hs.m.chat.follow {
		t.Errorf("sending did not jump to the end")
	}
	// Top and back.
	hs.send(tea.KeyMsg{Type: tea.KeyCtrlHome})
	hs.wantScreen("message number 1\n")
	hs.key(tea.KeyEsc)
	hs.wantScreen("mine")
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func TestInputHistoryAndNewlines(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.typeText("one", true)
	hs.typeText("two", true)
	hs.typeText("dra", false)
	for _, step := range []struct {
		k    tea.KeyType
		want string
	}{{tea.KeyUp, "two"}, {tea.KeyUp, "one"}, {tea.KeyUp, "one"}, {tea.KeyDown, "two"}, {tea.KeyDown, "dra"}} {
		hs.key(step.k)
		if v := hs.m.in.value(); v != step.want {
			t.Fatalf("after %v: editor %q, want %q", step.k, v, step.want)
		}
	}
	hs.m.in.reset()
	hs.typeText("line one", false)
	hs.send(tea.KeyMsg{Type: tea.KeyEnter, Alt: true})
	hs.typeText("line two", false)
	hs.send(tea.KeyMsg{Type: tea.KeyCtrlJ})
	hs.typeText("line three", false)
	if h := hs.m.in.height(); h != 3 {
		t.Errorf("editor is %d rows for 3 lines", h)
	}
	// Up on a lower line moves the cursor, not the history.
	hs.key(tea.KeyUp)
	if v := hs.m.in.value(); v != "line one\nline two\nline three" {
		t.Errorf("up on line 3 changed the editor to %q", v)
	}
	hs.key(tea.KeyEnter)
	m := sentOf[*ipc.Message](hs.be)
	if got := m[len(m)-1].Content; got != "line one\nline two\nline three" {
		t.Errorf("sent %q", got)
	}
}

func TestLargePaste(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "pasted line %d with some text on it\n", i)
	}
	paste := b.String()
	hs.typeText("what is in this log?", false)
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(paste), Paste: true})
	hs.wantScreen(fmt.Sprintf("pasted #1 · 3001 lines · %s", byteSize(len(paste))))
	if v := hs.m.in.value(); v != "what is in this log?" {
		t.Fatalf("a large paste went into the editor: %d bytes", len(v))
	}
	checkFrame(t, hs.m.View(), 80, 24)
	// A small paste goes inline, newlines and all.
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("\nsmall\npaste"), Paste: true})
	if v := hs.m.in.value(); v != "what is in this log?\nsmall\npaste" {
		t.Fatalf("editor holds %q", v)
	}
	hs.key(tea.KeyEnter)
	m := sentOf[*ipc.Message](hs.be)
	if want := "what is in this log?\nsmall\npaste\n\n" + paste; len(m) != 1 || m[0].Content != want {
		t.Fatalf("sent %d messages; content intact: %v", len(m), len(m) == 1 && m[0].Content == want)
	}
	hs.wantNoScreen("pasted #1")
	hs.send(&ipc.TurnStored{Turn: userTurn(1, m[0].Content), Ref: m[0].Ref})
	hs.wantScreen(fmt.Sprintf("… %d more lines", strings.Count(m[0].Content, "\n")+1-maxUserLines))

	// Backspace on an empty editor drops the paste.
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(paste), Paste: true})
	hs.wantScreen("pasted #1")
	hs.key(tea.KeyBackspace)
	hs.wantNoScreen("pasted #1")

	// Over the line limit: refused.
	huge := strings.Repeat("x", ipc.MaxLineBytes)
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(huge), Paste: true})
	hs.wantScreen("paste too large")
	hs.wantNoScreen("pasted #1")
}

// Typing stays fast however much was pasted.
func TestTypingAfterLargePaste(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(strings.Repeat("line of a big paste\n", 5000)), Paste: true})
	allocs := testing.AllocsPerRun(20, func() {
		hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a")})
	})
	if allocs > 2000 {
		t.Errorf("a keystroke after a large paste allocates %v times", allocs)
	}
}

func TestHearthErrors(t *testing.T) {
	hs := newHarness(t, 100, 24)
	hs.connect()
	hs.typeText("hello", true)
	ref := sentOf[*ipc.Message](hs.be)[0].Ref
	hs.send(&ipc.Error{Code: ipc.CodeUnavailable, Message: "the turn queue is full", Ref: ref})
	hs.wantScreen("not delivered: the turn queue is full")
	hs.send(&ipc.Error{Code: ipc.CodeNoProvider, Message: "no model provider is configured: set XAI_API_KEY"})
	hs.wantScreen("✗ no model provider is configured: set XAI_API_KEY")
	hs.send(&ipc.Error{Code: ipc.CodeShuttingDown, Message: "hearth is stopping"})
	hs.wantScreen("hearth is shutting down")
}

func TestUntrustedTextIsSanitized(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect(userTurn(1, "red \x1b[31malert\x1b[0m and \x1b]0;title\x07 bell\x07 tab\tend"))
	hs.send(&ipc.Token{Content: "\x1b[2Jwiped?"})
	hs.frame()
	v := hs.m.View()
	for _, bad := range []string{"\x1b[31m", "\x1b]0;", "\x07", "\x1b[2J"} {
		if strings.Contains(v, bad) {
			t.Errorf("frame carries %q from the wire", bad)
		}
	}
	hs.wantScreen("red alert and  bell tab    end")
	hs.wantScreen("wiped?")
}

func TestVoiceAndNotices(t *testing.T) {
	hs := newHarness(t, 80, 24)
	voice := userTurn(1, "remind me to water the plants")
	voice.Mode = ipc.ModeVoice
	agentVoice := agentTurn(2, "I will *remind* you")
	agentVoice.Mode = ipc.ModeVoice
	hs.connect(voice, agentVoice)
	hs.wantScreen("you · voice")
	hs.wantScreen("mnemo · voice")
	hs.wantScreen("I will *remind* you") // transcripts are not Markdown
}

func TestTinyWindow(t *testing.T) {
	hs := newHarness(t, 10, 4)
	if v := ansi.Strip(hs.m.View()); !strings.Contains(v, "window") {
		t.Errorf("tiny window shows %q", v)
	}
	checkFrame(t, hs.m.View(), 10, 4)
}

// Text typed faster than the terminal is read arrives as one message whose
// String() may spell a key: it is text all the same.
func TestTypedBurstIsText(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.send(&ipc.Status{State: ipc.StateThinking})
	for _, w := range []string{"turn", " ", "left", " ", "then", " ", "up", " ", "esc", " ", "enter", " ", "tab"} {
		if w == " " {
			hs.send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
			continue
		}
		hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(w)})
	}
	if v := hs.m.in.value(); v != "turn left then up esc enter tab" {
		t.Errorf("editor holds %q", v)
	}
	if n := len(sentOf[*ipc.Cancel](hs.be)); n != 0 {
		t.Errorf("typing esc sent %d cancels", n)
	}
}

func TestStamps(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-time.Hour), "08:00"},
		{now.Add(-24 * time.Hour), "Nov 21 09:00"},
		{now.AddDate(-1, 0, 0), "2025-11-22 09:00"},
	} {
		if got := stamp(tt.t, now); got != tt.want {
			t.Errorf("stamp(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
