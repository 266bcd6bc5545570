package tui

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// The review panel: the vault's proposals that policy left for the owner
// (feature "vault"). /review or alt+r opens it and asks hearth for the
// list; the proposal and proposal_decided events every client is sent
// keep it current while it is open or closed. For the selected proposal
// it shows what, who, why and from which turns, and a unified diff of
// the file as it is and as proposed. a approves, r rejects, e opens the
// proposed file in $EDITOR and approves what the owner saved.

// reviewState is what the panel shows and what it waits for.
type reviewState struct {
	list   []ipc.Proposal // oldest first, as hearth lists them
	more   bool           // hearth has more than it sent
	sel    int
	scroll int    // first diff line shown
	ref    string // the proposals request in flight
	err    string
	// deciding is the proposals whose decision is in flight: id → ref.
	deciding map[string]string
	diffs    map[string][]diffLine // by proposal id, computed once
	notice   *item                 // the chat's notice about changes waiting
	// told is the proposals whose outcome the chat was told, newest
	// last: the client that decided gets the outcome twice (as every
	// client, then as the answer).
	told []string
}

// maxTold bounds reviewState.told.
const maxTold = 64

// diffLine is one line of a unified diff, with what kind of line it is.
type diffLine struct {
	kind byte // '-', '+', ' ', '@' (hunk), 'h' (file header), '!' (a note)
	text string
}

// reviewEditedMsg is the owner's editor closing on a proposal's file.
type reviewEditedMsg struct {
	id, original, edited string
	err                  error
}

// openReview shows the panel and asks hearth for the proposals waiting.
func (m *Model) openReview() {
	if !m.supports("vault") {
		m.flashErr(unsupported("vault"))
		return
	}
	m.overlay = overlayReview
	m.askProposals()
}

func (m *Model) askProposals() {
	ref := m.ref()
	m.requests[ref] = "vault"
	m.noteFeature("vault")
	m.review.ref, m.review.err = ref, ""
	m.backend.Send(&ipc.Proposals{Ref: ref})
}

// reviewConnected forgets the requests of the connection before (their
// answers are lost) and asks a hearth that says it has a vault for the
// proposals waiting, so that the owner is told of them.
func (m *Model) reviewConnected() {
	m.review.ref, m.review.deciding = "", nil
	if m.features["vault"] || (m.overlay == overlayReview && m.supports("vault")) {
		m.askProposals()
	}
}

// onReviewMsg handles the vault's events and answers, and the editor.
func (m *Model) onReviewMsg(msg tea.Msg) tea.Cmd {
	r := &m.review
	switch msg := msg.(type) {
	case *ipc.Proposal:
		r.told = slices.DeleteFunc(r.told, func(id string) bool { return id == msg.ID }) // waiting again
		if i := r.index(msg.ID); i >= 0 {
			r.list[i] = withWhy(*msg, r.list[i])
			delete(r.diffs, msg.ID)
			return nil
		}
		r.list = append(r.list, *msg)
		if m.overlay != overlayReview {
			m.noteWaiting()
		}
	case *ipc.ProposalList:
		if msg.Ref == "" || msg.Ref != r.ref {
			return nil
		}
		delete(m.requests, msg.Ref)
		selID := r.selectedID()
		fresh := false
		list := make([]ipc.Proposal, 0, len(msg.Proposals))
		for _, p := range msg.Proposals {
			if slices.Contains(r.told, p.ID) {
				continue // decided after hearth read the list
			}
			if i := r.index(p.ID); i >= 0 {
				p = withWhy(p, r.list[i])
			} else {
				fresh = true
			}
			list = append(list, p)
		}
		r.list, r.more, r.ref, r.diffs = list, msg.More, "", nil
		r.sel, r.scroll = max(r.index(selID), 0), 0
		if fresh && m.overlay != overlayReview {
			m.noteWaiting()
		}
	case *ipc.ProposalDecided:
		m.onProposalDecided(msg)
	case reviewEditedMsg:
		return m.onEdited(msg)
	}
	return nil
}

// withWhy keeps the policy's why that an earlier copy of p carried: a
// proposal list may not say it.
func withWhy(p, old ipc.Proposal) ipc.Proposal {
	if p.Why == "" {
		p.Why = old.Why
	}
	return p
}

