package reliability

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpEnv makes this test binary a stdio MCP server (hearth starts it from
// gateway.json): init runs before TestMain, so the server never builds
// hearth or runs a test.
const mcpEnv = "MNEMO_RELIABILITY_MCP"

func init() {
	if os.Getenv(mcpEnv) != "1" {
		return
	}
	// Wedged for good: SIGTERM is ignored, and a stall in progress keeps
	// the process after its stdin closes (only SIGKILL ends it then).
	signal.Ignore(syscall.SIGTERM)
	err := stallServer().Run(context.Background(), &mcp.StdioTransport{})
	if stalled.Load() {
		select {}
	}
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// stalled says a call is stalled in this process (an MCP server).
var stalled atomic.Bool

// stallServer serves three tools: lookup answers, stall never answers
// (nor heeds the client's cancellation, its stdin closing or SIGTERM: a
// server wedged in a call), and crash ends the process in the middle of
// the call.
func stallServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mnemo-reliability", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&mcp.Tool{Name: "lookup", Description: "Look q up.", InputSchema: schema, Annotations: readOnly},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Q string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found: " + in.Q}}}, nil
		})
	wedged := make(chan struct{}) // never closed: the process ends with it
	s.AddTool(&mcp.Tool{Name: "stall", Description: "Never answer.", InputSchema: schema, Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			stalled.Store(true)
			<-wedged
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exit mid-call.", InputSchema: schema, Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	return s
}

// hangGateway writes a gateway.json naming this test binary as the stdio
// server "probe".
func hangGateway(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"servers": []any{map[string]any{
		// A race-enabled binary sleeps 1 s at exit unless told not to.
		"label": "probe", "command": self, "env": map[string]string{mcpEnv: "1", "GORACE": "atexit_sleep_ms=0"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hangCallTool scripts the model to call the probe's tool, then to answer.
func hangCallTool(model *llmtest.Server, tool, q string) {
	model.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "probe__" + tool, Arguments: `{"q":"` + q + `","reason":"the test asks"}`}}})
}

// hangToolOutcome reads a turn that calls one tool: its result and how the
// turn ended.
func hangToolOutcome(t *testing.T, c *ipc.Conn, ref string, during func()) (*ipc.ToolResult, ipc.Msg) {
	t.Helper()
	hangAwait(t, c, 30*time.Second, "the tool call", func(m ipc.Msg) bool { _, ok := m.(*ipc.ToolCall); return ok })
	if during != nil {
		during()
	}
	res := hangAwait(t, c, 30*time.Second, "the tool's result", func(m ipc.Msg) bool { _, ok := m.(*ipc.ToolResult); return ok }).(*ipc.ToolResult)
	return res, hangAwait(t, c, 30*time.Second, "the end of the turn", hangTurnEnd(ref, nil))
}

// A stdio MCP server that hangs in tools/call or exits mid-call: the
// tool's result is an error saying so within the tool timeout (or at
// once), health answers meanwhile, the turn goes on to the model's
// answer, the next call works (on the same session after a hang, which
// still answers pings; on a new process after the exit), and SIGTERM
// while a call hangs ends hearth cleanly.
func TestMCPServerHangs(t *testing.T) {
	t.Parallel() // the hang tests wait mostly on timeouts: side by side
	gw := hangGateway(t)
	for _, tc := range []struct {
		name, tool string
		want       string // in the tool result's error
		within     time.Duration
	}{
		{"hangs on tools/call", "stall", "probe__stall: timed out after 1s", 1*time.Second + 4*time.Second},
		{"exits mid-call", "crash", `the tool server "probe" stopped`, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := llmtest.NewOpenAI(t, "sk-test")
			d := startHung(t, hearthtest.OpenAIEnv(model), "-gateway", gw, "-tool-timeout", "1s")
			c := dialHung(t, d)

			hangCallTool(model, "lookup", "first")
			hangSend(t, c, &ipc.Message{Content: "look it up", Ref: "m0"})
			res, end := hangToolOutcome(t, c, "m0", nil)
			if res.Error != "" || !strings.Contains(res.Result, "found: first") {
				t.Fatalf("lookup before the fault: %+v", res)
			}
			hangReply(t, end, "echo: look it up")

			hangCallTool(model, tc.tool, "x")
			start := time.Now()
			hangSend(t, c, &ipc.Message{Content: "try the faulty tool", Ref: "m1"})
			res, end = hangToolOutcome(t, c, "m1", func() { hangHealthy(t, c, "h1") })
			took := time.Since(start)
			if !strings.Contains(res.Error, tc.want) {
				t.Errorf("the faulty tool's result: %+v, want an error saying %q", res, tc.want)
			}
			if took > tc.within {
				t.Errorf("the faulty call took %v, want under %v", took, tc.within)
			}
			t.Logf("%s after %v", res.Error, took.Round(time.Millisecond))
			hangReply(t, end, "echo: try the faulty tool")

			hangCallTool(model, "lookup", "again")
			hangSend(t, c, &ipc.Message{Content: "look it up again", Ref: "m2"})
			res, end = hangToolOutcome(t, c, "m2", nil)
			if res.Error != "" || !strings.Contains(res.Result, "found: again") {
				t.Errorf("lookup after the fault: %+v", res)
			}
			hangReply(t, end, "echo: look it up again")

			hangCallTool(model, "stall", "y")
			hangSend(t, c, &ipc.Message{Content: "one more", Ref: "m3"})
			hangAwait(t, c, 30*time.Second, "the tool call", func(m ipc.Msg) bool { _, ok := m.(*ipc.ToolCall); return ok })
			// The turn ends at the tool timeout; closing the wedged server
			// (stdin, then SIGTERM, both ignored) takes two short waits
			// and SIGKILL.
			took = hangStop(t, d, hangGrace)
			t.Logf("stopped in %v with a call hung in a server that ignores SIGTERM", took.Round(time.Millisecond))
		})
	}
}
