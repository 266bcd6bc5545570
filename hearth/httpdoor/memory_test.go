package httpdoor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/ndjson"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
)

var testHits = []memory.Hit{
	{ID: "01JTURN0000000000000000001", Kind: memory.KindTurn, Role: memory.RoleUser, Session: "main", Text: "my sister Ana lives in Porto", Score: 0.9, TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	{ID: "note:01JNOTE#0", Kind: memory.KindKnowledge, Path: "knowledge/people/ana.md", Heading: "Home", Text: "Ana lives in Porto.", Score: 0.8},
	{ID: "01JTOOL0000000000000000001", Kind: memory.KindTool, Text: "weather in Porto", Score: 0.5},
}

func TestQuery(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Hits = testHits })
	resp := th.do(t, "POST", "/v1/query", map[string]any{"query": "where does Ana live", "top_k": 5})
	m := readBody(t, resp, "query_response")
	snips := m["snippets"].([]any)
	if len(snips) != 2 || m["answer"] != nil || m["debug"] != nil {
		t.Fatalf("response = %v", m)
	}
	cites := fmt.Sprint(m["citations"])
	if !strings.Contains(cites, "thread:main/01JTURN0000000000000000001") || !strings.Contains(cites, "knowledge/people/ana.md#Home") {
		t.Fatalf("citations = %s", cites)
	}

	// summarize: the model phrases an answer from the snippets alone.
	th.model.replies <- func(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
		if !strings.Contains(req.Messages[1].Content, "Ana lives in Porto.") {
			return llm.Response{}, fmt.Errorf("no snippets in %q", req.Messages[1].Content)
		}
		return llm.Response{Text: "In Porto [1]."}, nil
	}
	resp = th.do(t, "POST", "/v1/query?debug=true", map[string]any{"query": "where does Ana live", "summarize": true, "kinds": []string{"knowledge"}})
	m = readBody(t, resp, "query_response")
	if m["answer"] != "In Porto [1]." || len(m["snippets"].([]any)) != 1 {
		t.Fatalf("summarized = %v", m)
	}
	dbg, _ := m["debug"].(map[string]any)
	if dbg == nil || !strings.Contains(fmt.Sprint(dbg["steps"]), "retrieval") || !strings.Contains(fmt.Sprint(dbg["steps"]), "compose") {
		t.Fatalf("debug = %v", m["debug"])
	}
	if n := len(th.history(t)); n != 0 {
		t.Fatalf("a query wrote %d records to the conversation", n)
	}
}

// debug=true is the owner's alone: another identity that may query gets
// no transcript.
func TestDebugOwnerOnly(t *testing.T) {
	th := startHearth(t, func(c *testConfig) {
		c.Hits = testHits
		c.Door.Auth = allowAll{}
	})
	resp := th.doWith(t, "POST", "/v1/query?debug=true", `{"query":"Ana"}`, "service-token-0123456789", "application/json")
	if m := readBody(t, resp, "query_response"); m["debug"] != nil {
		t.Fatalf("a service got the transcript: %v", m["debug"])
	}
}

