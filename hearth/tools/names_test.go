package tools

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestLabelPrefix(t *testing.T) {
	for _, tc := range []struct{ label, want string }{
		{"desktop-commander", "desktop-commander"},
		{"web tools", "web_tools"},
		{"a__b", "a_b"},
		{"__x__", "x"},
		{"héllo wörld", "h_llo_w_rld"},
		{"!!!", "mcp"},
		{"", "mcp"},
		{"abcdefghijklmnopqrstuvwx_yz", "abcdefghijklmnopqrstuvwx"},
		{"abcdefghijklmnopqrstuvw_yz", "abcdefghijklmnopqrstuvw"},
	} {
		if got := labelPrefix(tc.label); got != tc.want {
			t.Errorf("labelPrefix(%q) = %q, want %q", tc.label, got, tc.want)
		}
	}
}

func TestToolNames(t *testing.T) {
	long := strings.Repeat("t", 70)
	for _, tc := range []struct {
		name   string
		prefix string
		tools  []string
		want   []string
	}{
		{"plain", "fs", []string{"read_file", "list-dir"}, []string{"fs__read_file", "fs__list-dir"}},
		{"sanitised", "fs", []string{"get.weather", "a b"}, []string{"fs__get_weather", "fs__a_b"}},
		{
			"a changed name never takes an exact one",
			"fs", []string{"a.b", "a_b"},
			[]string{"fs__a_b_" + nameHash("a.b"), "fs__a_b"},
		},
		{
			"two changed names collide",
			"fs", []string{"a.b", "a b"},
			[]string{"fs__a_b", "fs__a_b_" + nameHash("a b")},
		},
		{"too long", "fs", []string{long}, []string{"fs__" + long[:64-4-9] + "_" + nameHash(long)}},
		{"empty", "fs", []string{""}, []string{"fs__t_" + nameHash("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolNames(tc.prefix, tc.tools)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("toolNames (-want +got):\n%s", diff)
			}
			for _, n := range got {
				if !validName(n) {
					t.Errorf("%q is not a valid name", n)
				}
			}
		})
	}
}

