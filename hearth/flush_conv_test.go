package hearth_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// TestFlushPerConversation: two conversations, each past its share, each
// get their own summaries and flush cursors (main's in FlushCursorFile,
// the other's beside it); the other's window carries its own summary;
// both cursors survive a restart (the next flush of each goes on after
// its cursor, from its summary so far); and a forget of a record one
// summary covers resets that conversation's cursor only.
func TestFlushPerConversation(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	state := t.TempDir()
	ev := &flushEvents{}
	chat := &recModel{}
	flushed := make(chan hearth.Flushed, 64)
	curated := make(chan hearth.Curated, 64)
	cfg := hearth.Config{
		Journal: j, Vault: v, Models: fixed{chat}, ShutdownGrace: 5 * time.Second, Budget: flushBudget,
		Curator: &hearth.CuratorConfig{StateDir: state, Model: &flushModel{ev: ev},
			OnFlush: func(f hearth.Flushed) { flushed <- f }, Observe: func(c hearth.Curated) { curated <- c }},
	}
	const side = "side"
	byConv := map[string][]hearth.Flushed{}
	drain := func() {
		for {
			select {
			case f := <-flushed:
				conv := strings.TrimSuffix(strings.TrimPrefix(f.Path, "summaries/threads/"), "-"+f.Records[0]+".md")
				byConv[conv] = append(byConv[conv], f)
			default:
				return
			}
		}
	}
	// follow keeps both conversations loaded (a conversation nobody
	// follows leaves memory) and sends a turn to one, waiting until it is
	// curated: the flush pass after it then looks ahead from that turn.
	type core struct {
		h    *hearth.Hearth
		subs map[string]*hearth.Subscription
	}
	follow := func(h *hearth.Hearth) core {
		c := core{h: h, subs: map[string]*hearth.Subscription{}}
		for _, conv := range []string{hearth.MainConversation, side} {
			sub, err := h.Subscribe(hearth.WatchOptions{Conversation: conv})
			if err != nil {
				t.Fatal(err)
			}
			c.subs[conv] = sub
		}
		return c
	}
	n := 0
	turn := func(c core, conv string) {
		t.Helper()
		n++
		if err := c.h.SendTo(t.Context(), conv, "", conv+" "+longTurn(n)); err != nil {
			t.Fatal(err)
		}
		awaitReplies(t, c.subs[conv], 1)
		select {
		case <-curated:
		case <-time.After(30 * time.Second):
			t.Fatalf("not curated; health %+v", c.h.CuratorHealth())
		}
	}
	cursorOf := func(conv string) string {
		b, err := os.ReadFile(filepath.Join(state, hearth.FlushCursorFileOf(conv)))
		if err != nil {
			t.Fatalf("%s's flush cursor: %v", conv, err)
		}
		var m struct{ Cursor string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s's flush cursor %s: %v", conv, b, err)
		}
		return m.Cursor
	}
	lastShown := func() string {
		var s strings.Builder
		for _, m := range chat.last() {
			s.WriteString(m.Content + "\n")
		}
		return s.String()
	}

	h, stop := startStoppable(t, cfg)
	if _, err := h.NewConversation(side); err != nil {
		t.Fatal(err)
	}
	c := follow(h)
	for i := 0; len(byConv[hearth.MainConversation]) == 0 || len(byConv[side]) == 0; i++ {
		if i == 12 {
			t.Fatalf("after %d turns each, flushes %v; health %+v", i, byConv, h.CuratorHealth())
		}
		turn(c, hearth.MainConversation)
		turn(c, side)
		drain()
	}
	// side's window: its own summary stands in for its flushed turns,
	// never main's.
	for i := 0; !strings.Contains(lastShown(), "Earlier in this conversation (summary)"); i++ {
		if i == 6 {
			t.Fatalf("side's window never shows its summary:\n%s", lastShown())
		}
		turn(c, side)
		drain()
	}
	shown := lastShown()
	if !strings.Contains(shown, side+" message") || strings.Contains(shown, "main message") {
		t.Errorf("side's request is not side's:\n%s", shown)
	}
	for _, f := range byConv[hearth.MainConversation] {
		if strings.Contains(shown, f.Summary) {
			t.Errorf("side's window shows main's summary %q", f.Summary)
		}
	}
	mainCur, sideCur := cursorOf(hearth.MainConversation), cursorOf(side)
	if mainCur == "" || sideCur == "" || mainCur == sideCur {
		t.Fatalf("cursors: main %q, side %q", mainCur, sideCur)
	}
	if got := h.CuratorHealth().FlushCursor; got != mainCur {
		t.Errorf("health's flush cursor %q, want main's %q", got, mainCur)
	}
	sideSummary := byConv[side][len(byConv[side])-1].Summary
	stop()
	drain()

	// A restart: each conversation's next flush goes on after its own
	// cursor, from its own summary so far.
	h, stop = startStoppable(t, cfg)
	defer stop()
	c = follow(h)
	had := len(byConv[side])
	for i := 0; len(byConv[side]) == had; i++ {
		if i == 12 {
			t.Fatalf("no flush of side after the restart; health %+v", h.CuratorHealth())
		}
		turn(c, side)
		drain()
	}
	// (Read once a turn is curated: the curator's worker has started.)
	if got := h.CuratorHealth().FlushCursor; got != mainCur {
		t.Errorf("after the restart, health's flush cursor %q, want main's %q", got, mainCur)
	}
	again := byConv[side][had]
	if again.Records[0] <= sideCur {
		t.Errorf("after the restart side flushed from %s again, its cursor was %s", again.Records[0], sideCur)
	}
	var msg string
	for _, e := range ev.snapshot() {
		if e.flush && strings.Contains(e.texts[0], again.Records[0]) {
			msg = e.texts[0]
		}
	}
	if !strings.Contains(msg, "## Summary so far\n"+sideSummary) {
		t.Errorf("side's flush after the restart did not carry its summary %q forward:\n%s", sideSummary, msg)
	}
	if got := cursorOf(hearth.MainConversation); got != mainCur {
		t.Errorf("main's cursor moved from %s to %s without a main turn", mainCur, got)
	}

	// A forget of a record side's summary covers resets side's cursor,
	// not main's (TestForgetPerConversation: not even when main's span
	// holds the id).
	if _, err := h.Forget(t.Context(), hearth.ForgetRequest{IDs: []string{again.Records[0]}}); err != nil {
		t.Fatal(err)
	}
	if got := cursorOf(side); got != "" {
		t.Errorf("side's flush cursor %q after the forget, want reset", got)
	}
	if got := cursorOf(hearth.MainConversation); got != mainCur {
		t.Errorf("main's flush cursor %q after side's forget, want %q", got, mainCur)
	}
	if got := h.CuratorHealth().FlushCursor; got != mainCur {
		t.Errorf("health's flush cursor %q after side's forget, want main's %q", got, mainCur)
	}
}
