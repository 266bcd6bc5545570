package tui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	{"/search", "<query>", "search memory; filter with role: kind: since: until:"},
	{"/review", "", "review memory changes waiting for you (alt+r)"},
	{"/model", "", "show the provider and model"},
	{"/cancel", "", "stop the reply in flight (esc)"},
	{"/tools", "", "toggle the tool panel (ctrl+t)"},
	{"/timestamps", "", "toggle timestamps (alt+t)"},
	{"/voice", "[devices|headphones|speakers]", "talk at the desk (alt+v); list audio devices; echo mode"},
	{"/new", "[ID]", "start a new conversation (hearth names it without ID)"},
	{"/conversations", "", "list the conversations"},
	{"/resume", "ID", "switch to a conversation (also /switch)"},
	{"/pair", "[owner]", "a one-time code to pair a new device (a collaborator's, or yours with owner)"},
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
		req, err := parseSearch(arg, m.loc)
		if err != nil {
			m.flashErr(err.Error())
			return nil
		}
		if !m.supports("search") || (searchFiltered(req) && !m.supports("search_filters")) {
			m.flashErr(unsupported("search"))
			return nil
		}
		ref := m.ref()
		req.K, req.Ref = 10, ref
		m.requests[ref] = "search"
		m.noteFeature("search")
		m.search = searchState{ref: ref, query: arg, waiting: true}
		m.overlay = overlaySearch
		m.backend.Send(req)
	case "/review":
		m.openReview()
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
		return m.voiceCommand(arg)
	case "/pair":
		ref := m.ref()
		m.requests[ref] = "pair"
		m.backend.Send(&ipc.PairStart{Actor: arg, Ref: ref})
		m.flashInfo("asking hearth for a pairing code…")
	case "/new", "/conversations", "/resume", "/switch":
		m.conversationCommand(name, arg)
	case "/quit", "/exit":
		return m.quit()
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

// searchUsage explains /search's filters.
const searchUsage = "usage: /search [role:user,agent,tool] [kind:turn|tool|knowledge] [since:YYYY-MM-DD] [until:YYYY-MM-DD] <query>"

// parseSearch reads /search's argument: the words role:, kind:, since:
// and until: anywhere in it are filters, the other words the query.
// role and kind take one value or several separated by commas; since and
// until a date YYYY-MM-DD (a day in loc: since from its start, until
// through its end) or an RFC 3339 time.
func parseSearch(arg string, loc *time.Location) (*ipc.Search, error) {
	req := &ipc.Search{}
	var words []string
	for _, w := range strings.Fields(arg) {
		key, v, ok := strings.Cut(w, ":")
		key = strings.ToLower(key)
		if !ok || !slices.Contains([]string{"role", "kind", "since", "until"}, key) {
			words = append(words, w)
			continue
		}
		if v == "" {
			return nil, fmt.Errorf("%s: needs a value · %s", key, searchUsage)
		}
		var err error
		switch key {
		case "role":
			req.Roles, err = searchValues(req.Roles, key, v, ipc.RoleUser, ipc.RoleAgent, ipc.RoleTool)
		case "kind":
			req.Kinds, err = searchValues(req.Kinds, key, v, ipc.KindTurn, ipc.KindTool, ipc.KindKnowledge)
		case "since":
			req.Since, err = searchTime(key, v, loc, false)
		case "until":
			req.Until, err = searchTime(key, v, loc, true)
		}
		if err != nil {
			return nil, err
		}
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && !req.Since.Before(req.Until) {
		return nil, errors.New("since must be before until: nothing can match")
	}
	req.Query = strings.Join(words, " ")
	if req.Query == "" {
		return nil, errors.New(searchUsage)
	}
	return req, nil
}

// searchValues adds the comma-separated values v of a filter to have,
// each one of allowed.
func searchValues(have []string, key, v string, allowed ...string) ([]string, error) {
	for _, x := range strings.Split(strings.ToLower(v), ",") {
		if !slices.Contains(allowed, x) {
			return nil, fmt.Errorf("%s:%s is not one of %s", key, shortText(x, 20), strings.Join(allowed, ", "))
		}
		if !slices.Contains(have, x) {
			have = append(have, x)
		}
	}
	return have, nil
}

// searchTime reads a since: or until: value: a day in loc (for until, the
// start of the next day) or an RFC 3339 time.
func searchTime(key, v string, loc *time.Location, endOfDay bool) (time.Time, error) {
	if d, err := time.ParseInLocation(time.DateOnly, v, loc); err == nil {
		if endOfDay {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s:%s is not a date: use YYYY-MM-DD or an RFC 3339 time", key, shortText(v, 30))
	}
	return t, nil
}

// searchFiltered reports whether req narrows the search by role, kind or
// time, which older hearths do not understand.
func searchFiltered(req *ipc.Search) bool {
	return len(req.Roles) > 0 || len(req.Kinds) > 0 || !req.Since.IsZero() || !req.Until.IsZero()
}