// noteWaiting tells the chat that changes wait for review: one notice,
// kept up to date while nothing was said after it.
func (m *Model) noteWaiting() {
	n := len(m.review.list)
	text := "memory: 1 change waiting for review — /review"
	if n != 1 {
		text = fmt.Sprintf("memory: %d changes waiting for review — /review", n)
	}
	items := m.chat.items
	if it := m.review.notice; it != nil && len(items) > 0 && items[len(items)-1] == it {
		it.text = text
		it.touch()
		m.chat.changed()
		return
	}
	m.review.notice = m.chat.notice(levelInfo, text)
}

func (m *Model) onProposalDecided(d *ipc.ProposalDecided) {
	r := &m.review
	if d.Ref != "" {
		delete(m.requests, d.Ref)
	}
	delete(r.deciding, d.ID)
	if i := r.index(d.ID); i >= 0 {
		r.list = slices.Delete(r.list, i, i+1)
		delete(r.diffs, d.ID)
		if i < r.sel || r.sel >= len(r.list) {
			r.sel = max(r.sel-1, 0)
		}
		if i <= r.sel {
			r.scroll = 0
		}
	}
	if slices.Contains(r.told, d.ID) {
		return
	}
	if len(r.told) == maxTold {
		r.told = slices.Delete(r.told, 0, 1)
	}
	r.told = append(r.told, d.ID)
	level, text := decidedText(d)
	m.chat.notice(level, text)
	if m.overlay == overlayReview {
		if level == levelInfo {
			m.flashInfo(text)
		} else {
			m.flashErr(text)
		}
	}
}

// decidedText says what became of a proposal.
func decidedText(d *ipc.ProposalDecided) (noticeLevel, string) {
	path := orDefault(sanitize(d.Path), "a file")
	by := ""
	if d.By == "policy" {
		by = " by policy"
	}
	switch {
	case d.Decision == "applied" && d.CommitFailed:
		return levelWarn, fmt.Sprintf("memory: %s applied%s, saved but not committed yet (git failed; see hearth's log)", path, by)
	case d.Decision == "applied":
		text := fmt.Sprintf("memory: %s applied%s", path, by)
		if d.Commit != "" {
			text += fmt.Sprintf(" (commit %s)", sanitize(d.Commit[:min(len(d.Commit), 7)]))
		}
		return levelInfo, text
	case d.Decision == "rejected":
		text := fmt.Sprintf("memory: change to %s rejected%s", path, by)
		if d.Why != "" && d.By == "policy" {
			text += ": " + shortText(sanitize(d.Why), 80)
		}
		return levelInfo, text
	}
	return levelInfo, fmt.Sprintf("memory: %s %s", path, shortText(sanitize(d.Decision), 20))
}

// reviewError takes a refused proposals or proposal_decide request.
func (m *Model) reviewError(e *ipc.Error) {
	r := &m.review
	if e.Ref == "" {
		return
	}
	if e.Ref == r.ref {
		r.ref, r.err = "", shortText(sanitize(e.Message), 100)
	}
	for id, ref := range r.deciding {
		if ref == e.Ref {
			delete(r.deciding, id)
		}
	}
}

// reviewSendFailed takes a request of the panel's that did not leave.
func (m *Model) reviewSendFailed(msg ipc.Msg) {
	r := &m.review
	switch msg := msg.(type) {
	case *ipc.Proposals:
		if msg.Ref == r.ref {
			r.ref, r.err = "", "not connected to hearth"
			m.flashErr("cannot ask for the changes waiting: not connected to hearth")
		}
	case *ipc.ProposalDecide:
		delete(r.deciding, msg.ID)
		m.flashErr("decision not sent: not connected to hearth")
	}
}

func (r *reviewState) index(id string) int {
	return slices.IndexFunc(r.list, func(p ipc.Proposal) bool { return p.ID == id })
}

func (r *reviewState) selected() (ipc.Proposal, bool) {
	if r.sel < 0 || r.sel >= len(r.list) {
		return ipc.Proposal{}, false
	}
	return r.list[r.sel], true
}

func (r *reviewState) selectedID() string {
	p, _ := r.selected()
	return p.ID
}

