package ndjson

import (
	"testing"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

// TestProviderCheck: the owner's provider_check is answered, to that
// client, with the model's name and latency; a device of another actor
// is refused (the call costs the owner's tokens) and its connection
// stays open.
func TestProviderCheck(t *testing.T) {
	th, _ := startAuthHearth(t)
	c := dial(t, th.addr)
	if err := c.Send(&ipc.ProviderCheck{Ref: "p1"}); err != nil {
		t.Fatal(err)
	}
	msgs := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.ProviderStatus); return ok })
	st := msgs[len(msgs)-1].(*ipc.ProviderStatus)
	if !st.OK || st.Ref != "p1" || st.Provider != "script" || st.Model != "script-1" || st.Category != "" || st.Problem != "" {
		t.Errorf("provider_status = %+v, want ok from script/script-1 for p1", st)
	}

	p := pairOver(t, th, auth.ActorCollaborator, "phone")
	dev, err := dialAs(t, th.addr, p.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Send(&ipc.ProviderCheck{Ref: "p2"}); err != nil {
		t.Fatal(err)
	}
	msgs = recvUntil(t, dev, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := msgs[len(msgs)-1].(*ipc.Error); e.Code != ipc.CodeForbidden || e.Ref != "p2" {
		t.Errorf("a device's provider_check: %+v, want forbidden for p2", e)
	}
	if err := dev.Send(&ipc.Ping{Ref: "after"}); err != nil {
		t.Fatal(err)
	}
	recvUntil(t, dev, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok })
}
