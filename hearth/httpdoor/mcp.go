package httpdoor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// The MCP door: /mcp serves hearth's memory to other agents (crush,
// Claude Desktop…) over MCP's streamable HTTP, with the official SDK's
// server. The route is authenticated and authorized (memory read) by the
// door like every other; each tool then authorizes its own action, and
// writes are proposals under the vault's policy, never direct writes.

// mcpIdentityKey is where the door's verifier puts the identity in the
// SDK's token info, for the tools to read back.
const mcpIdentityKey = "mnemo.identity"

// Tool names.
const (
	ToolMemorySearch  = "memory_search"
	ToolMemoryRead    = "memory_read"
	ToolMemoryList    = "memory_list"
	ToolMemoryPropose = "memory_propose"
)

func (d *Door) newMCPHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mnemo", Title: "mnemo memory", Version: d.o.Version}, &mcp.ServerOptions{
		Instructions: "The memory of the owner's companion: search it, read and list its notes, and propose notes. " +
			"Proposals are reviewed under the owner's memory policy: some are applied at once, others wait for the owner.",
		Logger: d.log,
	})
	mcp.AddTool(srv, &mcp.Tool{Name: ToolMemorySearch,
		Description: "Search the memory (past conversation turns and knowledge notes) by meaning and words. Returns snippets with ids, scores and citations."},
		mcpTool(d, auth.ResMemory, auth.ActRead, d.mcpSearch))
	mcp.AddTool(srv, &mcp.Tool{Name: ToolMemoryRead,
		Description: "Read a file of the memory (a note such as knowledge/projects/x.md) as it is now, or at a version (a commit). Returns its content and its sha256, which memory_propose wants to update it."},
		mcpTool(d, auth.ResMemory, auth.ActRead, d.mcpRead))
	mcp.AddTool(srv, &mcp.Tool{Name: ToolMemoryList,
		Description: "List the knowledge notes, optionally under a path prefix (knowledge/people/) or of a type or tag."},
		mcpTool(d, auth.ResMemory, auth.ActRead, d.mcpList))
	mcp.AddTool(srv, &mcp.Tool{Name: ToolMemoryPropose,
		Description: "Propose a note: create a file, or update one (give the sha256 memory_read returned). The owner's memory policy decides: applied, queued for the owner's review, or rejected with why. " +
			"A note is Markdown with YAML front matter (id, title, type, status, confidence, created_at, updated_at)."},
		mcpTool(d, auth.ResVault, auth.ActWrite, d.mcpPropose))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// No session state to keep or leak: every request stands alone,
		// authenticated as it comes.
		Stateless:           true,
		Logger:              d.log,
		MaxRequestBodyBytes: d.o.MaxBody,
	})
	// The door has authenticated the request already; this hands its
	// identity to the SDK, which gives it to the tools.
	verify := func(ctx context.Context, _ string, r *http.Request) (*mcpauth.TokenInfo, error) {
		id, ok := auth.From(r.Context())
		if !ok {
			return nil, mcpauth.ErrInvalidToken
		}
		return &mcpauth.TokenInfo{UserID: id.Subject + "/" + id.Device, Extra: map[string]any{mcpIdentityKey: id}}, nil
	}
	return mcpauth.RequireBearerToken(verify, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// mcp serves /mcp (the route has admitted the request).
func (d *Door) mcp(c *call) error {
	sw := &statusWriter{ResponseWriter: c.w}
	d.mcpHandler.ServeHTTP(sw, c.r)
	c.status = sw.status
	return nil
}

// statusWriter remembers the status a handler the door does not write
// itself (the SDK's) answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errToolForbidden is a tool the credential may not use.
var errToolForbidden = errors.New("this credential may not do that")

// mcpTool wraps a tool: the caller's identity, its authorization for
// (res, act), the identity in ctx for the core, and errors the caller may
// see (the core's problems; anything else is logged and said plainly).
func mcpTool[In, Out any](d *Door, res auth.Resource, act auth.Action, f func(ctx context.Context, id auth.Identity, in In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		t0 := time.Now()
		name := req.Params.Name
		id, ok := mcpIdentity(req)
		if !ok {
			return nil, zero, errToolForbidden
		}
		if err := d.o.Auth.Authorize(id, res, act); err != nil {
			d.log.Info("mcp: forbidden", "tool", name, "subject", id.Subject, "actor", id.Actor)
			d.o.Metrics.Tool("mcp", name, "forbidden", time.Since(t0))
			return nil, zero, errToolForbidden
		}
		out, err := f(auth.WithIdentity(ctx, id), id, in)
		if err != nil {
			d.o.Metrics.Tool("mcp", name, "error", time.Since(t0))
			var p *hearth.Problem
			var ie *toolInputError
			switch {
			case errors.As(err, &p):
				return nil, zero, errors.New(p.Message)
			case errors.As(err, &ie):
				return nil, zero, ie
			}
			d.log.Error("mcp: tool failed", "tool", name, "subject", id.Subject, "err", err)
			return nil, zero, errors.New("hearth could not do that; details are in hearth's log")
		}
		d.o.Metrics.Tool("mcp", name, "ok", time.Since(t0))
		return nil, out, nil
	}
}

func mcpIdentity(req *mcp.CallToolRequest) (auth.Identity, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return auth.Identity{}, false
	}
	id, ok := req.Extra.TokenInfo.Extra[mcpIdentityKey].(auth.Identity)
	return id, ok
}

