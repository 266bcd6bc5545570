package ndjson

import (
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// TestShutdownMessage: the owner's shutdown message reaches the daemon's
// shutdown path; a door without one refuses it, with the request's ref,
// and keeps the connection open.
func TestShutdownMessage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stoppable bool
	}{
		{"the owner stops hearth", true},
		{"a door without a shutdown path refuses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan struct{})
			th := startHearth(t, "", func(c *testConfig) {
				if tc.stoppable {
					c.Shutdown = func() { close(asked) }
				}
			})
			c := dial(t, th.addr)
			if err := c.Send(&ipc.Shutdown{Ref: "s1"}); err != nil {
				t.Fatal(err)
			}
			if tc.stoppable {
				select {
				case <-asked:
				case <-time.After(10 * time.Second):
					t.Fatal("the shutdown path was never called")
				}
				return
			}
			got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
			e := got[len(got)-1].(*ipc.Error)
			if e.Code != ipc.CodeUnavailable || e.Ref != "s1" {
				t.Errorf("answer = %+v, want unavailable for s1", e)
			}
			if err := c.Send(&ipc.Ping{Ref: "p"}); err != nil {
				t.Fatal(err)
			}
			recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok })
		})
	}
}
