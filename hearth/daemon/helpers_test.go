package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// testToken is the token the daemon tests give hearth (APP_AUTH_TOKEN).
const testToken = "test-token-0123456789"

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func ptr[T any](v T) *T { return &v }

func budget(tokens, recent, memories, tools int) hearth.ContextBudget {
	return hearth.ContextBudget{Tokens: tokens, Shares: hearth.ContextShares{Recent: recent, Memories: memories, Tools: tools}}
}

// dial connects to hearth at addr as a client; the test's cleanup closes
// the connection.
func dial(t *testing.T, addr string) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: testToken, Client: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recvUntil reads messages until stop returns true, returning all read.
func recvUntil(t *testing.T, c *ipc.Conn, stop func(ipc.Msg) bool) []ipc.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []ipc.Msg
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("recv after %d messages: %v", len(got), err)
		}
		got = append(got, m)
		if stop(m) {
			return got
		}
	}
}
