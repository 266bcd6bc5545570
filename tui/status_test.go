package tui

import (
	"testing"

	"github.com/mnemo/mnemo/ipc"
)

// TestStatusRetryDetail: while hearth retries a model call, the status
// bar says so beside "thinking", to a client that was connected and to
// one that joins meanwhile; the next status clears it.
func TestStatusRetryDetail(t *testing.T) {
	const detail = "provider not responding, retry 2/3 in 4 s"
	t.Run("status", func(t *testing.T) {
		hs := newHarness(t, 100, 20)
		hs.connect()
		hs.send(&ipc.Status{State: ipc.StateThinking})
		hs.wantScreen("thinking")
		hs.wantNoScreen("retry")
		hs.send(&ipc.Status{State: ipc.StateThinking, Detail: detail})
		hs.wantScreen("thinking · " + detail)
		hs.send(&ipc.Status{State: ipc.StateThinking})
		hs.wantScreen("thinking")
		hs.wantNoScreen("retry")
		hs.send(&ipc.Status{State: ipc.StateThinking, Detail: detail}, &ipc.Status{State: ipc.StateIdle})
		hs.wantNoScreen("retry")
	})
	t.Run("joining mid-retry", func(t *testing.T) {
		hs := newHarness(t, 100, 20)
		hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{
			Server: "hearth/0.1.0", Protocol: 1, ConversationID: "main",
			State: ipc.StateThinking, Detail: detail, Provider: "xai", Model: "grok-4.3",
		}})
		hs.wantScreen("thinking · " + detail)
		hs.send(&ipc.Status{State: ipc.StateIdle})
		hs.wantNoScreen("retry")
	})
}
