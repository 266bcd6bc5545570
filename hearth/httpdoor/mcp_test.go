package httpdoor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// bearerTransport adds a bearer token to every request of a client that
// knows nothing of it (the MCP SDK's).
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// pairedStore is a real auth store with the owner's token and one paired
// device per actor; it returns the tokens by actor.
func pairedStore(t *testing.T) (*auth.Store, map[auth.Actor]string) {
	t.Helper()
	st, err := auth.Open(auth.Options{OwnerToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	toks := map[auth.Actor]string{auth.ActorOwner: testToken}
	for _, a := range []auth.Actor{auth.ActorCollaborator, auth.ActorExternalAgent, auth.ActorService, auth.ActorSystemAgent, auth.ActorBackgroundAgent} {
		pc, err := st.StartPairing(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		_, tok, err := st.Redeem(t.Context(), pc.Code, "Crush "+string(a))
		if err != nil {
			t.Fatal(err)
		}
		toks[a] = tok
	}
	return st, toks
}

func mcpConnect(t *testing.T, th *testHearth, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mnemo-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   th.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// callTool calls a tool and decodes its structured result into out; it
// returns the error text of a tool error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if out != nil {
		j, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j, out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, j)
		}
	}
	return ""
}

func projectNote(body string) string {
	return fmt.Sprintf("---\nid: %s\ntitle: A project\ntype: project\nstatus: active\nconfidence: 0.9\n---\n%s\n", vault.NewNoteID(), body)
}

// TestMCPGoClient: the official go-sdk client, as an external agent,
// lists the tools, searches, proposes (one applied, one queued for the
// owner), reads and lists what was applied.
func TestMCPGoClient(t *testing.T) {
	st, toks := pairedStore(t)
	th := startHearth(t, func(tc *testConfig) {
		tc.Vault = true
		tc.Door.Auth = st
		tc.Hits = []memory.Hit{{ID: "01TURN", Kind: memory.KindTurn, Session: "main", Text: "we planned the trip to Porto", Score: 0.9, Role: "user"}}
	})
	cs, err := mcpConnect(t, th, toks[auth.ActorExternalAgent])
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{ToolMemoryList, ToolMemoryPropose, ToolMemoryRead, ToolMemorySearch}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	var found mcpSearchOut
	if e := callTool(t, cs, ToolMemorySearch, map[string]any{"query": "porto trip"}, &found); e != "" {
		t.Fatal(e)
	}
	if len(found.Snippets) != 1 || found.Snippets[0].Citation != "thread:main/01TURN" {
		t.Fatalf("search: %+v", found)
	}
	if e := callTool(t, cs, ToolMemorySearch, map[string]any{"query": " "}, nil); e != "query is empty" {
		t.Fatalf("empty query: %q", e)
	}

	const path = "knowledge/projects/mcp-door.md"
	content := projectNote("the mnemo project serves its memory to other agents over MCP")
	var applied mcpProposeOut
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "create", "path": path, "content": content, "reason": "the owner said so in crush"}, &applied); e != "" {
		t.Fatal(e)
	}
	if applied.Decision != "applied" {
		t.Fatalf("project note: %+v", applied)
	}
	var queued mcpProposeOut
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "create", "path": "knowledge/people/ana.md",
		"content": projectNote("Ana is the owner's sister and lives in Porto"), "reason": "mentioned in crush"}, &queued); e != "" {
		t.Fatal(e)
	}
	if queued.Decision != "queued" {
		t.Fatalf("person note: %+v", queued)
	}
	props, err := th.core.Proposals(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 1 || props[0].ID != queued.ID || props[0].Author != "external:crush-external_agent" {
		t.Fatalf("queued proposals: %+v", props)
	}
	var rejected mcpProposeOut
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "create", "path": path, "content": content, "reason": "again"}, &rejected); e != "" || rejected.Decision != "rejected" {
		t.Fatalf("a create over an existing note: %q %+v", e, rejected)
	}

	var read mcpReadOut
	if e := callTool(t, cs, ToolMemoryRead, map[string]any{"path": path}, &read); e != "" {
		t.Fatal(e)
	}
	// The vault writes the note's front matter in full (timestamps…).
	if !strings.Contains(read.Content, "serves its memory to other agents over MCP") || read.SHA256 != vault.Hash([]byte(read.Content)) {
		t.Fatalf("read back: %+v", read)
	}
	var upd mcpProposeOut
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "update", "path": path,
		"content": strings.Replace(read.Content, "over MCP", "over MCP and HTTP", 1), "reason": "it has two doors now", "base_sha256": read.SHA256}, &upd); e != "" || upd.Decision != "applied" {
		t.Fatalf("update: %q %+v", e, upd)
	}
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "update", "path": path, "content": content, "reason": "r"}, nil); !strings.Contains(e, "base_sha256") {
		t.Fatalf("update without a base: %q", e)
	}
	if e := callTool(t, cs, ToolMemoryPropose, map[string]any{"op": "delete", "path": path, "content": "x", "reason": "r"}, nil); !strings.Contains(e, "op must be") {
		t.Fatalf("delete: %q", e)
	}

	var list mcpListOut
	if e := callTool(t, cs, ToolMemoryList, map[string]any{"prefix": "knowledge/projects/"}, &list); e != "" {
		t.Fatal(e)
	}
	if !slices.ContainsFunc(list.Notes, func(n mcpNote) bool { return n.Path == path && n.Type == "project" }) {
		t.Fatalf("list: %+v", list)
	}
	if e := callTool(t, cs, ToolMemoryRead, map[string]any{"path": "../etc/passwd"}, nil); e == "" {
		t.Fatal("read outside the root answered")
	}
}

