package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

const (
	maxInputRows = 8   // the editor grows up to this many rows, then scrolls
	maxInputHist = 500 // entries of input history kept

	// A paste larger than this is held as an attachment to the message
	// instead of going into the textarea, whose editing cost grows with
	// its content: typing stays instant after pasting a whole log.
	pasteInlineBytes = 4 << 10
	pasteInlineLines = 40
)

// editor is the message editor: a textarea that grows with its content,
// with shell-like input history on up/down, and large pastes held beside
// it.
type editor struct {
	ta      textarea.Model
	hist    []string
	histIdx int    // len(hist) when not browsing
	draft   string // what was typed before browsing began
	width   int
	pastes  []string
}

// largePaste reports whether a paste is held as an attachment.
func largePaste(s string) bool {
	return len(s) > pasteInlineBytes || strings.Count(s, "\n") >= pasteInlineLines
}

// attach holds a large paste.
func (e *editor) attach(s string) { e.pastes = append(e.pastes, s) }

// detach drops the newest paste; it reports whether there was one.
func (e *editor) detach() bool {
	if len(e.pastes) == 0 {
		return false
	}
	e.pastes = e.pastes[:len(e.pastes)-1]
	return true
}

// content is the message to send: what was typed, then the pastes.
func (e *editor) content() string {
	parts := make([]string, 0, 1+len(e.pastes))
	if v := e.ta.Value(); strings.TrimSpace(v) != "" || len(e.pastes) == 0 {
		parts = append(parts, v)
	}
	parts = append(parts, e.pastes...)
	return strings.Join(parts, "\n\n")
}

// size is the bytes the message would have.
func (e *editor) size() int {
	n := len(e.ta.Value())
	for _, p := range e.pastes {
		n += len(p) + 2
	}
	return n
}

// chips is the line that lists the held pastes, or "".
func (e *editor) chips(st *styles) string {
	if len(e.pastes) == 0 {
		return ""
	}
	var parts []string
	for i, p := range e.pastes {
		lines := strings.Count(p, "\n") + 1
		parts = append(parts, st.popupSel.Render(fmt.Sprintf(" pasted #%d · %d lines · %s ", i+1, lines, byteSize(len(p)))))
	}
	return " " + strings.Join(parts, " ") + st.dim.Render("  backspace on an empty line drops the last")
}

func byteSize(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func newEditor(st *styles) *editor {
	ta := textarea.New()
	ta.Placeholder = "Message mnemo  ·  / for commands"
	ta.ShowLineNumbers = false
	ta.Prompt = "┃ "
	ta.CharLimit = 0
	ta.MaxHeight = 0 // large pastes are fine; the editor scrolls
	ta.MaxWidth = 0
	ta.Cursor.SetMode(cursor.CursorStatic)
	km := textarea.DefaultKeyMap
	km.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	km.TransposeCharacterBackward = key.NewBinding(key.WithDisabled()) // ctrl+t is the tool panel
	km.InputBegin = key.NewBinding(key.WithKeys("alt+<"))
	km.InputEnd = key.NewBinding(key.WithKeys("alt+>"))
	ta.KeyMap = km
	focused, blurred := textarea.DefaultStyles()
	focused.CursorLine = lipgloss.NewStyle()
	focused.Prompt = st.userBar
	focused.Placeholder = st.dim
	blurred.Prompt = st.dim
	ta.FocusedStyle, ta.BlurredStyle = focused, blurred
	ta.Focus()
	ta.SetHeight(1)
	return &editor{ta: ta}
}

func (e *editor) value() string { return e.ta.Value() }

func (e *editor) reset() {
	e.ta.Reset()
	e.pastes = nil
	e.histIdx = len(e.hist)
	e.draft = ""
	e.fit()
}

func (e *editor) set(s string) {
	e.ta.SetValue(s)
	e.fit()
}

// insert types s at the cursor.
func (e *editor) insert(s string) {
	e.ta.InsertString(s)
	e.fit()
}

func (e *editor) setWidth(w int) {
	e.width = w
	e.ta.SetWidth(w)
	e.fit()
}

// fit sets the editor's height to its wrapped content, up to maxInputRows.
func (e *editor) fit() {
	inner := max(e.width-ansi.StringWidth(e.ta.Prompt)-1, 1)
	rows := 0
	for l := range strings.SplitSeq(e.ta.Value(), "\n") {
		rows += max(1, (ansi.StringWidth(l)+inner)/inner)
		if rows >= maxInputRows {
			break
		}
	}
	e.ta.SetHeight(min(max(rows, 1), maxInputRows))
}

func (e *editor) height() int { return e.ta.Height() }

// remember adds a sent line to the input history.
func (e *editor) remember(s string) {
	if n := len(e.hist); n == 0 || e.hist[n-1] != s {
		e.hist = append(e.hist, s)
		if len(e.hist) > maxInputHist {
			e.hist = e.hist[len(e.hist)-maxInputHist:]
		}
	}
	e.histIdx = len(e.hist)
}

// onFirstRow reports whether the cursor is on the editor's first visual
// row: up there browses the history instead of moving the cursor.
func (e *editor) onFirstRow() bool {
	return e.ta.Line() == 0 && e.ta.LineInfo().RowOffset == 0
}

func (e *editor) onLastRow() bool {
	li := e.ta.LineInfo()
	return e.ta.Line() == e.ta.LineCount()-1 && li.RowOffset >= li.Height-1
}

// older shows the previous history entry; it reports whether it did.
func (e *editor) older() bool {
	if e.histIdx == 0 || len(e.hist) == 0 {
		return false
	}
	if e.histIdx == len(e.hist) {
		e.draft = e.ta.Value()
	}
	e.histIdx--
	e.set(e.hist[e.histIdx])
	return true
}

// newer shows the next history entry, then the draft.
func (e *editor) newer() bool {
	if e.histIdx >= len(e.hist) {
		return false
	}
	e.histIdx++
	if e.histIdx == len(e.hist) {
		e.set(e.draft)
	} else {
		e.set(e.hist[e.histIdx])
	}
	e.ta.CursorEnd()
	return true
}

func (e *editor) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	e.ta, cmd = e.ta.Update(msg)
	e.fit()
	return cmd
}

func (e *editor) view() string { return e.ta.View() }
