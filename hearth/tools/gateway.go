package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
)

// maxGatewayBytes bounds how much of gateway.json is read.
const maxGatewayBytes = 1 << 20

// minSecretLen is the shortest expanded value that is scrubbed from logs,
// errors and results. Shorter values ("1", "yes") would mangle ordinary text.
const minSecretLen = 6

// gatewayEntry is one element of gateway.json's "servers" array, as written.
type gatewayEntry struct {
	Label      string            `json:"label"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	Command    string            `json:"command"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Permission string            `json:"permission"`
	Disabled   bool              `json:"disabled"`
}

// serverDef is an enabled, validated gateway entry with ${VAR} references
// expanded. It holds secrets: it is never logged, returned or formatted.
type serverDef struct {
	label      string
	prefix     string // the offered-name prefix, unique among enabled servers
	url        string // streamable HTTP endpoint, or ""
	headers    map[string]string
	command    string // stdio command, or ""
	args       []string
	env        map[string]string
	permission Permission // "" = derived from the tool's annotations
	// key identifies the full definition: a change of any connection
	// detail gives a new key, so a new session.
	key string
	// secrets are the strings scrubbed from anything that leaves the
	// registry: header values, expanded ${VAR} values, URL credentials.
	secrets []string
}

// readGateway reads and parses the gateway file. A missing file or an empty
// path means no servers. Problems are logged and never fatal: a broken file
// gives no servers, a broken entry is skipped.
func readGateway(path string, getenv func(string) string, log *slog.Logger) []serverDef {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		log.Warn("tools: cannot open gateway file; no MCP servers", "path", path, "error", err)
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGatewayBytes+1))
	if err != nil {
		log.Warn("tools: cannot read gateway file; no MCP servers", "path", path, "error", err)
		return nil
	}
	if len(data) > maxGatewayBytes {
		log.Warn("tools: gateway file is larger than 1 MiB; no MCP servers", "path", path)
		return nil
	}
	return parseGateway(data, getenv, log)
}

// parseGateway turns gateway.json bytes into the enabled server definitions,
// in file order.
func parseGateway(data []byte, getenv func(string) string, log *slog.Logger) []serverDef {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	var file struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		// The error text quotes at most a type name or an offset, never
		// the file's contents.
		log.Warn("tools: gateway file is not valid JSON; no MCP servers", "error", err)
		return nil
	}
	var defs []serverDef
	used := map[string]bool{}
	for i, raw := range file.Servers {
		var e gatewayEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			log.Warn("tools: skipping malformed gateway entry", "index", i, "error", err)
			continue
		}
		if e.Disabled {
			continue
		}
		d, err := newServerDef(e, getenv, log)
		if err != nil {
			log.Warn("tools: skipping gateway entry", "index", i, "label", e.Label, "error", err)
			continue
		}
		d.prefix = uniquePrefix(labelPrefix(d.label), used)
		used[d.prefix] = true
		d.key = definitionKey(d)
		defs = append(defs, d)
	}
	return defs
}

// newServerDef validates one entry and expands its ${VAR} references.
func newServerDef(e gatewayEntry, getenv func(string) string, log *slog.Logger) (serverDef, error) {
	d := serverDef{label: e.Label}
	if strings.TrimSpace(e.Label) == "" {
		return d, errors.New("no label")
	}
	switch {
	case e.URL != "" && e.Command != "":
		return d, errors.New(`both "url" and "command" are set; use one`)
	case e.URL == "" && e.Command == "":
		return d, errors.New(`neither "url" nor "command" is set`)
	}
	switch Permission(e.Permission) {
	case "", Safe, Confirm:
		d.permission = Permission(e.Permission)
	default:
		return d, fmt.Errorf(`permission %q is not "safe" or "confirm"`, e.Permission)
	}
	expand := func(field, s string) string {
		out, vals, missing := expandVars(s, getenv)
		for _, name := range missing {
			// The variable's name is not a secret; its value would be.
			log.Warn("tools: gateway entry references an unset variable", "label", e.Label, "field", field, "var", name)
		}
		d.secrets = append(d.secrets, vals...)
		return out
	}
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return d, errors.New(`"url" is not an absolute http(s) URL`)
		}
		d.url = e.URL
		if p, ok := u.User.Password(); ok {
			d.secrets = append(d.secrets, p)
		}
		for _, vs := range u.Query() {
			d.secrets = append(d.secrets, vs...)
		}
		d.headers = make(map[string]string, len(e.Headers))
		for k, v := range e.Headers {
			if k == "" {
				continue
			}
			v = expand("headers", v)
			d.headers[k] = v
			d.secrets = append(d.secrets, v)
			// "Bearer xyz": the credential alone is secret too.
			if _, cred, ok := strings.Cut(v, " "); ok {
				d.secrets = append(d.secrets, strings.TrimSpace(cred))
			}
		}
	} else {
		d.command = e.Command
		d.args = slices.Clone(e.Args)
		d.env = make(map[string]string, len(e.Env))
		for k, v := range e.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return d, fmt.Errorf("invalid environment variable name %q", k)
			}
			d.env[k] = expand("env", v)
		}
	}
	d.secrets = filterSecrets(d.secrets)
	return d, nil
}

// expandVars replaces ${NAME} (NAME = [A-Za-z_][A-Za-z0-9_]*) with
// getenv(NAME). It returns the expanded string, the substituted values and
// the names that were unset or empty. Anything else, "$NAME" included, is
// left as written.
func expandVars(s string, getenv func(string) string) (out string, values, missing []string) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 || !validVarName(s[i+2:i+2+j]) {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		name := s[i+2 : i+2+j]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		} else {
			values = append(values, v)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+2+j+1:]
	}
	return b.String(), values, missing
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// definitionKey hashes every connection detail of a server and its name
// prefix, so the pool holds no second copy of the secrets they contain.
// The permission override is not part of it: changing it needs no new
// connection.
func definitionKey(d serverDef) string {
	// encoding/json sorts map keys, so the encoding is canonical.
	b, err := json.Marshal(struct {
		Label   string            `json:"l"`
		Prefix  string            `json:"p"`
		URL     string            `json:"u"`
		Headers map[string]string `json:"h"`
		Command string            `json:"c"`
		Args    []string          `json:"a"`
		Env     map[string]string `json:"e"`
	}{d.label, d.prefix, d.url, d.headers, d.command, d.args, d.env})
	if err != nil {
		// Strings, slices and maps of strings always encode; keep a key
		// that never matches another server's.
		b = []byte(fmt.Sprintf("%p", &b))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// filterSecrets drops short values and duplicates, longest first so that a
// value containing another is scrubbed whole.
func filterSecrets(in []string) []string {
	var out []string
	for _, s := range in {
		if len(s) >= minSecretLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub replaces every secret in s with "[redacted]".
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// safeURL is u without credentials, query or fragment: what logs may show.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid url)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
