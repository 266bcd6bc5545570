package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/mnemo/mnemo/ipc"
)

// View implements tea.Model. It returns the last frame while nothing on
// screen changed.
func (m *Model) View() string {
	if !m.dirty && m.frame != "" {
		return m.frame
	}
	m.dirty = false
	m.repaints++
	if m.stream != nil {
		m.shownLen = m.stream.doc.Len()
	}
	m.shownSpin = m.spinner()
	m.frame = m.render()
	return m.frame
}

// Repaints reports how many frames View has drawn.
func (m *Model) Repaints() int { return m.repaints }

func (m *Model) render() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.w < 20 || m.h < 6 {
		return ansi.Truncate("window too small for mnemo", m.w, "…")
	}
	l := m.layout()
	rc := m.renderCtx()
	rows := make([]string, 0, m.h)

	var top []string
	switch m.overlay {
	case overlayHelp:
		top = m.helpView(l.chatW, l.chatH)
	case overlaySearch:
		top = m.searchView(rc, l.chatW, l.chatH)
	case overlayReview:
		top = m.reviewView(l.chatW, l.chatH)
	default:
		top = m.chatView(rc, l.chatW, l.chatH)
	}
	for len(top) < l.chatH {
		top = append(top, "")
	}
	if l.panelW > 0 {
		panel := m.panelView(rc, l.panelW, l.chatH)
		sep := m.st.rule.Render("│")
		for i, t := range top {
			if pad := l.chatW - ansi.StringWidth(t); pad > 0 {
				t += strings.Repeat(" ", pad)
			}
			top[i] = t + sep + panel[i]
		}
	}
	rows = append(rows, top...)
	rows = append(rows, l.popup...)
	rows = append(rows, m.voiceLines()...)
	rows = append(rows, m.st.rule.Render(strings.Repeat("─", m.w)))
	if c := m.in.chips(m.st); c != "" {
		rows = append(rows, ansi.Truncate(c, m.w, "…"))
	}
	rows = append(rows, m.in.view())
	rows = append(rows, m.statusView(rc))
	if l.help {
		// help truncates only when its ellipsis fits; make sure.
		rows = append(rows, ansi.Truncate(m.help.ShortHelpView(m.keys.ShortHelp()), m.w, "…"))
	}
	return strings.Join(rows, "\n")
}

func (m *Model) chatView(rc *renderCtx, w, h int) []string {
	if m.chat.start() >= len(m.chat.items) {
		return m.welcome(w, h)
	}
	lines := m.chat.view(rc, w, h)
	if !m.chat.follow && m.chat.unseen && h > 0 {
		marker := m.st.marker.Render("↓ new messages · ctrl+end")
		for len(lines) < h {
			lines = append(lines, "")
		}
		lines[h-1] = lipgloss.PlaceHorizontal(w, lipgloss.Center, marker)
	}
	return lines
}

func (m *Model) welcome(w, h int) []string {
	lines := []string{
		m.st.agentLabel.Render("mnemo"),
		m.st.dim.Render("a companion that remembers"),
		"",
		m.st.dim.Render("type a message and press enter · /help for commands"),
	}
	out := make([]string, 0, h)
	for range max((h-len(lines))/2, 0) {
		out = append(out, "")
	}
	for _, l := range lines {
		if len(out) == h {
			break
		}
		out = append(out, lipgloss.PlaceHorizontal(w, lipgloss.Center, ansi.Truncate(l, w, "…")))
	}
	return out
}

