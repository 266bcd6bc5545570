package ndjson

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/ipc"
)

// A client that half-closes after its requests (nc -N, a script whose
// stdin ends) gets every answer before hearth closes the connection.
func TestHalfCloseAnswersThenCloses(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string // message types expected after history, in order
	}{
		{
			name:  "nothing asked",
			lines: nil,
			want:  nil,
		},
		{
			name:  "ping",
			lines: []string{`{"type":"ping","ref":"p"}`},
			want:  []string{"pong"},
		},
		{
			name:  "message answered",
			lines: []string{`{"type":"message","content":"hello","ref":"m1"}`},
			want:  []string{"turn", "status:thinking", "token", "done", "status:idle"},
		},
		{
			// The bad line's error is answered as it is read, before
			// the turns that follow it are stored.
			name: "a bad line, then two messages",
			lines: []string{
				`not json`,
				`{"type":"message","content":"one"}`,
				`{"type":"message","content":"two"}`,
			},
			want: []string{"error", "turn", "status:thinking", "token", "done", "status:idle", "turn", "status:thinking", "token", "done", "status:idle"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := newScriptModel()
			th := startHearth(t, "", func(c *testConfig) { c.Model = model })
			for range 2 {
				model.replies <- chunks("Hi there")
			}
			c := dialRaw(t, th.addr)
			// All in one write, as a pipe into nc sends it: the
			// requests arrive with the handshake.
			c.send(t, strings.Join(append([]string{`{"type":"connect","token":"` + testToken + `"}`}, tt.lines...), "\n"))
			if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			got := c.rest(t)
			if len(got) == 0 {
				t.Fatal("no history")
			}
			if _, ok := got[0].(*ipc.History); !ok {
				t.Fatalf("first message %T, want history", got[0])
			}
			// Tokens may coalesce: compare with runs of tokens as one.
			var kinds []string
			for _, k := range types(got[1:]) {
				if k == "token" && len(kinds) > 0 && kinds[len(kinds)-1] == "token" {
					continue
				}
				kinds = append(kinds, k)
			}
			if !slices.Equal(kinds, tt.want) {
				t.Errorf("after history got %v, want %v", kinds, tt.want)
			}
		})
	}
}
