package tui

import (
	"slices"
	"strings"

	"github.com/mnemo/mnemo/ipc"
)

// onForgotten drops forgotten turns from the view and from the search
// results shown; any client may have asked.
func (m *Model) onForgotten(msg *ipc.Forgotten) {
	m.chat.forget(msg.IDs)
	m.search.hits = slices.DeleteFunc(m.search.hits, func(h ipc.SearchHit) bool {
		id, _, _ := strings.Cut(h.Turn.ID, "#")
		return slices.Contains(msg.IDs, id)
	})
	m.search.sel = min(m.search.sel, max(0, len(m.search.hits)-1))
}

// forget removes the turns ids from the chat.
func (c *chat) forget(ids []string) {
	for _, id := range ids {
		if it, ok := c.byID[id]; ok {
			c.remove(it)
			delete(c.byID, id)
		}
	}
}