func TestWithReason(t *testing.T) {
	const reason = `"reason":{"description":"why you are calling this tool, in one sentence","type":"string"}`
	for _, tc := range []struct{ name, in, want string }{
		{"none", ``, `{"properties":{` + reason + `},"required":["reason"],"type":"object"}`},
		{"empty object", `{}`, `{"properties":{` + reason + `},"required":["reason"],"type":"object"}`},
		{"not an object", `[1]`, `{"properties":{` + reason + `},"required":["reason"],"type":"object"}`},
		{"invalid", `{"type":`, `{"properties":{` + reason + `},"required":["reason"],"type":"object"}`},
		{
			"keeps the tool's schema",
			`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`,
			`{"additionalProperties":false,"properties":{"q":{"type":"string"},` + reason + `},"required":["reason","q"],"type":"object"}`,
		},
		{
			"already has reason",
			`{"type":"object","properties":{"reason":{"type":"integer"}},"required":["reason"]}`,
			`{"properties":{` + reason + `},"required":["reason"],"type":"object"}`,
		},
		{"bad properties and required", `{"properties":3,"required":"x"}`, `{"properties":{` + reason + `},"required":["reason"],"type":"object"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(withReason(json.RawMessage(tc.in)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("withReason(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	yes, no := true, false
	type class struct {
		Effect     Effect
		Permission Permission
		Idempotent bool
	}
	for _, tc := range []struct {
		name string
		a    *mcp.ToolAnnotations
		want class
	}{
		{"no annotations", nil, class{Irreversible, Confirm, false}},
		{"read-only", &mcp.ToolAnnotations{ReadOnlyHint: true}, class{ReadOnly, Safe, true}},
		{"read-only wins over destructive", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, class{ReadOnly, Safe, true}},
		{"destructive unset", &mcp.ToolAnnotations{}, class{Irreversible, Confirm, false}},
		{"destructive", &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}, class{Irreversible, Confirm, true}},
		{"additive", &mcp.ToolAnnotations{DestructiveHint: &no}, class{WritesExternal, Confirm, false}},
		{"additive idempotent", &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}, class{WritesExternal, Confirm, true}},
	} {
		e, p, i := classify(tc.a)
		if diff := cmp.Diff(tc.want, class{e, p, i}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestParseGateway(t *testing.T) {
	env := map[string]string{"MCP_AUTH_TOKEN": "s3cret-token", "HOME": "/home/me"}
	getenv := func(k string) string { return env[k] }
	type def struct {
		Label, Prefix, URL, Command string
		Headers, Env                map[string]string
		Args                        []string
		Permission                  Permission
	}
	for _, tc := range []struct {
		name string
		json string
		want []def
	}{
		{"empty file", ``, nil},
		{"not json", `{"servers":`, nil},
		{"not an object", `[1,2]`, nil},
		{"no servers", `{"other":1}`, nil},
		{
			"http with expanded header",
			`{"servers":[{"label":"dc","url":"https://x.trycloudflare.com/mcp","headers":{"authorization":"Bearer ${MCP_AUTH_TOKEN}"}}]}`,
			[]def{{Label: "dc", Prefix: "dc", URL: "https://x.trycloudflare.com/mcp", Headers: map[string]string{"authorization": "Bearer s3cret-token"}}},
		},
		{
			"stdio with env, unset and literal variables",
			`{"servers":[{"label":"fs","command":"npx","args":["-y","${HOME}"],"env":{"A":"${HOME}/x","B":"${UNSET}","C":"$HOME ${not valid} ${"},"permission":"safe"}]}`,
			[]def{{Label: "fs", Prefix: "fs", Command: "npx", Args: []string{"-y", "${HOME}"}, Env: map[string]string{"A": "/home/me/x", "B": "", "C": "$HOME ${not valid} ${"}, Permission: Safe}},
		},
		{
			"bad entries are skipped, good ones kept, prefixes unique",
			`{"servers":[
				{"label":"a","url":"http://h/1"},
				{"label":"","url":"http://h/2"},
				{"label":"b","url":"ftp://h/3"},
				{"label":"c","url":"http://h/4","command":"x"},
				{"label":"d"},
				{"label":"e","command":"x","permission":"admin"},
				{"label":"f","command":"x","disabled":true},
				{"label":"g","command":"x","env":{"A=B":"1"}},
				{"label":"h","headers":"nope","url":"http://h/5"},
				7,
				{"label":"a","command":"y"},
				{"label":"a!","command":"z","permission":"confirm"}
			]}`,
			[]def{
				{Label: "a", Prefix: "a", URL: "http://h/1", Headers: map[string]string{}},
				{Label: "a", Prefix: "a_2", Command: "y", Env: map[string]string{}},
				{Label: "a!", Prefix: "a_3", Command: "z", Env: map[string]string{}, Permission: Confirm},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defs := parseGateway([]byte(tc.json), getenv, slog.New(slog.NewTextHandler(io.Discard, nil)))
			var got []def
			keys := map[string]bool{}
			for _, d := range defs {
				got = append(got, def{d.label, d.prefix, d.url, d.command, d.headers, d.env, d.args, d.permission})
				if keys[d.key] {
					t.Errorf("duplicate key for %q", d.label)
				}
				keys[d.key] = true
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseGateway (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefinitionKey(t *testing.T) {
	parse := func(s string) serverDef {
		t.Helper()
		defs := parseGateway([]byte(s), func(k string) string { return "v-" + k }, slog.New(slog.DiscardHandler))
		if len(defs) != 1 {
			t.Fatalf("parse %s: %d servers", s, len(defs))
		}
		return defs[0]
	}
	base := parse(`{"servers":[{"label":"a","url":"http://h/mcp","headers":{"x":"${TOKEN}"}}]}`)
	same := parse(`{"servers":[{"url":"http://h/mcp","headers":{"x":"${TOKEN}"},"label":"a","permission":"safe"}]}`)
	if base.key != same.key {
		t.Errorf("the same server (only its permission changed) has a new key")
	}
	for _, s := range []string{
		`{"servers":[{"label":"a","url":"http://h2/mcp","headers":{"x":"${TOKEN}"}}]}`,
		`{"servers":[{"label":"a","url":"http://h/mcp","headers":{"x":"${OTHER}"}}]}`,
		`{"servers":[{"label":"b","url":"http://h/mcp","headers":{"x":"${TOKEN}"}}]}`,
		`{"servers":[{"label":"a","url":"http://h/mcp"}]}`,
	} {
		if parse(s).key == base.key {
			t.Errorf("%s: a changed server kept its key", s)
		}
	}
	if strings.Contains(base.key, "v-TOKEN") {
		t.Errorf("the key holds the secret")
	}
}

func TestScrub(t *testing.T) {
	defs := parseGateway([]byte(`{"servers":[{"label":"a","url":"https://u:pa55word@h/mcp?key=query-secret","headers":{"Authorization":"Bearer ${T}","X-Short":"abc"}}]}`),
		func(string) string { return "tok-123456" }, slog.New(slog.DiscardHandler))
	if len(defs) != 1 {
		t.Fatalf("got %d servers", len(defs))
	}
	in := `Post "https://u:pa55word@h/mcp?key=query-secret": Bearer tok-123456 (tok-123456) abc`
	want := `Post "https://u:[redacted]@h/mcp?key=[redacted]": [redacted] ([redacted]) abc`
	if got := scrub(in, defs[0].secrets); got != want {
		t.Errorf("scrub = %q, want %q", got, want)
	}
	if got := safeURL("https://u:p@h:8/mcp?token=x#f"); got != "https://h:8/mcp" {
		t.Errorf("safeURL = %q", got)
	}
}

func TestContentText(t *testing.T) {
	size := int64(10)
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"texts joined", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)}}}, "[image image/png, 2 KiB]"},
		{"audio", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 3<<20)}}}, "[audio audio/wav, 3.0 MiB]"},
		{"image without type", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 10)}}}, "[image unknown type, 10 B]"},
		{"link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a", Name: "a", Size: &size}}}, "[resource link file:///a (a)]"},
		{"blob", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/pdf", Blob: make([]byte, 5000)}}}}, "[resource file:///b application/pdf, 5 KiB]"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`},
		{"nothing", &mcp.CallToolResult{}, ""},
	} {
		if got := contentText(tc.res); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		max  int
		want string
	}{
		{"fits", "hello", 5, "hello"},
		{"cut", strings.Repeat("a", 100), 50, strings.Repeat("a", 15) + "\n[… truncated: 85 bytes omitted]"},
		{"utf-8 boundary", strings.Repeat("é", 50), 50, strings.Repeat("é", 7) + "\n[… truncated: 86 bytes omitted]"},
		{"tiny max", strings.Repeat("a", 100), 10, "\n[… t…"},
	} {
		got := bound(tc.text, tc.max)
		if got != tc.want {
			t.Errorf("%s: bound = %q, want %q", tc.name, got, tc.want)
		}
		if len(got) > tc.max {
			t.Errorf("%s: %d bytes, more than %d", tc.name, len(got), tc.max)
		}
	}
}
