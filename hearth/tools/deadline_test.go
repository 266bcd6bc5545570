package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallerDeadlineIsATimeout: a call that outlives the caller's
// deadline (the agent's tool timeout, shorter than the registry's, given
// as a DeadlineCause) is told as a timeout of that length, not as a
// cancellation, for a
// built-in and for an MCP server over HTTP and stdio; a cancelled call
// is still told as cancelled.
func TestCallerDeadlineIsATimeout(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("web", h.URL, nil), stdioEntry(t, "local", nil))
	r := newTestRegistry(t, Options{
		GatewayPath: g.path,
		CallTimeout: time.Minute,
		Builtins: []Builtin{{Spec: Spec{Name: "waits", Description: "waits"},
			Run: func(ctx context.Context, _ json.RawMessage) (Result, error) { <-ctx.Done(); return Result{}, ctx.Err() }}},
	})
	if _, err := r.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"waits", "web__slow", "local__slow"} {
		t.Run(tool, func(t *testing.T) {
			ctx, cancel := context.WithTimeoutCause(t.Context(), 300*time.Millisecond, &DeadlineCause{After: 300 * time.Millisecond})
			defer cancel()
			res, err := r.Call(ctx, tool, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if want := tool + ": timed out after 300ms"; !res.IsError || res.Text != want {
				t.Errorf("Call(%s) past the caller's deadline = %+v, want the error %q", tool, res, want)
			}

			ctx, cancel = context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel) // the owner cancels the turn mid-call
			res, err = r.Call(ctx, tool, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if want := tool + ": the call was cancelled"; !res.IsError || res.Text != want {
				t.Errorf("Call(%s) cancelled = %+v, want the error %q", tool, res, want)
			}
		})
	}
}

// wedgedEnv makes the test binary a stdio MCP server wedged in its one
// tool: it ignores SIGTERM and stays after its stdin closes.
const wedgedEnv = "MNEMO_TOOLS_TEST_WEDGED"

func init() {
	if os.Getenv(wedgedEnv) != "1" {
		return
	}
	signal.Ignore(syscall.SIGTERM)
	wedged := make(chan struct{}) // never closed: only SIGKILL ends it
	s := mcp.NewServer(&mcp.Implementation{Name: "wedged", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "stall", Description: "Never answer.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-wedged
			return nil, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	<-wedged
}

// TestWedgedStdioServerClosed: closing the registry ends a stdio server
// wedged in a call that ignores its stdin closing and SIGTERM, by SIGKILL
// after two short waits (stdioTerminate), not the SDK's 5 s each: hearth's
// shutdown is not held past its grace.
func TestWedgedStdioServerClosed(t *testing.T) {
	g := newGateway(t)
	g.set(stdioEntry(t, "wedged", map[string]string{wedgedEnv: "1"}))
	r := New(Options{GatewayPath: g.path, CallTimeout: 200 * time.Millisecond})
	defer r.Close()
	if _, err := r.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Call(t.Context(), "wedged__stall", json.RawMessage(`{}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "timed out") {
		t.Fatalf("call to the wedged server = %+v, %v; want a timeout", res, err)
	}
	cmd := stdioCmd(poolServer(r, "wedged"))
	start := time.Now()
	r.Close()
	took := time.Since(start)
	if cmd.ProcessState == nil {
		t.Error("the wedged server's process was not reaped")
	}
	if limit := 2*stdioTerminate + 3*time.Second; took > limit {
		t.Errorf("closing took %v with a wedged server, want under %v", took, limit)
	}
	t.Logf("closed in %v", took.Round(time.Millisecond))
}