// TestMCPAuthorization is the /mcp and /metrics rows of the authorization
// matrix: each actor type with the default rules, each tool (memory read
// for search, read and list; vault write for propose) and /metrics (the
// owner's).
func TestMCPAuthorization(t *testing.T) {
	st, toks := pairedStore(t)
	th := startHearth(t, func(tc *testConfig) {
		tc.Vault = true
		tc.Door.Auth = st
		tc.Hits = []memory.Hit{}
		tc.Metrics = true
	})
	type row struct {
		actor                          auth.Actor
		connect, read, propose, metric bool
	}
	for _, r := range []row{
		{auth.ActorOwner, true, true, true, true},
		{auth.ActorCollaborator, true, true, false, false},
		{auth.ActorSystemAgent, true, true, true, false},
		{auth.ActorBackgroundAgent, true, true, true, false},
		{auth.ActorExternalAgent, true, true, true, false},
		{auth.ActorService, false, false, false, false},
	} {
		t.Run(string(r.actor), func(t *testing.T) {
			resp := th.doWith(t, "GET", "/metrics", nil, toks[r.actor], "")
			if got := resp.StatusCode == http.StatusOK; got != r.metric {
				t.Errorf("/metrics: %d", resp.StatusCode)
			}
			cs, err := mcpConnect(t, th, toks[r.actor])
			if (err == nil) != r.connect {
				t.Fatalf("connect: %v", err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "403") {
					t.Fatalf("refused, but not as forbidden: %v", err)
				}
				return
			}
			for _, tool := range []struct {
				name string
				args map[string]any
				want bool
			}{
				{ToolMemorySearch, map[string]any{"query": "anything"}, r.read},
				{ToolMemoryList, map[string]any{}, r.read},
				{ToolMemoryRead, map[string]any{"path": "knowledge/none.md"}, r.read},
				{ToolMemoryPropose, map[string]any{"op": "create", "path": "knowledge/projects/" + string(r.actor) + ".md",
					"content": projectNote("a note proposed by " + string(r.actor) + " for this test"), "reason": "a test"}, r.propose},
			} {
				e := callTool(t, cs, tool.name, tool.args, nil)
				if forbidden := e == errToolForbidden.Error(); forbidden == tool.want {
					t.Errorf("%s: allowed %v, answered %q", tool.name, tool.want, e)
				}
			}
		})
	}
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		for _, path := range []string{"/metrics", "/mcp"} {
			resp := th.doWith(t, "POST", path, `{}`, tok, "application/json")
			if path == "/metrics" {
				resp = th.doWith(t, "GET", path, nil, tok, "")
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s with %q: %d", path, tok, resp.StatusCode)
			}
		}
	}
}

// TestMCPNodeClient: the npm MCP client (@modelcontextprotocol/sdk, which
// make test installs) in a node script: tools, a search, a proposal
// applied and read back. It skips without the package, except in CI.
func TestMCPNodeClient(t *testing.T) {
	dir := os.Getenv("MNEMO_NODE_CLIENTS")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MNEMO_NODE_CLIENTS is not set in CI: make test installs the npm MCP client")
		}
		t.Skip("MNEMO_NODE_CLIENTS is not set: run `make test` to install the npm MCP client and run this test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("MNEMO_NODE_CLIENTS is set but node is not on PATH: %v", err)
	}
	st, toks := pairedStore(t)
	th := startHearth(t, func(tc *testConfig) {
		tc.Vault = true
		tc.Door.Auth = st
		tc.Hits = []memory.Hit{{ID: "01TURN", Kind: memory.KindTurn, Session: "main", Text: "we planned the trip to Porto", Score: 0.9, Role: "user"}}
	})
	// The script runs from a copy beside node_modules, so that its
	// imports resolve there.
	src, err := os.ReadFile("testdata/mcp-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "..", "mcp-client.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	note := projectNote("the mnemo project answers node agents over its MCP door")
	cmd := exec.CommandContext(t.Context(), node, script, th.url+"/mcp", toks[auth.ActorExternalAgent], note)
	cmd.Stderr = t.Output()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Tools     []string      `json:"tools"`
		Search    mcpSearchOut  `json:"search"`
		Propose   mcpProposeOut `json:"propose"`
		ReadError bool          `json:"readError"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := []string{ToolMemoryList, ToolMemoryPropose, ToolMemoryRead, ToolMemorySearch}; !slices.Equal(got.Tools, want) {
		t.Errorf("tools %v", got.Tools)
	}
	if len(got.Search.Snippets) != 1 || got.Search.Snippets[0].ID != "01TURN" {
		t.Errorf("search %+v", got.Search)
	}
	if got.Propose.Decision != "applied" || got.ReadError {
		t.Errorf("propose %+v, read error %v", got.Propose, got.ReadError)
	}
}
