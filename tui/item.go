package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/mnemo/mnemo/ipc"
)

// itemKey orders the chat. A stored turn is {id, 0}: turn ids are ULIDs,
// so they sort by time. Something local (a notice, a live tool card) is
// {id of the newest turn when it appeared, seq}: it stays after the turns
// it followed when a resync inserts turns. Live items (the streaming
// reply, messages not acknowledged yet) use liveID, which sorts last.
type itemKey struct {
	id  string
	seq int
}

const liveID = "\xff"

func (a itemKey) cmp(b itemKey) int {
	if c := strings.Compare(a.id, b.id); c != 0 {
		return c
	}
	return a.seq - b.seq
}

type itemKind uint8

const (
	kindTurn    itemKind = iota // a stored user or agent turn
	kindTool                    // a tool call: live, or a stored turn with role tool
	kindNotice                  // something local: connection changes, errors, command output
	kindStream                  // the agent's reply while it streams
	kindPending                 // one of our messages hearth has not acknowledged yet
	kindVoice                   // a voice item's live transcript, until hearth stores the turn
)

type noticeLevel uint8

const (
	levelInfo noticeLevel = iota
	levelWarn
	levelErr
)

// item is one entry of the chat. Its rendering is cached for one width.
type item struct {
	key  itemKey
	kind itemKind
	turn ipc.Turn // kindTurn, kindPending (the text), a stored kindTool

	doc    *mdDoc    // agent text, built at first render
	tool   *toolCard // kindTool
	text   string    // kindNotice
	level  noticeLevel
	status string // kindPending: "sending…", "queued", or why it failed

	ver    int // bumped when the content changes
	cw     int
	cver   int
	cstamp bool
	cgen   int // when the cache was last filled, for eviction
	lines  []string
}

// renderCache bounds the memory that rendered items hold: once more than
// max items hold a rendering, the ones rendered longest ago drop theirs
// (scrolling back to them renders them again).
type renderCache struct {
	max   int
	gen   int
	order []*item
}

func (c *renderCache) filled(it *item) {
	c.gen++
	it.cgen = c.gen
	c.order = append(c.order, it)
	if len(c.order) < 2*c.max {
		return
	}
	cut := len(c.order) - c.max
	oldest := c.order[cut].cgen
	for _, old := range c.order[:cut] {
		if old.cgen < oldest {
			old.lines = nil
			if old.kind == kindTurn {
				old.doc = nil // its Markdown blocks, rendered
			}
		}
	}
	c.order = slices.Delete(c.order, 0, cut)
}

// toolCard is what the chat and the tool panel show of one tool call.
type toolCard struct {
	id, name  string
	args      string // short, one line
	reason    string
	result    string
	err       string
	duration  time.Duration
	started   time.Time
	done      bool
	confirmed *bool
	awaiting  bool // a confirm_request is open for it
}

func (it *item) touch() { it.ver++ }

// live items change every frame (spinners, elapsed time), so their
// rendering is not cached; the Markdown inside them is.
func (it *item) live() bool {
	return it.kind == kindStream || it.kind == kindPending || it.kind == kindVoice || (it.kind == kindTool && !it.tool.done)
}

// isTurn reports whether the item counts as a message for /history N.
func (it *item) isTurn() bool {
	return it.kind == kindTurn || it.kind == kindTool
}

// renderCtx is what rendering needs beyond the item itself.
type renderCtx struct {
	st     *styles
	md     *markdown
	loc    *time.Location
	stamps bool
	now    time.Time
	cache  *renderCache
	spin   string // the spinner's current frame
	state  string // the agent's state, for the streaming item
	detail string
}

