package tools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func FuzzSplitReason(f *testing.F) {
	for _, tc := range splitReasonTests {
		f.Add([]byte(tc.args))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		reason, rest, err := SplitReason(args)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(rest, &m); err != nil {
			t.Fatalf("rest %q is not a JSON object: %v", rest, err)
		}
		if _, ok := m[ReasonParam]; ok {
			t.Fatalf("rest %s still has a reason", rest)
		}
		// Putting the reason back gives the same arguments again.
		m[ReasonParam], _ = json.Marshal(reason)
		again, _ := json.Marshal(m)
		reason2, _, err := SplitReason(again)
		if err != nil || reason2 != reason {
			t.Fatalf("round trip: reason %q, then %q (%v)", reason, reason2, err)
		}
	})
}

func FuzzRedact(f *testing.F) {
	for _, tc := range redactTests {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out := Redact(args)
		if len(strings.TrimSpace(string(args))) == 0 {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Redact(%q) = %q, not valid JSON", args, out)
		}
		// No value under a secret key survives, at any depth.
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if secretKey(k) && x != redacted {
						t.Fatalf("Redact(%q) = %s: %q kept its value", args, out, k)
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case string:
				if secretValue(v) {
					t.Fatalf("Redact(%q) = %s: credential %q kept", args, out, v)
				}
			}
		}
		var v any
		if err := json.Unmarshal(out, &v); err == nil {
			walk(v)
		}
		// Redacting twice changes nothing more.
		if again := Redact(out); string(again) != string(out) {
			t.Fatalf("Redact is not idempotent: %s then %s", out, again)
		}
	})
}

// FuzzGateway feeds arbitrary bytes as gateway.json: List never panics and
// always returns the built-ins. No process is started and no network is
// touched: connecting is replaced.
func FuzzGateway(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`{"servers":[]}`,
		`{"servers":[{"label":"dc","url":"https://x.trycloudflare.com/mcp","headers":{"authorization":"Bearer ${MCP_AUTH_TOKEN}"}}]}`,
		`{"servers":[{"label":"fs","command":"npx","args":["-y","x"],"env":{"A":"${HOME}"},"permission":"safe"},{"label":"fs","command":"y","disabled":true}]}`,
		`{"servers":[{"label":"a__b!","url":"http://h"},{"label":"a_b","url":"http://h"},7,null,{"label":{}}]}`,
		`{"servers":{"label":"x"}}`,
		`[`,
		"\x00\xff",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "gateway.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := New(Options{
			GatewayPath: path,
			Builtins:    []Builtin{CurrentTime(time.Now)},
			Log:         slog.New(slog.DiscardHandler),
			Getenv:      func(k string) string { return "v-" + k },
		})
		r.connect = func(context.Context, *server) (*mcp.ClientSession, error) {
			return nil, errors.New("connecting is disabled in this test")
		}
		defer r.Close()
		specs, err := r.List(t.Context())
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(specs) != 1 || specs[0].Name != "current_time" {
			t.Fatalf("List = %v, want only the built-in", specNames(specs))
		}
		res, err := r.Call(t.Context(), "x__y", nil)
		if !errors.Is(err, ErrUnknownTool) && !res.IsError {
			t.Fatalf("Call of a tool of an unreachable server = %+v, %v", res, err)
		}
	})
}
