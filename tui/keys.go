package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key the UI handles itself; the rest goes to the editor.
//
//	enter            send (or run a /command)
//	alt+enter ctrl+j new line
//	up / down        input history (on the editor's first / last row)
//	tab              complete a /command
//	esc              cancel the reply in flight; close a panel; jump to the end
//	pgup / pgdown    scroll a page; shift+up / shift+down a line; mouse wheel
//	ctrl+home/end    oldest / newest
//	alt+r            review memory changes (/review)
//	ctrl+t           tool panel
//	alt+t            timestamps
//	alt+v            voice on / off
//	ctrl+space       voice: talk (push-to-talk: press to talk, again to send) or interrupt the agent
//	ctrl+g, f1       help
//	ctrl+c           quit
type keyMap struct {
	Send, Newline, History, Complete   key.Binding
	Cancel                             key.Binding
	PageUp, PageDown, LineUp, LineDown key.Binding
	Top, Bottom                        key.Binding
	Tools, Stamps, Help, Quit          key.Binding
	Review                             key.Binding
	Yes, No                            key.Binding
	Voice, Talk                        key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		Send:     b([]string{"enter"}, "enter", "send"),
		Newline:  b([]string{"alt+enter", "ctrl+j"}, "alt+enter", "newline"),
		History:  b([]string{"up", "down"}, "↑/↓", "input history"),
		Complete: b([]string{"tab"}, "tab", "complete /command"),
		Cancel:   b([]string{"esc"}, "esc", "cancel reply"),
		PageUp:   b([]string{"pgup"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown"}, "pgdn", "page down"),
		LineUp:   b([]string{"shift+up"}, "shift+↑", "scroll up"),
		LineDown: b([]string{"shift+down"}, "shift+↓", "scroll down"),
		Top:      b([]string{"ctrl+home"}, "ctrl+home", "oldest"),
		Bottom:   b([]string{"ctrl+end"}, "ctrl+end", "newest"),
		Tools:    b([]string{"ctrl+t"}, "ctrl+t", "tools"),
		Stamps:   b([]string{"alt+t"}, "alt+t", "timestamps"),
		Review:   b([]string{"alt+r"}, "alt+r", "review memory"),
		Help:     b([]string{"ctrl+g", "f1"}, "ctrl+g", "help"),
		Quit:     b([]string{"ctrl+c"}, "ctrl+c", "quit"),
		Yes:      b([]string{"y", "Y"}, "y", "allow"),
		No:       b([]string{"n", "N", "esc"}, "n", "deny"),
		// ctrl+space arrives as NUL, which terminals name ctrl+@.
		Voice: b([]string{"alt+v"}, "alt+v", "voice on/off"),
		Talk:  b([]string{"ctrl+@"}, "ctrl+space", "voice: talk / interrupt"),
	}
}

// ShortHelp is the one-line help under the status bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Send, k.Newline, k.Cancel, k.Tools, k.Help, k.Quit}
}

// FullHelp is the help overlay.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Send, k.Newline, k.History, k.Complete},
		{k.Cancel, k.PageUp, k.PageDown, k.LineUp, k.LineDown, k.Review},
		{k.Top, k.Bottom, k.Tools, k.Stamps, k.Help, k.Quit},
		{k.Voice, k.Talk},
	}
}
