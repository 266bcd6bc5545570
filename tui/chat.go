package tui

import (
	"slices"

	"github.com/mnemo/mnemo/ipc"
)

// chat is the conversation as the UI shows it: items in key order, and a
// scroll position. It renders only the items on screen; each item caches
// its own rendering.
//
// Scrolling has two modes. Following, the view shows the end and new
// output scrolls it. Anchored (the owner scrolled up), the view's first
// line is line top.off of the item whose key is top.key: new output below
// does not move it, and unseen says there is some.
type chat struct {
	items  []*item
	byID   map[string]*item // stored turns by turn id
	byCall map[string]*item // tool cards by call id
	lastID string           // the newest stored turn id
	seq    int              // for local keys

	from itemKey // the first key shown (/clear, /history N)

	follow bool
	top    anchor
	unseen bool

	version int // bumped on every change that affects what is drawn
}

type anchor struct {
	key itemKey
	off int
}

func newChat() *chat {
	return &chat{byID: make(map[string]*item), byCall: make(map[string]*item), follow: true}
}

func (c *chat) changed() {
	c.version++
	if !c.follow {
		c.unseen = true
	}
}

// localKey is the key for something that happens now.
func (c *chat) localKey() itemKey {
	c.seq++
	return itemKey{c.lastID, c.seq}
}

func (c *chat) liveKey() itemKey {
	c.seq++
	return itemKey{liveID, c.seq}
}

func (c *chat) search(k itemKey) (int, bool) {
	return slices.BinarySearchFunc(c.items, k, func(it *item, k itemKey) int { return it.key.cmp(k) })
}

func (c *chat) insert(it *item) {
	i, found := c.search(it.key)
	if found {
		c.items[i] = it
	} else {
		c.items = slices.Insert(c.items, i, it)
	}
	if it.stored() {
		c.byID[it.key.id] = it
		if it.key.id > c.lastID {
			c.lastID = it.key.id
		}
	}
	if it.kind == kindTool {
		c.byCall[it.tool.id] = it
	}
	c.changed()
}

func (c *chat) remove(it *item) {
	if i, found := c.search(it.key); found && c.items[i] == it {
		c.items = slices.Delete(c.items, i, i+1)
		c.changed()
	}
}

// notice adds a local line to the chat.
func (c *chat) notice(level noticeLevel, text string) *item {
	it := &item{key: c.localKey(), kind: kindNotice, text: text, level: level}
	c.insert(it)
	return it
}

// upsert stores a turn, replacing what was there under its id (or, for a
// tool turn, the live card of its call). It reports whether the turn is
// new to the chat.
func (c *chat) upsert(t ipc.Turn) bool {
	t.Content = sanitize(t.Content)
	if old, ok := c.byID[t.ID]; ok {
		if old.turn.Content != t.Content || old.turn.Incomplete != t.Incomplete || old.turn.Truncated != t.Truncated {
			old.turn = t
			old.doc = nil
			if old.kind == kindTool {
				old.tool = cardFromTurn(t, old.tool)
			}
			old.touch()
			c.changed()
		}
		return false
	}
	it := &item{key: itemKey{t.ID, 0}, kind: kindTurn, turn: t}
	if t.Role == ipc.RoleTool {
		it.kind = kindTool
		var prev *toolCard
		if t.Tool != nil {
			if live, ok := c.byCall[t.Tool.ID]; ok {
				prev = live.tool
				if live.key.seq != 0 {
					c.remove(live)
				}
			}
		}
		it.tool = cardFromTurn(t, prev)
	}
	c.insert(it)
	return true
}

// merge folds a history snapshot in: turns are matched by id, so nothing
// is shown twice, and turns missed while away are inserted in order. It
// returns how many turns were new.
func (c *chat) merge(turns []ipc.Turn) (added int) {
	for _, t := range turns {
		if c.upsert(t) {
			added++
		}
	}
	return added
}