// reviewKey handles a key while the panel is open; done means it was
// used up.
func (m *Model) reviewKey(k tea.KeyMsg) (done bool, cmd tea.Cmd) {
	r := &m.review
	if len(m.confirms) > 0 && (key.Matches(k, m.keys.Yes) || key.Matches(k, m.keys.No)) && k.String() != "esc" {
		return false, nil // a tool waits for its answer
	}
	switch k.String() {
	case "esc", "q":
		m.overlay = overlayNone
		return true, nil
	case "right", "tab", "l":
		m.reviewSelect(r.sel + 1)
	case "left", "shift+tab", "h":
		m.reviewSelect(r.sel - 1)
	case "up", "k":
		m.reviewScroll(-1)
	case "down", "j":
		m.reviewScroll(1)
	case "pgup":
		m.reviewScroll(-max(m.reviewRows()-1, 1))
	case "pgdown", " ":
		m.reviewScroll(max(m.reviewRows()-1, 1))
	case "home":
		r.scroll = 0
	case "end":
		m.reviewScroll(1 << 30)
	case "a":
		if p, ok := m.decidable(); ok {
			m.decide(p.ID, true, "")
		}
	case "r":
		if p, ok := m.decidable(); ok {
			m.decide(p.ID, false, "")
		}
	case "e":
		return true, m.editProposal()
	default:
		switch {
		case key.Matches(k, m.keys.Review):
			m.overlay = overlayNone
		case key.Matches(k, m.keys.Help):
			m.overlay = overlayHelp
		}
	}
	return true, nil
}

func (m *Model) reviewSelect(i int) {
	r := &m.review
	if i < 0 || i >= len(r.list) || i == r.sel {
		return
	}
	r.sel, r.scroll = i, 0
}

func (m *Model) reviewScroll(d int) {
	r := &m.review
	p, ok := r.selected()
	if !ok {
		return
	}
	last := max(len(m.diffOf(p))-m.reviewRows(), 0)
	r.scroll = min(max(r.scroll+d, 0), last)
}

// decidable returns the selected proposal when a decision on it may be
// sent.
func (m *Model) decidable() (ipc.Proposal, bool) {
	p, ok := m.review.selected()
	switch {
	case !ok:
		m.flashInfo("nothing to decide")
		return p, false
	case m.review.deciding[p.ID] != "":
		m.flashInfo("waiting for hearth's answer on this one")
		return p, false
	}
	return p, true
}

// decide sends the owner's decision on proposal id; content, with
// approve, is the owner's version of the file.
func (m *Model) decide(id string, approve bool, content string) {
	ref := m.ref()
	m.requests[ref] = "vault"
	m.noteFeature("vault")
	if m.review.deciding == nil {
		m.review.deciding = make(map[string]string)
	}
	m.review.deciding[id] = ref
	m.backend.Send(&ipc.ProposalDecide{ID: id, Approve: approve, Content: content, Ref: ref})
}

// editProposal opens the selected proposal's file, as proposed, in the
// owner's editor.
func (m *Model) editProposal() tea.Cmd {
	p, ok := m.decidable()
	if !ok {
		return nil
	}
	switch {
	case p.Op != "create" && p.Op != "update":
		m.flashInfo(fmt.Sprintf("a %s cannot be edited: approve or reject it", sanitize(p.Op)))
		return nil
	case p.Content == "":
		m.flashInfo("this change is a patch hearth applies: approve or reject it")
		return nil
	case p.Truncated:
		m.flashInfo("this change is too long to edit here: edit the file in the vault instead")
		return nil
	}
	run := &editRun{editor: m.editor, content: p.Content, ext: fileExt(p.Path)}
	id, original := p.ID, p.Content
	return tea.Exec(run, func(err error) tea.Msg {
		return reviewEditedMsg{id: id, original: original, edited: run.edited, err: err}
	})
}

func (m *Model) onEdited(e reviewEditedMsg) tea.Cmd {
	switch {
	case e.err != nil:
		m.flashErr("editor: " + shortError(e.err))
	case strings.TrimSpace(e.edited) == "":
		m.flashInfo("the file was left empty: nothing sent")
	case e.edited == e.original:
		m.flashInfo("unchanged: nothing sent")
	case m.review.index(e.id) < 0:
		m.flashErr("that change was decided meanwhile: your edit was not sent")
	case m.review.deciding[e.id] != "":
		m.flashInfo("waiting for hearth's answer on this one: your edit was not sent")
	case len(e.edited) > ipc.MaxLineBytes-1024:
		m.flashErr(fmt.Sprintf("edited file too large: %s", byteSize(len(e.edited))))
	default:
		m.decide(e.id, true, e.edited)
		m.flashInfo("sent your version")
	}
	return nil
}

