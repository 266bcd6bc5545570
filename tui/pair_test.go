package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// TestPairCommand: /pair asks hearth for a code (no I/O: one message to
// the backend) and shows the code and hearth's fingerprint when it comes;
// a refusal is shown as an error.
func TestPairCommand(t *testing.T) {
	tests := []struct {
		name, cmd, actor string
		answer           ipc.Msg
		want             []string
	}{
		{"collaborator", "/pair", "", &ipc.PairCode{Code: "7KQ2M9XHTR", Actor: "collaborator", Expires: epoch.Add(5 * time.Minute), Fingerprint: "sha256:ab12", Ref: "r1"},
			[]string{"7KQ2M9XHTR", "collaborator", "sha256:ab12", "mnemo pair"}},
		{"owner", "/pair owner", "owner", &ipc.PairCode{Code: "ZZZZ2222ZZ", Actor: "owner", Expires: epoch.Add(5 * time.Minute), Ref: "r1"},
			[]string{"ZZZZ2222ZZ", "owner", "06:05"}},
		{"forbidden", "/pair", "", &ipc.Error{Code: ipc.CodeForbidden, Message: "this client is not allowed to do that", Ref: "r1"},
			[]string{"not allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, be := voiceModel(t, nil)
			if cmd := m.runCommand(tt.cmd); cmd != nil {
				t.Error("/pair returned a command; it only sends")
			}
			ps := sentOf[*ipc.PairStart](be)
			if len(ps) != 1 || ps[0].Actor != tt.actor || ps[0].Ref != "r1" {
				t.Fatalf("sent %+v", ps)
			}
			m.Update(tt.answer)
			s := screen(m)
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("screen lacks %q:\n%s", w, s)
				}
			}
		})
	}
}