// replace makes the stored turns exactly turns, a history snapshot: a
// turn hearth no longer has goes (its journal changed while it was down,
// or this is another hearth), the rest is merged as merge does. Local
// items stay: notices, live tool cards, our messages not acknowledged
// yet; a reply cut short that was kept locally goes, since the snapshot
// holds what hearth stored of it. It returns how many turns were new and
// how many of those shown within the snapshot's span are gone; older ones
// beyond its start are dropped without counting, as hearth did not say.
//
// A view anchored on an item that went is anchored on the next one.
func (c *chat) replace(turns []ipc.Turn) (added, gone int) {
	keep := make(map[string]bool, len(turns))
	for _, t := range turns {
		keep[t.ID] = true
	}
	first := "" // an empty snapshot spans everything
	if len(turns) > 0 {
		first = turns[0].ID
	}
	anchorGone := false
	kept := c.items[:0]
	for _, it := range c.items {
		standIn := it.kind == kindTurn && it.key.seq != 0
		if !standIn && (!it.stored() || keep[it.key.id]) {
			kept = append(kept, it)
			continue
		}
		if it.stored() {
			if c.byID[it.key.id] == it {
				delete(c.byID, it.key.id)
			}
			if it.kind == kindTool && c.byCall[it.tool.id] == it {
				delete(c.byCall, it.tool.id)
			}
			if it.key.id >= first {
				gone++
			}
		}
		if !c.follow && it.key == c.top.key {
			anchorGone = true
		}
	}
	if len(kept) < len(c.items) {
		clear(c.items[len(kept):])
		c.items = kept
		c.changed()
	}
	c.lastID = ""
	for id := range c.byID {
		c.lastID = max(c.lastID, id)
	}
	added = c.merge(turns)
	if anchorGone {
		i, _ := c.search(c.top.key)
		if i >= len(c.items) {
			c.follow, c.unseen = true, false
		} else {
			c.top = anchor{key: c.items[i].key}
		}
	}
	c.version++
	return added, gone
}

// cardFromTurn builds the card of a stored tool turn; prev is the live
// card of the same call, whose measured duration it keeps if the turn
// carries none.
func cardFromTurn(t ipc.Turn, prev *toolCard) *toolCard {
	c := &toolCard{done: true, result: t.Content}
	if prev != nil {
		c.started, c.duration, c.args, c.reason = prev.started, prev.duration, prev.args, prev.reason
	}
	if r := t.Tool; r != nil {
		c.id, c.name = r.ID, sanitize(r.Name)
		if a := shortArgs(r.Arguments); a != "" {
			c.args = a
		}
		if r.Reason != "" {
			c.reason = sanitize(r.Reason)
		}
		if r.Result != "" {
			c.result = sanitize(r.Result)
		}
		c.err = sanitize(r.Error)
		if r.DurationMS > 0 || prev == nil {
			c.duration = msDuration(r.DurationMS)
		}
		c.confirmed = r.Confirmed
	}
	if c.name == "" {
		c.name = "tool"
	}
	return c
}

// stored reports whether the item is a turn of the journal: a stored
// turn, or the card of a stored tool turn.
func (it *item) stored() bool {
	return it.key.seq == 0 && (it.kind == kindTurn || it.kind == kindTool)
}

// start is the index of the first item shown.
func (c *chat) start() int {
	i, _ := c.search(c.from)
	return i
}

// clear hides everything there is now (the conversation stays on hearth).
func (c *chat) clear() {
	c.seq++
	c.from = itemKey{c.lastID, c.seq}
	c.follow, c.unseen = true, false
	c.version++
}

// showLast shows only the last n turns (and what came after them); n <= 0
// shows everything.
func (c *chat) showLast(n int) int {
	c.from = itemKey{}
	shown := 0
	if n > 0 {
		for i := len(c.items) - 1; i >= 0; i-- {
			if c.items[i].isTurn() {
				shown++
				c.from = c.items[i].key
				if shown == n {
					break
				}
			}
		}
	} else {
		for _, it := range c.items {
			if it.isTurn() {
				shown++
			}
		}
	}
	c.follow, c.unseen = true, false
	c.version++
	return shown
}