func TestIngest(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Vault = true })
	doc := map[string]any{
		"title": "Trip plan", "content": "# Trip\nWe fly to Porto on the 3rd of May.\n",
		"source_uri": "https://example.org/trip.md", "acquired_at": "2026-05-01T10:00:00Z", "version": "v2", "owner": "ana",
	}
	body := map[string]any{"source": "drive", "documents": []any{doc, doc}}
	resp := th.do(t, "POST", "/v1/ingest", body)
	m := readBody(t, resp, "ingest_response")
	res := m["results"].([]any)
	first, second := res[0].(map[string]any), res[1].(map[string]any)
	if first["status"] != "applied" && first["status"] != "queued" {
		t.Fatalf("first = %v", first)
	}
	if second["status"] != "duplicate" || second["checksum"] != first["checksum"] {
		t.Fatalf("second = %v", second)
	}
	path := first["path"].(string)
	if !strings.HasPrefix(path, IngestDir) {
		t.Fatalf("path = %s", path)
	}
	// Ingesting it again later is a duplicate too, by checksum.
	resp = th.do(t, "POST", "/v1/ingest", map[string]any{"source": "drive", "documents": []any{doc}})
	if r := readBody(t, resp, "ingest_response")["results"].([]any)[0].(map[string]any); r["status"] != "duplicate" {
		t.Fatalf("again = %v", r)
	}
	// The provenance is in the note (or the proposal waiting for review).
	var content string
	if f, err := th.core.VaultRead(t.Context(), path, ""); err == nil {
		content = string(f.Content)
	} else {
		props, err := th.core.Proposals(t.Context())
		if err != nil || len(props) == 0 {
			t.Fatalf("neither a note nor a proposal: %v", err)
		}
		content, _ = props[0].Content, 0
		if props[0].Author != "job:ingest-drive" {
			t.Fatalf("author = %q", props[0].Author)
		}
	}
	for _, want := range []string{"ingested_by: service:drive", "source_uri: https://example.org/trip.md", "acquired_at: \"2026-05-01T10:00:00Z\"", "version: v2", "checksum: " + first["checksum"].(string), "owner: ana", "We fly to Porto"} {
		if !strings.Contains(content, want) {
			t.Fatalf("note lacks %q:\n%s", want, content)
		}
	}
	// A checksum that is not the content's is a conflict.
	bad := map[string]any{"content": "x y z w", "checksum": "sha256:" + strings.Repeat("0", 64)}
	resp = th.do(t, "POST", "/v1/ingest", map[string]any{"source": "drive", "documents": []any{bad}})
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("checksum mismatch: %d", resp.StatusCode)
	}
	readBody(t, resp, "error")
}

func TestHealthAndStats(t *testing.T) {
	th := startHearth(t, func(c *testConfig) { c.Hits = testHits })
	resp := th.doWith(t, "GET", "/health", nil, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("health without a token: %d", resp.StatusCode)
	}
	if m := readBody(t, resp, "health"); m["status"] != "ok" {
		t.Fatal(m)
	}
	resp = th.do(t, "GET", "/health/detailed", nil)
	m := readBody(t, resp, "health_detailed")
	if comp := m["components"].(map[string]any); comp["recall"] != "ok" || comp["vault"] != "none" || comp["model"] != "ok" {
		t.Fatalf("components = %v", comp)
	}
	resp = th.doWith(t, "GET", "/health/detailed", nil, "", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("detailed health without a token: %d", resp.StatusCode)
	}
	resp = th.do(t, "GET", "/v1/stats", nil)
	if m := readBody(t, resp, "stats"); m["state"] != "idle" || m["model"] != "script-1" {
		t.Fatalf("stats = %v", m)
	}
}

// ARCH-3: a client on the NDJSON door and one on the HTTP door are in the
// same conversation: each sends one turn, and both see both.
func TestSameConversationAcrossDoors(t *testing.T) {
	th := startHearth(t, nil)
	nd, err := ndjson.New(th.core, ndjson.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- nd.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	conn, err := ipc.Dial(t.Context(), ln.Addr().String(), ipc.DialOptions{Token: testToken, Client: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Send(&ipc.Message{Content: "from ndjson", Ref: "n1"}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 4 { // its turn and reply, then the HTTP turn and reply
		msg, err := conn.Recv(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *ipc.TurnStored:
			seen = append(seen, m.Turn.Content)
		case *ipc.Done:
			seen = append(seen, m.Turn.Content)
			if m.Turn.Content == "echo: from ndjson" {
				// The HTTP client sends its turn once the first is answered.
				resp := th.do(t, "POST", "/v1/chat/completions", chatBody("from http"))
				if got := readBody(t, resp, "chat_completion")["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "echo: from http" {
					t.Fatalf("http reply %v", got)
				}
			}
		}
	}
	want := "from ndjson|echo: from ndjson|from http|echo: from http"
	if strings.Join(seen, "|") != want {
		t.Fatalf("the NDJSON client saw %q", strings.Join(seen, "|"))
	}
	// A new HTTP-side view of history (and a new NDJSON client) has both.
	conn2, err := ipc.Dial(t.Context(), ln.Addr().String(), ipc.DialOptions{Token: testToken, Client: "test2"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	var hist []string
	for _, tu := range conn2.History().Turns {
		hist = append(hist, tu.Content)
	}
	if strings.Join(hist, "|") != want {
		t.Fatalf("history = %q", strings.Join(hist, "|"))
	}
}

func chatBody(content string) map[string]any {
	return map[string]any{"model": "mnemo", "messages": []any{map[string]any{"role": "user", "content": content}}}
}
