package ndjson

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// staticMinter mints one fixed credential: these tests need a voice
// provider configured, not a credential.
type staticMinter struct{}

func (staticMinter) MintVoice(context.Context) (hearth.VoiceCredential, error) {
	return hearth.VoiceCredential{Value: "eph", URL: "wss://voice.invalid/realtime", Dialect: "xai"}, nil
}

// TestVoiceToolCallOverTCP: voice_tool_call runs the tool and is answered
// with voice_tool_result to the asking client only, with its call_id and
// ref; another client sees the call and its outcome as it would a text
// turn's. A confirm tool waits for a confirm, meanwhile the asker's other
// requests are answered. Failures are results; no voice provider is an
// error with the ref.
func TestVoiceToolCallOverTCP(t *testing.T) {
	ft := &fakeTools{}
	th := startHearth(t, "", func(c *testConfig) { c.Tools = ft; c.Voice = staticMinter{} })
	asker, other := dial(t, th.addr), dial(t, th.addr)

	send := func(c *ipc.Conn, m ipc.Msg) {
		t.Helper()
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	resultFor := func(ref string) func(ipc.Msg) bool {
		return func(m ipc.Msg) bool { r, ok := m.(*ipc.VoiceToolResult); return ok && r.Ref == ref }
	}

	send(asker, &ipc.VoiceToolCall{CallID: "call_1", Name: "lookup", Arguments: `{"q":"tea","reason":"to check"}`, Ref: "vt1"})
	got := recvUntil(t, asker, resultFor("vt1"))
	res := got[len(got)-1].(*ipc.VoiceToolResult)
	if res.CallID != "call_1" || res.IsError || res.Output != `lookup ok {"q":"tea"}` {
		t.Errorf("result = %+v", res)
	}
	// The other client sees the call stored (mode voice), started and
	// its outcome; never the result message.
	var seen []string
	for _, m := range recvUntil(t, other, func(m ipc.Msg) bool { _, ok := m.(*ipc.ToolResult); return ok }) {
		switch m := m.(type) {
		case *ipc.TurnStored:
			if m.Turn.Mode != ipc.ModeVoice || len(m.Turn.ToolCalls) != 1 || m.Turn.ToolCalls[0].ID != "call_1" || m.Ref != "vt1" {
				t.Errorf("stored = %+v", m)
			}
			seen = append(seen, "stored")
		case *ipc.ToolCall:
			seen = append(seen, "started")
		case *ipc.ToolResult:
			if m.ID != "call_1" || m.Result != res.Output || m.Reason != "to check" {
				t.Errorf("tool_result = %+v", m)
			}
			seen = append(seen, "outcome")
		case *ipc.VoiceToolResult:
			t.Errorf("another client got %+v", m)
		}
	}
	if strings.Join(seen, ",") != "stored,started,outcome" {
		t.Errorf("the other client saw %v", seen)
	}

	// A confirm tool: the asker is asked, answers a ping meanwhile, then
	// approves.
	send(asker, &ipc.VoiceToolCall{CallID: "call_2", Name: "save", Arguments: `{"reason":"keep"}`, Ref: "vt2"})
	got = recvUntil(t, asker, func(m ipc.Msg) bool { _, ok := m.(*ipc.ConfirmRequest); return ok })
	if req := got[len(got)-1].(*ipc.ConfirmRequest); req.ID != "call_2" || req.Name != "save" {
		t.Errorf("confirm_request = %+v", req)
	}
	send(asker, &ipc.Ping{Ref: "p"})
	for _, m := range recvUntil(t, asker, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok }) {
		if _, ok := m.(*ipc.VoiceToolResult); ok {
			t.Fatal("the confirm tool answered before it was confirmed")
		}
	}
	send(asker, &ipc.Confirm{ID: "call_2", Approve: true})
	got = recvUntil(t, asker, resultFor("vt2"))
	if res := got[len(got)-1].(*ipc.VoiceToolResult); res.IsError || res.CallID != "call_2" || !strings.HasPrefix(res.Output, "save ok") {
		t.Errorf("confirmed result = %+v", res)
	}

	// Failures are results the model reads.
	send(asker, &ipc.VoiceToolCall{CallID: "call_3", Name: "nope", Arguments: `{}`, Ref: "vt3"})
	got = recvUntil(t, asker, resultFor("vt3"))
	if res := got[len(got)-1].(*ipc.VoiceToolResult); !res.IsError || !strings.Contains(res.Output, `no tool named "nope"`) {
		t.Errorf("unknown tool = %+v", res)
	}

	plain := startHearth(t, "", func(c *testConfig) { c.Tools = &fakeTools{} })
	lines := exchange(t, plain.addr, `{"type":"voice_tool_call","call_id":"c","name":"lookup","arguments":"{}","ref":"vt9"}`)
	var refused bool
	for _, l := range lines {
		if strings.Contains(l, `"voice_tool_result"`) {
			t.Errorf("a hearth without voice ran the tool: %s", l)
		}
		refused = refused || strings.Contains(l, `"code":"no_voice_provider"`) && strings.Contains(l, `"ref":"vt9"`)
	}
	if !refused {
		t.Errorf("no no_voice_provider error with the ref among %q", lines)
	}
}