// statusView is the status bar: connection, agent, transient message on
// the left; provider, model and token usage on the right.
func (m *Model) statusView(rc *renderCtx) string {
	now := rc.now
	var left string
	switch c := m.conn; {
	case c.fatal != "":
		left = m.st.statusErr.Render("✗ not connected")
	case c.state == ipc.StateConnected && !c.resynced.IsZero() && now.Sub(c.resynced) < resyncedTTL:
		left = m.st.statusOK.Render("● resynced")
	case c.state == ipc.StateConnected:
		left = m.st.statusOK.Render("● connected")
	case c.state == ipc.StateReconnecting:
		wait := c.retryAt.Sub(now)
		if wait > 0 {
			secs := int((wait + 999_999_999) / 1e9)
			left = m.st.statusWarn.Render(fmt.Sprintf("◌ reconnecting in %ds (attempt %d)", secs, c.attempt))
		} else {
			left = m.st.statusWarn.Render(fmt.Sprintf("◌ reconnecting… (attempt %d)", c.attempt))
		}
	default:
		left = m.st.statusWarn.Render("◌ connecting…")
	}
	if m.conn.state == ipc.StateConnected {
		switch m.agent {
		case ipc.StateThinking:
			// The detail says why the wait is long: a retry of the model call.
			thinking := rc.spin + " thinking"
			if rc.detail != "" {
				thinking += " · " + rc.detail
			}
			left += "  " + m.st.statusText.Render(thinking)
		case ipc.StateTool:
			left += "  " + m.st.statusText.Render(rc.spin+" "+orDefault(rc.detail, "running a tool"))
		}
	}
	if f := m.flash; f.text != "" && now.Sub(f.at) < flashTTL {
		st := m.st.statusDim
		if f.err {
			st = m.st.statusErr
		}
		if now.Sub(f.at) >= flashFade {
			st = m.st.errFaded
		}
		mark := "· "
		if f.err {
			mark = "✗ "
		}
		left += "  " + st.Render(mark+f.text)
	}
	if m.conn.fatal != "" {
		left += "  " + m.st.statusErr.Render(m.conn.fatal)
	}

	var right []string
	if c := m.conversationLabel(); c != "" {
		right = append(right, c)
	}
	if m.provider != "" || m.modelName != "" {
		right = append(right, strings.Trim(m.provider+" · "+m.modelName, " ·"))
	}
	if u := m.usage; u != nil {
		right = append(right, fmt.Sprintf("%s in · %s out", count(u.InputTokens), count(u.OutputTokens)))
	}
	r := m.st.statusDim.Render(strings.Join(right, " · "))
	rw := ansi.StringWidth(r)
	if rw > 0 && ansi.StringWidth(left)+2+rw <= m.w {
		return padBetween(left, r, m.w)
	}
	return ansi.Truncate(left, m.w, "…")
}

func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// popupLines is what sits between the chat and the editor: the pending
// confirmation, or the /command completions.
func (m *Model) popupLines() []string {
	if len(m.confirms) > 0 {
		return m.confirmView()
	}
	if !m.comp.visible() {
		return nil
	}
	const maxRows = 6
	first := max(0, m.comp.sel-maxRows+1)
	var out []string
	for i := first; i < len(m.comp.matches) && len(out) < maxRows; i++ {
		c := m.comp.matches[i]
		name := c.name
		if c.args != "" {
			name += " " + c.args
		}
		line := fmt.Sprintf(" %-18s %s", name, c.desc)
		line = ansi.Truncate(line, m.w-1, "…")
		if i == m.comp.sel {
			out = append(out, m.st.popupSel.Render(line+strings.Repeat(" ", max(m.w-1-ansi.StringWidth(line), 0))))
		} else {
			out = append(out, m.st.popup.Render(" "+strings.TrimPrefix(line, " ")))
		}
	}
	return out
}

func (m *Model) confirmView() []string {
	r := m.confirms[0]
	inner := max(m.w-4, 8)
	title := m.st.boxTitle.Render("allow ") + m.st.toolName.Render(sanitize(r.Name)) + " " + m.st.toolArgs.Render(shortArgs(r.Arguments))
	lines := []string{ansi.Truncate(title, inner, "…")}
	var why []string
	if r.Effect != "" {
		why = append(why, sanitize(r.Effect))
	}
	if r.Reason != "" {
		why = append(why, sanitize(r.Reason))
	}
	if len(why) > 0 {
		lines = append(lines, ansi.Truncate(m.st.toolReason.Render(strings.Join(why, " · ")), inner, "…"))
	}
	ask := m.st.key.Render("y") + " allow · " + m.st.key.Render("n") + " deny"
	if !r.ExpiresAt.IsZero() {
		left := r.ExpiresAt.Sub(m.now())
		ask += m.st.dim.Render(fmt.Sprintf(" · expires in %ds", max(int((left+999_999_999)/1e9), 0)))
	}
	if n := len(m.confirms) - 1; n > 0 {
		ask += m.st.dim.Render(fmt.Sprintf(" · %d more waiting", n))
	}
	lines = append(lines, ansi.Truncate(ask, inner, "…"))
	box := m.st.box.Width(m.w - 2).Render(strings.Join(lines, "\n"))
	return strings.Split(box, "\n")
}

