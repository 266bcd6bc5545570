package tui

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/mnemo/mnemo/ipc"
)

func TestMain(m *testing.M) {
	// Fixed colors and background: snapshots do not depend on the
	// terminal the tests run in.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	os.Exit(m.Run())
}

// stub is the test Backend: it records what the UI sends.
type stub struct {
	mu   sync.Mutex
	sent []ipc.Msg
}

func (s *stub) Send(m ipc.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
}

func (s *stub) all() []ipc.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ipc.Msg(nil), s.sent...)
}

// messages returns the sent messages of type T.
func sentOf[T ipc.Msg](s *stub) []T {
	var out []T
	for _, m := range s.all() {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

var epoch = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ticks records the tickers the model starts; their commands never fire
// by themselves: tests deliver frameMsg and secondMsg when they choose.
type ticks struct {
	mu     sync.Mutex
	frames int
	second int
}

func (tk *ticks) tick(d time.Duration, msg tea.Msg) tea.Cmd {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	switch msg.(type) {
	case frameMsg:
		tk.frames++
	case secondMsg:
		tk.second++
	}
	return func() tea.Msg { return nil }
}

type harness struct {
	t     testing.TB
	m     *Model
	be    *stub
	clk   *clock
	ticks *ticks
}

func newHarness(t testing.TB, w, h int) *harness {
	t.Helper()
	hs := &harness{t: t, be: &stub{}, clk: &clock{t: epoch}, ticks: &ticks{}}
	n := 0
	hs.m = New(Config{
		Backend:  hs.be,
		Addr:     "127.0.0.1:7744",
		Local:    true,
		Markdown: "dark",
		Profile:  termenv.Ascii,
		Now:      hs.clk.Now,
		Tick:     hs.ticks.tick,
		Location: time.UTC,
		NewRef:   func() string { n++; return fmt.Sprintf("r%d", n) },
	})
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

// send runs Update on each message, in order, and returns the last command.
func (hs *harness) send(msgs ...tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	for _, msg := range msgs {
		_, cmd = hs.m.Update(msg)
		hs.m.View() // as the program does after every message
	}
	return cmd
}

// connect delivers a connected state with history turns.
func (hs *harness) connect(turns ...ipc.Turn) {
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
		Turns: turns, Server: "hearth/0.1.0", Protocol: 1, ConversationID: "main",
		State: ipc.StateIdle, Provider: "xai", Model: "grok-4.3",
	}})
}

// typeText types s into the editor and presses enter if enter is set.
func (hs *harness) typeText(s string, enter bool) {
	for _, r := range s {
		if r == ' ' {
			hs.send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
			continue
		}
		hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	if enter {
		hs.send(tea.KeyMsg{Type: tea.KeyEnter})
	}
}

func (hs *harness) key(k tea.KeyType) { hs.send(tea.KeyMsg{Type: k}) }

// screen is the current frame without styling.
func (hs *harness) screen() string { return ansi.Strip(hs.m.View()) }

func (hs *harness) frame() { hs.send(frameMsg{}) }

func (hs *harness) wantScreen(substr string) {
	hs.t.Helper()
	if s := hs.screen(); !strings.Contains(s, substr) {
		hs.t.Fatalf("screen lacks %q:\n%s", substr, s)
	}
}

func (hs *harness) wantNoScreen(substr string) {
	hs.t.Helper()
	if s := hs.screen(); strings.Contains(s, substr) {
		hs.t.Fatalf("screen shows %q:\n%s", substr, s)
	}
}

// ids for turns: ULID-like strings that sort by n.
func tid(n int) string { return fmt.Sprintf("01KAK3J7Y0%016d", n) }

func userTurn(n int, text string) ipc.Turn {
	return ipc.Turn{ID: tid(n), Role: ipc.RoleUser, Content: text, TS: epoch.Add(time.Duration(n) * time.Minute), Mode: ipc.ModeText}
}

func agentTurn(n int, text string) ipc.Turn {
	return ipc.Turn{ID: tid(n), Role: ipc.RoleAgent, Content: text, TS: epoch.Add(time.Duration(n) * time.Minute), Mode: ipc.ModeText}
}

func countOf(s, sub string) int { return strings.Count(s, sub) }

// checkFrame asserts that every line of the frame fits the window.
func checkFrame(t testing.TB, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > h {
		t.Errorf("frame has %d lines, window %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got > w {
			t.Errorf("line %d is %d wide, window %d: %q", i, got, w, ansi.Strip(l))
		}
	}
}