// toolInputError is a bad argument, said to the caller as it is.
type toolInputError struct{ msg string }

func (e *toolInputError) Error() string { return e.msg }

// ---- memory_search

type mcpSearchIn struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	TopK  int      `json:"top_k,omitempty" jsonschema:"how many snippets, 1 to 50; default 5"`
	Kinds []string `json:"kinds,omitempty" jsonschema:"turn, knowledge or tool_result; default turn and knowledge"`
}

type mcpSearchOut struct {
	Snippets []snippet `json:"snippets"`
}

func (d *Door) mcpSearch(ctx context.Context, _ auth.Identity, in mcpSearchIn) (mcpSearchOut, error) {
	if strings.TrimSpace(in.Query) == "" {
		return mcpSearchOut{}, &toolInputError{"query is empty"}
	}
	if in.TopK == 0 {
		in.TopK = 5
	}
	if in.TopK < 1 || in.TopK > 50 {
		return mcpSearchOut{}, &toolInputError{"top_k must be from 1 to 50"}
	}
	kinds := in.Kinds
	if len(kinds) == 0 {
		kinds = []string{memory.KindTurn, memory.KindKnowledge}
	}
	hits, err := d.core.Search(ctx, memory.SearchRequest{Query: in.Query, K: in.TopK, Kinds: kinds})
	if err != nil {
		return mcpSearchOut{}, err
	}
	d.o.Metrics.Search(len(hits))
	out := mcpSearchOut{Snippets: []snippet{}}
	for _, h := range hits {
		out.Snippets = append(out.Snippets, snippetOf(h))
	}
	return out, nil
}

// ---- memory_read

type mcpReadIn struct {
	Path string `json:"path" jsonschema:"the file, relative to the memory root (knowledge/projects/x.md)"`
	At   string `json:"at,omitempty" jsonschema:"a version: a commit hash; empty for the file as it is now"`
}

type mcpReadOut struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	SHA256  string `json:"sha256" jsonschema:"the content's hash: give it to memory_propose to update the file"`
	Commit  string `json:"commit,omitempty"`
}

func (d *Door) mcpRead(ctx context.Context, _ auth.Identity, in mcpReadIn) (mcpReadOut, error) {
	if in.Path == "" {
		return mcpReadOut{}, &toolInputError{"path is empty"}
	}
	f, err := d.core.VaultRead(ctx, in.Path, in.At)
	if err != nil {
		return mcpReadOut{}, err
	}
	return mcpReadOut{Path: f.Path, Content: string(f.Content), SHA256: vault.Hash(f.Content), Commit: f.Commit}, nil
}

