package tui

import (
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// A forgotten turn leaves the chat whoever asked; the others stay.
func TestChatForget(t *testing.T) {
	c := newChat()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range []string{"01A", "01B", "01C"} {
		c.upsert(ipc.Turn{ID: id, Role: ipc.RoleUser, Content: "turn " + id, TS: ts, Mode: ipc.ModeText})
	}
	c.forget([]string{"01B", "01Z"})
	var got []string
	for _, it := range c.items {
		got = append(got, it.key.id)
	}
	if len(got) != 2 || got[0] != "01A" || got[1] != "01C" {
		t.Errorf("chat holds %v after forgetting 01B, want 01A and 01C", got)
	}
	if _, ok := c.byID["01B"]; ok {
		t.Error("the forgotten turn is still indexed by id")
	}
}