// view returns the h lines of the chat at width.
func (c *chat) view(rc *renderCtx, w, h int) []string {
	if h <= 0 {
		return nil
	}
	start := c.start()
	if c.follow {
		// Walk back from the end until the screen is full.
		var parts [][]string
		n := 0
		for i := len(c.items) - 1; i >= start && n < h; i-- {
			ls := c.items[i].render(rc, w)
			parts = append(parts, ls)
			n += len(ls)
		}
		out := make([]string, 0, h)
		skip := max(n-h, 0)
		for i := len(parts) - 1; i >= 0; i-- {
			for _, l := range parts[i] {
				if skip > 0 {
					skip--
					continue
				}
				out = append(out, l)
			}
		}
		return out
	}
	i, _ := c.search(c.top.key)
	i = max(i, start)
	off := c.top.off
	out := make([]string, 0, h)
	for ; i < len(c.items) && len(out) < h; i++ {
		ls := c.items[i].render(rc, w)
		if off < len(ls) {
			ls = ls[off:]
		} else {
			ls = nil
		}
		off = 0
		out = append(out, ls[:min(len(ls), h-len(out))]...)
	}
	return out
}

// firstVisible is the anchor of the view's first line.
func (c *chat) firstVisible(rc *renderCtx, w, h int) anchor {
	start := c.start()
	if !c.follow {
		i, _ := c.search(c.top.key)
		if i < start {
			return anchor{key: c.at(start).key}
		}
		return c.top
	}
	n := 0
	for i := len(c.items) - 1; i >= start; i-- {
		l := len(c.items[i].render(rc, w))
		if n+l >= h {
			return anchor{c.items[i].key, n + l - h}
		}
		n += l
	}
	if start < len(c.items) {
		return anchor{key: c.items[start].key}
	}
	return anchor{}
}

func (c *chat) at(i int) *item {
	if i < 0 || i >= len(c.items) {
		return &item{}
	}
	return c.items[i]
}

// scroll moves the view by delta lines (negative: up, toward older).
func (c *chat) scroll(rc *renderCtx, w, h, delta int) {
	start := c.start()
	if delta == 0 || start >= len(c.items) {
		return
	}
	a := c.firstVisible(rc, w, h)
	i, _ := c.search(a.key)
	i = max(i, start)
	off := a.off
	if delta < 0 {
		k := -delta
		for k > 0 {
			if off >= k {
				off -= k
				break
			}
			k -= off
			if i == start {
				off = 0
				break
			}
			i--
			off = len(c.items[i].render(rc, w))
		}
	} else {
		off += delta
		for i < len(c.items) {
			l := len(c.items[i].render(rc, w))
			if off < l {
				break
			}
			off -= l
			i++
		}
	}
	c.version++
	if i >= len(c.items) || c.linesFrom(rc, w, i, off, h) <= h {
		c.follow, c.unseen = true, false
		return
	}
	c.follow = false
	c.top = anchor{c.items[i].key, off}
}

// linesFrom counts the lines from (i, off) to the end, stopping past h.
func (c *chat) linesFrom(rc *renderCtx, w, i, off, h int) int {
	n := -off
	for ; i < len(c.items) && n <= h; i++ {
		n += len(c.items[i].render(rc, w))
	}
	return n
}

// toTop anchors the view at the first item shown.
func (c *chat) toTop(rc *renderCtx, w, h int) {
	start := c.start()
	if start >= len(c.items) {
		return
	}
	c.version++
	if c.linesFrom(rc, w, start, 0, h) <= h {
		c.follow = true
		return
	}
	c.follow = false
	c.top = anchor{c.items[start].key, 0}
}

// toBottom follows the end again.
func (c *chat) toBottom() {
	c.follow, c.unseen = true, false
	c.version++
}

// jumpTo anchors the view at the item with key k, if it is shown.
func (c *chat) jumpTo(rc *renderCtx, w, h int, k itemKey) bool {
	i, found := c.search(k)
	if !found || i < c.start() {
		return false
	}
	c.version++
	if c.linesFrom(rc, w, i, 0, h) <= h {
		c.follow, c.unseen = true, false
		return true
	}
	c.follow = false
	c.top = anchor{k, 0}
	return true
}

// tools returns the tool cards, oldest first, at most n of the newest.
func (c *chat) tools(n int) []*item {
	var out []*item
	for i := len(c.items) - 1; i >= 0 && len(out) < n; i-- {
		if c.items[i].kind == kindTool {
			out = append(out, c.items[i])
		}
	}
	slices.Reverse(out)
	return out
}