// render returns the item's lines at width, each no wider than width,
// ending with a blank separator line.
func (it *item) render(rc *renderCtx, width int) []string {
	if !it.live() && it.lines != nil && it.cw == width && it.cver == it.ver && it.cstamp == rc.stamps {
		return it.lines
	}
	var lines []string
	switch it.kind {
	case kindTurn, kindStream:
		if it.turn.Role == ipc.RoleUser {
			lines = renderUser(rc, &it.turn, width, "")
		} else {
			lines = it.renderAgent(rc, width)
		}
	case kindPending:
		lines = renderUser(rc, &it.turn, width, it.status)
	case kindVoice:
		lines = renderVoicePartial(rc, &it.turn, width, it.status)
	case kindTool:
		lines = renderTool(rc, it.tool, width)
	case kindNotice:
		lines = renderNotice(rc, it.text, it.level, width)
	}
	lines = append(lines, "")
	for i, l := range lines {
		if ansi.StringWidth(l) > width {
			lines[i] = ansi.Truncate(l, width, "…")
		}
	}
	it.lines, it.cw, it.cver, it.cstamp = lines, width, it.ver, rc.stamps
	if rc.cache != nil && !it.live() {
		rc.cache.filled(it)
	}
	return lines
}

func (rc *renderCtx) header(label string, t *ipc.Turn, extra ...string) string {
	var b strings.Builder
	b.WriteString(label)
	tag := func(s string, st func(...string) string) {
		b.WriteString(rc.st.tag.Render(" · "))
		b.WriteString(st(s))
	}
	if rc.stamps && !t.TS.IsZero() {
		tag(stamp(t.TS.In(rc.loc), rc.now.In(rc.loc)), rc.st.stamp.Render)
	}
	if t.Mode == ipc.ModeVoice {
		tag("voice", rc.st.voiceLabel.Render)
	}
	if t.Incomplete {
		tag("cut short", rc.st.warnTag.Render)
	}
	if t.Truncated {
		tag("truncated", rc.st.warnTag.Render)
	}
	for _, e := range extra {
		if e != "" {
			tag(e, rc.st.tag.Render)
		}
	}
	return b.String()
}

// stamp is a turn's time: the hour today, with the date before.
func stamp(t, now time.Time) string {
	switch {
	case t.YearDay() == now.YearDay() && t.Year() == now.Year():
		return t.Format("15:04")
	case t.Year() == now.Year():
		return t.Format("Jan 2 15:04")
	}
	return t.Format("2006-01-02 15:04")
}

func renderUser(rc *renderCtx, t *ipc.Turn, width int, status string) []string {
	barStyle, labelStyle := rc.st.userBar, rc.st.userLabel
	if t.Mode == ipc.ModeVoice {
		barStyle, labelStyle = rc.st.voiceBar, rc.st.voiceLabel
	}
	bar := barStyle.Render("▌") + " "
	lines := []string{bar + rc.header(labelStyle.Render("you"), t, status)}
	body := plainLines(t.Content, width-2)
	if len(body) > maxUserLines+5 {
		// A pasted log: the start is enough to recognise it.
		more := len(body) - maxUserLines
		body = append(body[:maxUserLines:maxUserLines], rc.st.dim.Render(fmt.Sprintf("… %d more lines", more)))
	}
	for _, l := range body {
		lines = append(lines, bar+l)
	}
	return lines
}

// maxUserLines is how much of a long message of the owner's the chat shows.
const maxUserLines = 30

func (it *item) renderAgent(rc *renderCtx, width int) []string {
	label := rc.st.agentLabel.Render("mnemo")
	var extra string
	if it.kind == kindStream {
		extra = rc.spin
		if rc.state == ipc.StateTool && rc.detail != "" {
			extra = rc.spin + " " + rc.detail
		}
	}
	lines := []string{rc.header(label, &it.turn, extra)}
	if it.turn.Mode == ipc.ModeVoice {
		for _, l := range plainLines(it.turn.Content, width-2) {
			lines = append(lines, "  "+rc.st.voiceText.Render(l))
		}
		return lines
	}
	if it.doc == nil {
		it.doc = newDoc(it.turn.Content)
	}
	body := it.doc.lines(rc.md, max(width-2, 1))
	if len(body) == 0 && it.kind == kindStream {
		wait := "thinking…"
		if rc.state == ipc.StateTool {
			wait = "using tools…"
		}
		return append(lines, "  "+rc.st.dim.Render(wait))
	}
	for _, l := range body {
		if l == "" {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, "  "+l)
	}
	return lines
}