// panelView is the tool panel: the newest tool calls, newest last.
func (m *Model) panelView(rc *renderCtx, w, h int) []string {
	title := m.st.panelTitle.Render(" tools")
	cards := m.chat.tools(h)
	var body []string
	for _, it := range cards {
		body = append(body, renderTool(rc, it.tool, w-1)...)
	}
	if len(cards) == 0 {
		body = []string{"", "  " + m.st.dim.Render("no tool calls yet")}
	}
	if len(body) > h-1 {
		body = body[len(body)-(h-1):]
	}
	out := append([]string{title}, body...)
	for i, l := range out {
		if ansi.StringWidth(l) > w {
			l = ansi.Truncate(l, w, "…")
		}
		out[i] = l
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out[:h]
}

// boxed draws lines in a rounded box of w × h (h includes the border).
func (m *Model) boxed(title string, lines []string, w, h int) []string {
	inner := max(w-4, 1)
	rows := max(h-2, 1)
	if len(lines) > rows {
		lines = lines[:rows]
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, inner, "…")
	}
	for len(lines) < rows {
		lines = append(lines, "")
	}
	box := m.st.box.Width(w - 2).Height(rows).Render(strings.Join(lines, "\n"))
	out := strings.Split(box, "\n")
	if title != "" && len(out) > 0 {
		// Title into the top border: ╭─ title ───╮
		t := m.st.boxTitle.Render(" " + title + " ")
		tw := ansi.StringWidth(t)
		if tw+4 <= w {
			out[0] = m.st.toolBorder.Render("╭─") + t + m.st.toolBorder.Render(strings.Repeat("─", w-3-tw)+"╮")
		}
	}
	return out
}

func (m *Model) helpView(w, h int) []string {
	hm := m.help
	hm.ShowAll = true
	hm.Width = w - 4
	lines := strings.Split(hm.FullHelpView(m.keys.FullHelp()), "\n")
	lines = append(lines, "", m.st.boxTitle.Render("commands"))
	for _, c := range commands {
		name := c.name
		if c.args != "" {
			name += " " + c.args
		}
		lines = append(lines, m.st.key.Render(fmt.Sprintf("%-18s", name))+" "+m.st.dim.Render(c.desc))
	}
	lines = append(lines, "", m.st.dim.Render("esc cancels a reply · ctrl+c quits · //text sends a line starting with /"))
	lines = append(lines, m.st.dim.Render("esc closes this"))
	return m.boxed("mnemo help", lines, w, h)
}

func (m *Model) searchView(rc *renderCtx, w, h int) []string {
	s := m.search
	var lines []string
	switch {
	case s.waiting:
		lines = append(lines, rc.spin+" searching…")
	case s.err != "":
		lines = append(lines, m.st.noticeErr.Render("✗ "+s.err))
	case len(s.hits) == 0:
		lines = append(lines, m.st.dim.Render("nothing found"))
	}
	inner := max(w-6, 8)
	for i, hit := range s.hits {
		t := hit.Turn
		who := m.st.agentLabel.Render("mnemo")
		switch {
		case t.Role == ipc.RoleUser:
			who = m.st.userLabel.Render("you")
		case hit.Kind == ipc.KindKnowledge:
			who = m.st.toolName.Render("note " + shortText(sanitize(hit.Path), 60))
		case t.Role == ipc.RoleTool || hit.Kind == ipc.KindTool:
			who = m.st.toolName.Render(strings.TrimSpace("tool " + shortText(sanitize(hit.Channel), 30)))
		}
		meta := m.st.dim.Render(fmt.Sprintf(" · %s · %.2f", t.TS.In(m.loc).Format("2006-01-02 15:04"), hit.Score))
		mark := "  "
		if i == s.sel {
			mark = m.st.key.Render("› ")
		}
		lines = append(lines, mark+who+meta)
		lines = append(lines, "  "+ansi.Truncate(strings.Join(strings.Fields(sanitize(t.Content)), " "), inner, "…"))
	}
	lines = append(lines, "", m.st.dim.Render("↑/↓ select · enter show in chat · esc close"))
	// Keep the selection on screen.
	if rows := h - 2; len(lines) > rows && s.sel*2+3 > rows {
		lines = lines[min(s.sel*2+3-rows, len(lines)):]
	}
	return m.boxed("search: "+shortText(s.query, 40), lines, w, h)
}