// ---- memory_list

type mcpListIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"a path prefix such as knowledge/people/; default all of knowledge/"`
	Type   string `json:"type,omitempty" jsonschema:"only notes of this type (project, person, preference…)"`
	Tag    string `json:"tag,omitempty" jsonschema:"only notes with this tag"`
}

type mcpNote struct {
	Path      string   `json:"path"`
	ID        string   `json:"id,omitempty"`
	Title     string   `json:"title,omitempty"`
	Type      string   `json:"type,omitempty"`
	Status    string   `json:"status,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	UpdatedAt string   `json:"updated_at,omitempty"`
}

type mcpListOut struct {
	Notes []mcpNote `json:"notes"`
}

func (d *Door) mcpList(ctx context.Context, _ auth.Identity, in mcpListIn) (mcpListOut, error) {
	notes, err := d.core.VaultList(ctx, vault.ListFilter{Prefix: in.Prefix, Type: in.Type, Tag: in.Tag})
	if err != nil {
		return mcpListOut{}, err
	}
	out := mcpListOut{Notes: []mcpNote{}}
	for _, n := range notes {
		if n.Err != "" {
			continue // the owner's to fix; not another agent's business
		}
		m := mcpNote{Path: n.Path, ID: n.ID, Title: n.Title, Type: n.Type, Status: string(n.Status), Tags: n.Tags}
		if !n.UpdatedAt.IsZero() {
			m.UpdatedAt = n.UpdatedAt.UTC().Format(time.RFC3339)
		}
		out.Notes = append(out.Notes, m)
	}
	return out, nil
}

// ---- memory_propose

type mcpProposeIn struct {
	Op      string `json:"op" jsonschema:"create or update"`
	Path    string `json:"path" jsonschema:"the note's file, relative to the memory root (knowledge/projects/x.md)"`
	Content string `json:"content" jsonschema:"the whole new file: YAML front matter and a Markdown body"`
	Reason  string `json:"reason" jsonschema:"why this should be remembered"`
	Base    string `json:"base_sha256,omitempty" jsonschema:"update only: the sha256 memory_read gave for the file"`
}

type mcpProposeOut struct {
	ID       string `json:"id"`
	Path     string `json:"path"`
	Decision string `json:"decision" jsonschema:"applied, queued (for the owner's review) or rejected"`
	Why      string `json:"why"`
}

func (d *Door) mcpPropose(ctx context.Context, id auth.Identity, in mcpProposeIn) (mcpProposeOut, error) {
	var op vault.Op
	switch in.Op {
	case "create":
		op = vault.OpCreate
	case "update":
		op = vault.OpUpdate
		if in.Base == "" {
			return mcpProposeOut{}, &toolInputError{"an update needs base_sha256: read the file with memory_read first"}
		}
	default:
		return mcpProposeOut{}, &toolInputError{`op must be "create" or "update"`}
	}
	if in.Path == "" || in.Content == "" {
		return mcpProposeOut{}, &toolInputError{"path and content are required"}
	}
	sum := sha256.Sum256([]byte(in.Content))
	o, err := d.core.Propose(ctx, vault.Proposal{
		Op: op, Path: in.Path, Content: in.Content, Base: in.Base, Reason: in.Reason,
		// Not a turn of a thread: the agent's own text, by its hash.
		Sources: []vault.Source{{Thread: "mcp:" + id.Subject, ExcerptSHA256: hex.EncodeToString(sum[:])}},
		Author:  ExternalAuthor(id),
	})
	if err != nil {
		return mcpProposeOut{}, err
	}
	return mcpProposeOut{ID: o.ID, Path: o.Path, Decision: o.Decision, Why: o.Why}, nil
}

// ExternalAuthor is the vault author of an external agent's proposal:
// external:<subject>.
func ExternalAuthor(id auth.Identity) string { return vault.ExternalAuthor(id.Subject) }