func renderNotice(rc *renderCtx, text string, level noticeLevel, width int) []string {
	mark, st := "─", rc.st.notice
	switch level {
	case levelWarn:
		mark, st = "!", rc.st.noticeWarn
	case levelErr:
		mark, st = "✗", rc.st.noticeErr
	}
	var lines []string
	for i, l := range plainLines(text, max(width-4, 1)) {
		p := "    "
		if i == 0 {
			p = "  " + mark + " "
		}
		lines = append(lines, st.Render(p+l))
	}
	return lines
}

// toolGlyph is the status mark of a tool card.
func toolGlyph(rc *renderCtx, c *toolCard) string {
	switch {
	case !c.done && c.awaiting:
		return rc.st.toolRun.Render("?")
	case !c.done:
		return rc.st.toolRun.Render(rc.spin)
	case c.confirmed != nil && !*c.confirmed:
		return rc.st.toolErr.Render("⊘")
	case c.err != "":
		return rc.st.toolErr.Render("✗")
	}
	return rc.st.toolOK.Render("✓")
}

// toolTiming is the right-hand side of a card's first line.
func toolTiming(rc *renderCtx, c *toolCard) string {
	switch {
	case c.awaiting:
		return "awaiting confirmation"
	case !c.done && !c.started.IsZero():
		return "running " + formatDuration(rc.now.Sub(c.started))
	case !c.done:
		return "running"
	case c.confirmed != nil && !*c.confirmed:
		return "denied"
	}
	return formatDuration(c.duration)
}

func renderTool(rc *renderCtx, c *toolCard, width int) []string {
	head := "  " + toolGlyph(rc, c) + " " + rc.st.toolName.Render(c.name)
	right := rc.st.dim.Render(toolTiming(rc, c))
	room := width - ansi.StringWidth(head) - ansi.StringWidth(right) - 2
	if c.args != "" && room > 4 {
		head += " " + rc.st.toolArgs.Render(ansi.Truncate(c.args, room, "…"))
	}
	lines := []string{padBetween(head, right, width)}
	inner := max(width-6, 1)
	if c.reason != "" {
		lines = append(lines, "    "+rc.st.toolReason.Render(ansi.Truncate(c.reason, inner, "…")))
	}
	body, st, mark := c.result, rc.st.toolResult, "→ "
	if c.err != "" {
		body, st, mark = c.err, rc.st.toolErr, "✗ "
	}
	if body != "" {
		out := plainLines(body, inner)
		if len(out) > 3 {
			out = append(out[:3], rc.st.dim.Render(fmt.Sprintf("… %d more lines", len(out)-3)))
		}
		for i, l := range out {
			p := "      "
			if i == 0 {
				p = "    " + mark
			}
			lines = append(lines, p+st.Render(l))
		}
	}
	return lines
}

// padBetween puts left and right on one line of width, right-aligned.
func padBetween(left, right string, width int) string {
	gap := width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return left
	}
	return left + strings.Repeat(" ", gap) + right
}

func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// shortArgs renders tool arguments on one line: key=value pairs of an
// object in key order, or the compact JSON of anything else.
func shortArgs(args any) string {
	switch a := args.(type) {
	case nil:
		return ""
	case map[string]any:
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			v := a[k]
			s, ok := v.(string)
			if !ok {
				b, _ := json.Marshal(v)
				s = string(b)
			} else if strings.ContainsAny(s, " \n\t") || s == "" {
				s = fmt.Sprintf("%q", s)
			}
			parts = append(parts, k+"="+s)
		}
		return sanitize(strings.Join(parts, " "))
	}
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return sanitize(string(b))
}

// sanitize makes text from the wire safe to print: escape sequences and
// control characters are removed, so that a message cannot drive the
// terminal; tabs become spaces and line breaks stay.
func sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n') || c == 0x7f || c == 0xc2 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	s = ansi.Strip(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError:
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