// diffOf returns the lines the panel shows for p's change, computed once.
func (m *Model) diffOf(p ipc.Proposal) []diffLine {
	if d, ok := m.review.diffs[p.ID]; ok {
		return d
	}
	d := proposalDiff(p)
	if m.review.diffs == nil {
		m.review.diffs = make(map[string][]diffLine)
	}
	m.review.diffs[p.ID] = d
	return d
}

// proposalDiff is the change p makes, as a unified diff of the file as
// it is (p.Current) and as proposed, with notes where it cannot be whole.
func proposalDiff(p ipc.Proposal) []diffLine {
	var out []diffLine
	note := func(s string) { out = append(out, diffLine{'!', s}) }
	file := sanitize(p.Path)
	from, to := "a/"+file, "b/"+file
	before, after := sanitize(p.Current), sanitize(p.Content)
	switch p.Op {
	case "create":
		from = "/dev/null"
	case "delete":
		to, after = "/dev/null", ""
		note("deletes the file")
	case "deprecate":
		note("marks the note deprecated: it stays, with status deprecated")
		after = before
	case "update":
		if p.Content == "" {
			note("a patch hearth applies on approval: no preview")
			after = before
		}
		if p.Current == "" {
			note("hearth did not send the file as it is: the new file is shown whole")
		}
	}
	if p.CurrentTruncated || p.Truncated {
		note("too long to send whole: the diff stops where the text was cut")
	}
	if before == after {
		if p.Op != "deprecate" && p.Op != "update" {
			note("no change to the file's text")
		}
		return out
	}
	u, err := udiff.ToUnifiedDiff(from, to, before, udiff.Strings(before, after), 3)
	if err != nil {
		note("cannot show the diff: " + err.Error())
		return out
	}
	out = append(out, diffLine{'h', "--- " + u.From}, diffLine{'h', "+++ " + u.To})
	for _, h := range u.Hunks {
		var del, ins int
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				del++
			case udiff.Insert:
				ins++
			default:
				del++
				ins++
			}
		}
		out = append(out, diffLine{'@', "@@ -" + hunkRange(h.FromLine, del) + " +" + hunkRange(h.ToLine, ins) + " @@"})
		for _, l := range h.Lines {
			kind := byte(' ')
			switch l.Kind {
			case udiff.Delete:
				kind = '-'
			case udiff.Insert:
				kind = '+'
			}
			out = append(out, diffLine{kind, strings.TrimSuffix(l.Content, "\n")})
		}
	}
	return out
}

// hunkRange is a hunk's range in one file as diff -u writes it: the line
// before an empty one, and no count of one line.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// reviewRows is how many diff lines the panel shows in the window now.
func (m *Model) reviewRows() int {
	w, h := m.chatSize()
	p, _ := m.review.selected()
	return max(h-2-len(m.reviewHeader(p, max(w-4, 1)))-2, 1)
}

// reviewHeader is what the panel says about p above its diff.
func (m *Model) reviewHeader(p ipc.Proposal, w int) []string {
	if p.ID == "" {
		return nil
	}
	r := &m.review
	lines := m.reviewList() // names the selected one when there are several
	if len(lines) == 0 {
		op := m.st.toolName.Render(sanitize(p.Op))
		lines = append(lines, op+" "+m.st.boxTitle.Render(sanitize(p.Path)))
	}
	meta := fmt.Sprintf("by %s · %s · %s", orDefault(sanitize(p.Author), "?"), p.CreatedAt.In(m.loc).Format("2006-01-02 15:04"), sanitize(p.ID))
	if r.deciding[p.ID] != "" {
		meta += " · deciding…"
	}
	lines = append(lines, m.st.dim.Render(meta))
	field := func(name, v string) {
		if v = shortText(sanitize(v), 4*w); v != "" {
			lines = append(lines, m.st.key.Render(name)+" "+v)
		}
	}
	field("reason", p.Reason)
	field("policy", p.Why)
	var src []string
	for _, s := range p.Sources {
		switch {
		case s.Turn != "" && s.Thread != "":
			src = append(src, "turn "+s.Turn+" ("+s.Thread+")")
		case s.Turn != "":
			src = append(src, "turn "+s.Turn)
		case s.Thread != "":
			src = append(src, "thread "+s.Thread)
		}
	}
	if len(src) > 0 {
		field("sources", strings.Join(src, ", "))
	} else {
		lines = append(lines, m.st.key.Render("sources")+" "+m.st.dim.Render("none given"))
	}
	return lines
}

