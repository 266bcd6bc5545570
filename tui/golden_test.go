package tui

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/mnemo/mnemo/ipc"
)

// The snapshots are whole frames of the real program (teatest runs it),
// taken once the scenario's last event is on screen. Regenerate them with
//
//	go test ./tui -run TestGolden -update
//
// They are deterministic: a fixed clock, UTC, the ASCII color profile
// (set in TestMain) and glamour's "dark" style.

var goldenHistory = []ipc.Turn{
	userTurn(1, "what did we decide about the garden?"),
	agentTurn(2, "You decided to plant **tomatoes** and basil:\n\n1. dig the bed on Saturday\n2. water every morning\n\n```sh\nwater --bed north --litres 5\n```\n\nSee [the plan](https://example.com/plan)."),
	func() ipc.Turn { t := userTurn(3, "remind me to water the plants"); t.Mode = ipc.ModeVoice; return t }(),
	agentTurn(4, "I will remind you at *seven*."),
}

type goldenScenario struct {
	name  string
	sizes [][2]int
	// events are sent in order; the snapshot is taken when wait shows.
	events func() []tea.Msg
	wait   string
}

func connected(turns ...ipc.Turn) tea.Msg {
	return &ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
		Turns: turns, Server: "hearth/0.1.0", Protocol: 1, ConversationID: "main",
		State: ipc.StateIdle, Provider: "xai", Model: "grok-4.3",
	}}
}

var standard = [][2]int{{80, 24}, {120, 40}}

var goldenScenarios = []goldenScenario{
	{
		name: "empty", sizes: standard,
		events: func() []tea.Msg { return []tea.Msg{connected()} },
		wait:   "connected",
	},
	{
		name: "history", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{connected(goldenHistory...), tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t"), Alt: true}, &ipc.TurnStored{Turn: userTurn(5, "and the roses?")}}
		},
		wait: "roses?",
	},
	{
		name: "streaming", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{
				connected(goldenHistory...),
				&ipc.TurnStored{Turn: userTurn(5, "tell me about roses")},
				&ipc.Status{State: ipc.StateThinking},
				&ipc.Token{Content: "Roses like **sun** and "},
				&ipc.Token{Content: "well-drained soil.\n\n- prune in"},
				&ipc.Token{Content: " late winter\n- feed in spr"},
			}
		},
		wait: "feed in spr",
	},
	{
		name: "tool", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{
				connected(userTurn(1, "what time is it, and what's on example.com?")),
				&ipc.Status{State: ipc.StateTool, Detail: "web_fetch"},
				&ipc.ToolCall{ID: "call_1", Name: "current_time", Arguments: map[string]any{"tz": "UTC"}, Reason: "the owner asked the time"},
				&ipc.ToolResult{ID: "call_1", Name: "current_time", Result: "2026-11-22T06:00:02Z", DurationMS: 1},
				&ipc.ToolCall{ID: "call_2", Name: "web_fetch", Arguments: map[string]any{"url": "https://example.com"}},
				&ipc.ToolResult{ID: "call_2", Name: "web_fetch", Error: "host not in the allow list", DurationMS: 18},
				&ipc.ToolCall{ID: "call_3", Name: "fs_write", Arguments: map[string]any{"path": "notes.md"}},
				tea.KeyMsg{Type: tea.KeyCtrlT},
			}
		},
		wait: "fs_write",
	},
	{
		name: "error", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{
				connected(goldenHistory[:2]...),
				&ipc.Error{Code: ipc.CodeProviderError, Message: "the model provider failed; try again"},
				&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 3, Retry: 4 * time.Second, Err: errors.New("EOF")},
			}
		},
		wait: "attempt 3",
	},
	{
		name: "confirm", sizes: [][2]int{{80, 24}},
		events: func() []tea.Msg {
			return []tea.Msg{
				connected(userTurn(1, "save these notes")),
				&ipc.Status{State: ipc.StateTool, Detail: "fs_write"},
				&ipc.ConfirmRequest{ID: "call_9", Name: "fs_write", Arguments: map[string]any{"path": "notes.md"}, Reason: "save the notes", Effect: "writes_local", ExpiresAt: epoch.Add(45 * time.Second)},
			}
		},
		wait: "expires in",
	},
	{
		name: "narrow", sizes: [][2]int{{40, 20}},
		events: func() []tea.Msg {
			return []tea.Msg{connected(goldenHistory...), &ipc.Error{Code: ipc.CodeNoProvider, Message: "no model provider is configured"}}
		},
		wait: "configured",
	},
}

func TestGolden(t *testing.T) {
	for _, sc := range goldenScenarios {
		for _, size := range sc.sizes {
			t.Run(fmt.Sprintf("%s/%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				frame := snapshot(t, sc, size[0], size[1])
				checkFrame(t, frame, size[0], size[1])
				golden.RequireEqual(t, []byte(frame))
			})
		}
	}
}

// snapshot runs the program through the scenario and returns its frame.
func snapshot(t *testing.T, sc goldenScenario, w, h int) string {
	t.Helper()
	n := 0
	m := New(Config{
		Backend:  &stub{},
		Addr:     "127.0.0.1:7744",
		Local:    true,
		Markdown: "dark",
		Profile:  termenv.Ascii,
		Now:      func() time.Time { return epoch },
		Location: time.UTC,
		NewRef:   func() string { n++; return fmt.Sprintf("r%d", n) },
	})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	for _, e := range sc.events() {
		tm.Send(e)
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains([]byte(ansi.Strip(string(b))), []byte(sc.wait))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Quit()
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	return final.View()
}

// The snapshots do not depend on timing: two runs give the same frames.
func TestGoldenDeterministic(t *testing.T) {
	sc := goldenScenarios[2] // streaming: the one with a ticker
	a, b := snapshot(t, sc, 80, 24), snapshot(t, sc, 80, 24)
	if a != b {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}
