package wire

import (
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// TestVoiceToolResult: a voice tool's outcome on the wire keeps its call
// id, error flag and the asker's ref; an output too long for a line is
// cut on a rune boundary, so that the answer always reaches the client.
func TestVoiceToolResult(t *testing.T) {
	tests := []struct {
		name    string
		in      hearth.VoiceToolResult
		wantLen int
	}{
		{"short", hearth.VoiceToolResult{CallID: "c1", Output: "12:00 UTC"}, 9},
		{"error", hearth.VoiceToolResult{CallID: "c2", Output: "there is no tool named \"x\"", IsError: true}, 26},
		{"huge, escaped", hearth.VoiceToolResult{CallID: "c3", Output: strings.Repeat("\x01é", 1<<20)}, maxVoiceOutput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := VoiceToolResult(tc.in, "vt")
			if m.CallID != tc.in.CallID || m.IsError != tc.in.IsError || m.Ref != "vt" || len(m.Output) != tc.wantLen && len(m.Output) != tc.wantLen-1 {
				t.Errorf("= call %q error %v ref %q, %d bytes; want %d", m.CallID, m.IsError, m.Ref, len(m.Output), tc.wantLen)
			}
			if !strings.HasPrefix(tc.in.Output, m.Output) {
				t.Error("the output is not a prefix of the tool's")
			}
			if _, err := ipc.Encode(m); err != nil {
				t.Errorf("does not encode as one line: %v", err)
			}
		})
	}
}