// maxListRows is how many proposals the panel lists above the one shown.
const maxListRows = 4

// reviewList is the proposals waiting, one a line, the selected marked,
// and a rule under them; nothing when there is only one.
func (m *Model) reviewList() []string {
	r := &m.review
	if len(r.list) < 2 {
		return nil
	}
	first := min(max(r.sel-1, 0), max(len(r.list)-maxListRows, 0))
	var out []string
	for i := first; i < len(r.list) && i < first+maxListRows; i++ {
		p := r.list[i]
		mark := "  "
		if i == r.sel {
			mark = m.st.key.Render("› ")
		}
		meta := " · " + orDefault(sanitize(p.Author), "?") + " · " + p.CreatedAt.In(m.loc).Format("01-02 15:04")
		if r.deciding[p.ID] != "" {
			meta += " · deciding…"
		}
		line := sanitize(p.Op) + " " + sanitize(p.Path)
		if i == r.sel {
			line = m.st.toolName.Render(sanitize(p.Op)) + " " + m.st.boxTitle.Render(sanitize(p.Path))
		}
		out = append(out, mark+line+m.st.dim.Render(meta))
	}
	return append(out, m.st.rule.Render(strings.Repeat("─", 8)))
}

// reviewView draws the panel in w × h.
func (m *Model) reviewView(w, h int) []string {
	r := &m.review
	inner := max(w-4, 1)
	title := "review"
	p, ok := r.selected()
	if ok {
		title = fmt.Sprintf("review · %d of %d", r.sel+1, len(r.list))
		if r.more {
			title += "+"
		}
	}
	var lines []string
	switch {
	case !ok && r.ref != "":
		lines = append(lines, "asking hearth…")
	case !ok && r.err != "":
		lines = append(lines, m.st.noticeErr.Render("✗ "+r.err))
	case !ok:
		lines = append(lines, "nothing waits for your review",
			"", m.st.dim.Render("changes the agent proposes to its memory that policy leaves"),
			m.st.dim.Render("for you appear here"))
	}
	if !ok {
		for len(lines) < h-3 {
			lines = append(lines, "")
		}
		lines = append(lines, m.st.dim.Render("esc close"))
		return m.boxed(title, lines, w, h)
	}
	head := m.reviewHeader(p, inner)
	rows := max(h-2-len(head)-2, 1)
	diff := m.diffOf(p)
	r.scroll = min(r.scroll, max(len(diff)-rows, 0))
	lines = append(lines, head...)
	lines = append(lines, m.st.rule.Render(strings.Repeat("─", inner)))
	end := min(r.scroll+rows, len(diff))
	for _, d := range diff[r.scroll:end] {
		lines = append(lines, m.diffLineView(d))
	}
	for len(lines) < len(head)+1+rows {
		lines = append(lines, "")
	}
	keys := m.st.key.Render("a") + " approve · " + m.st.key.Render("e") + " edit · " + m.st.key.Render("r") + " reject"
	if len(r.list) > 1 {
		keys += " · ←/→ select"
	}
	if len(diff) > rows {
		keys += m.st.dim.Render(fmt.Sprintf(" · ↑/↓ %d–%d of %d", r.scroll+1, end, len(diff)))
	}
	keys += " · esc close"
	lines = append(lines, keys)
	return m.boxed(title, lines, w, h)
}

func (m *Model) diffLineView(d diffLine) string {
	switch d.kind {
	case '-':
		return m.st.errTag.Render("-" + d.text)
	case '+':
		return m.st.toolOK.Render("+" + d.text)
	case '@':
		return m.st.toolName.Render(d.text)
	case 'h':
		return m.st.dim.Render(d.text)
	case '!':
		return m.st.toolReason.Render(d.text)
	}
	return " " + d.text
}

// fileExt is name's extension, for the temporary file the editor opens
// (so that it highlights Markdown as Markdown); "" if it is odd.
func fileExt(name string) string {
	ext := path.Ext(name)
	if len(ext) < 2 || len(ext) > 12 {
		return ""
	}
	for _, c := range ext[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}
