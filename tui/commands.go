package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// command is one slash command.
type command struct {
	name string // with the slash
	args string // shown in help: "N", "<query>"
	desc string
}

var commands = []command{
	{"/help", "", "keys and commands"},
	{"/clear", "", "clear the view (hearth keeps the conversation)"},
	{"/history", "[N]", "show the last N messages (all without N)"},
	{"/search", "<query>", "search memory"},
	{"/model", "", "show the provider and model"},
	{"/cancel", "", "stop the reply in flight (esc)"},
	{"/tools", "", "toggle the tool panel (ctrl+t)"},
	{"/timestamps", "", "toggle timestamps (alt+t)"},
	{"/voice", "", "talk (arrives with the voice issue)"},
	{"/quit", "", "leave mnemo (ctrl+c)"},
}

// completions returns the commands that complete input: a slash and the
// start of a name, nothing after it.
func completions(input string) []command {
	if !strings.HasPrefix(input, "/") || strings.HasPrefix(input, "//") || strings.ContainsAny(input, " \t\n") {
		return nil
	}
	var out []command
	for _, c := range commands {
		if strings.HasPrefix(c.name, input) {
			out = append(out, c)
		}
	}
	return out
}

// completion is the state of the popup above the editor.
type completion struct {
	matches   []command
	sel       int
	dismissed string // the input esc dismissed the popup for
}

func (c *completion) refresh(input string) {
	if input != c.dismissed {
		c.dismissed = ""
	}
	prev := ""
	if c.sel < len(c.matches) {
		prev = c.matches[c.sel].name
	}
	c.matches = nil
	if c.dismissed == "" {
		c.matches = completions(input)
	}
	c.sel = 0
	for i, m := range c.matches {
		if m.name == prev {
			c.sel = i
		}
	}
}

func (c *completion) visible() bool { return len(c.matches) > 0 }

func (c *completion) selected() command { return c.matches[c.sel] }

func (c *completion) move(d int) {
	if n := len(c.matches); n > 0 {
		c.sel = ((c.sel+d)%n + n) % n
	}
}

// complete replaces the input with the selected command.
func (m *Model) complete() {
	c := m.comp.selected()
	v := c.name
	if c.args != "" {
		v += " "
	}
	m.in.set(v)
	m.comp.refresh(v)
}

// runCommand runs a slash command line.
func (m *Model) runCommand(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help":
		m.overlay = overlayHelp
	case "/clear":
		m.chat.clear()
	case "/history":
		n := 0
		if arg != "" {
			v, err := strconv.Atoi(arg)
			if err != nil || v < 1 {
				m.flashErr("usage: /history N (a positive number)")
				return nil
			}
			n = v
		}
		shown := m.chat.showLast(n)
		if n > 0 {
			m.flashInfo(fmt.Sprintf("showing the last %d messages · /history shows all", shown))
		} else {
			m.flashInfo(fmt.Sprintf("showing all %d messages", shown))
		}
	case "/search":
		if arg == "" {
			m.flashErr("usage: /search <query>")
			return nil
		}
		ref := m.ref()
		m.requests[ref] = "search"
		m.noteFeature("search")
		m.search = searchState{ref: ref, query: arg, waiting: true}
		m.overlay = overlaySearch
		m.backend.Send(&ipc.Search{Query: arg, K: 10, Ref: ref})
	case "/model":
		m.chat.notice(levelInfo, m.modelLine())
	case "/cancel":
		if !m.busy() {
			m.flashInfo("nothing to cancel")
			return nil
		}
		m.cancelReply()
	case "/tools":
		m.togglePanel()
	case "/timestamps":
		m.stamps = !m.stamps
	case "/voice":
		m.chat.notice(levelInfo, "voice arrives with the voice issue")
	case "/quit", "/exit":
		return tea.Quit
	default:
		m.flashErr(fmt.Sprintf("unknown command %s · /help lists them", name))
	}
	return nil
}

func (m *Model) modelLine() string {
	switch {
	case !m.conn.ever:
		return "not connected to hearth yet"
	case m.provider == "" && m.modelName == "":
		return fmt.Sprintf("%s has no model provider configured", orDefault(m.server, "hearth"))
	}
	return fmt.Sprintf("provider %s · model %s · %s", orDefault(m.provider, "?"), orDefault(m.modelName, "?"), orDefault(m.server, "hearth"))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
