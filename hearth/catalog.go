package hearth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemo/mnemo/hearth/agent"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory/vault"
)

// The tool catalog (seed 003 §6.3): a note in the vault, generated from
// the tool registry, so that the owner — and the model, through recall —
// can read what the agent can do. hearth writes it through the vault's
// commit path when what it would say changes: at start, and whenever a
// List (every turn, every voice credential) finds the tools changed, e.g.
// an MCP server that connected, left or was added to gateway.json, or a
// manifest that was edited.

// ToolCatalogPath is the catalog in the memory root.
const ToolCatalogPath = vault.ToolCatalogFile

// catalogAuthor writes the catalog: a job, in the ledger and git log.
const catalogAuthor = "job:tool-catalog"

// catalogDescription bounds a tool's description in the catalog.
const catalogDescription = 1 << 10

// ManifestReporter is what a registry may say of the manifests it left out
// (*tools.Registry implements it); the catalog lists them.
type ManifestReporter interface {
	ManifestErrors() []error
}

// catalog is the core's state for the tool catalog; guarded by its own mu.
type catalog struct {
	raw  agent.Tools   // the registry, unobserved
	wake chan struct{} // a List saw tools the catalog does not say

	mu      sync.Mutex
	written [sha256.Size]byte // what the catalog says now, as a fingerprint
	wg      sync.WaitGroup
}

// observedTools is the registry as the core uses it when it keeps the
// catalog: every List is compared with what the catalog says.
type observedTools struct {
	agent.Tools
	cat *catalog
}

func (o observedTools) List(ctx context.Context) ([]tools.Spec, error) {
	specs, err := o.Tools.List(ctx)
	if err == nil {
		o.cat.seen(specs)
	}
	return specs, err
}

// seen asks for a refresh when specs are not what the catalog says.
func (c *catalog) seen(specs []tools.Spec) {
	fp := sha256.Sum256(renderCatalog(specs, c.problems()))
	c.mu.Lock()
	same := fp == c.written
	c.mu.Unlock()
	if !same {
		select {
		case c.wake <- struct{}{}:
		default: // a refresh is asked for already
		}
	}
}

func (c *catalog) problems() []error {
	if r, ok := c.raw.(ManifestReporter); ok {
		return r.ManifestErrors()
	}
	return nil
}

// startCatalog keeps the catalog until ctx ends: a refresh now, then one
// each time a List sees the tools changed. The returned func waits for
// it to stop.
func (h *Hearth) startCatalog(ctx context.Context) (wait func()) {
	c := h.catalog
	if c == nil {
		return func() {}
	}
	c.wg.Go(func() {
		for {
			if _, err := h.RefreshToolCatalog(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("tool catalog not written; trying again when the tools are listed next", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
		}
	})
	return c.wg.Wait
}

// RefreshToolCatalog writes knowledge/system/tool_catalog.md from the
// registry — built-ins and MCP tools: name, description, source,
// permission, side effects — if that changes what it says. The write is
// one vault write under the vault's mutex (serialized with the other
// vault writes, after the owner's edits are committed): the file, one ledger line and
// one git commit by job:tool-catalog with the reason. The catalog is
// hearth's own generated file, not a memory: policy's rules for claims
// (sources, review) do not apply to it, and clients are not told of it
// as of a proposal.
// It reports whether it wrote; without a vault or tools it does nothing.
func (h *Hearth) RefreshToolCatalog(ctx context.Context) (bool, error) {
	c, v := h.catalog, h.cfg.Vault
	if v == nil || h.cfg.Tools == nil {
		return false, nil
	}
	raw := h.cfg.Tools
	if c != nil {
		raw = c.raw
	}
	specs, err := raw.List(ctx)
	if err != nil {
		// A partial list would drop tools from the catalog.
		return false, fmt.Errorf("list tools: %w", err)
	}
	var problems []error
	if r, ok := raw.(ManifestReporter); ok {
		problems = r.ManifestErrors()
	}
	body := renderCatalog(specs, problems)

	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	current, id, before, err := readCatalog(v)
	if err != nil {
		return false, err
	}
	if current != nil && bytes.Equal(before, body) {
		c.remember(body)
		return false, nil
	}
	// A write once begun is finished, shutdown or not (Run waits for it).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	defer cancel()
	h.ownerEditsLocked(wctx)
	if current, id, before, err = readCatalog(v); err != nil { // the owner's edit, if any, is committed now
		return false, err
	}
	if current != nil && bytes.Equal(before, body) {
		c.remember(body)
		return false, nil
	}
	if id == "" {
		id = vault.NewNoteID()
	}
	note := &vault.Note{ID: id, Title: "Tool catalog", Type: "system", Status: vault.Active,
		Tags: []string{"system", "tools"}, Confidence: 1, Body: body}
	p := vault.Proposal{
		ID: vault.NewProposalID(), Op: vault.OpCreate, Path: ToolCatalogPath, Content: string(note.Format()),
		Reason: catalogReason(before, body), Author: catalogAuthor, CreatedAt: time.Now().UTC(),
	}
	if current != nil {
		p.Op, p.Base = vault.OpUpdate, vault.Hash(current)
	}
	_, err = v.Apply(wctx, &p)
	var cerr *vault.CommitError
	switch {
	case errors.As(err, &cerr):
		// Written and ledgered: committed before the next vault write,
		// as a proposal's failed commit is.
		h.log.Warn("tool catalog written but not committed", "err", err)
	case err != nil:
		return false, fmt.Errorf("write the tool catalog: %w", err)
	}
	c.remember(body)
	return true, nil
}

// readCatalog reads the catalog: its bytes (nil when there is none), and,
// when it parses, its note id and body.
func readCatalog(v Vault) (current []byte, id string, body []byte, err error) {
	current, err = v.Read(ToolCatalogPath)
	if err != nil {
		return nil, "", nil, fmt.Errorf("read the tool catalog: %w", err)
	}
	if current != nil {
		if n, err := vault.ParseNote(ToolCatalogPath, current); err == nil {
			return current, n.ID, n.Body, nil
		}
	}
	return current, "", nil, nil
}

// remember records what the catalog says now.
func (c *catalog) remember(body []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.written = sha256.Sum256(body)
	c.mu.Unlock()
}

// renderCatalog is the catalog's Markdown body: a header saying it is
// generated, then one section per tool — built-ins first, then each MCP
// server's, by source and name — and the manifests left out. The same
// tools give the same bytes.
func renderCatalog(specs []tools.Spec, problems []error) []byte {
	specs = slices.Clone(specs)
	slices.SortFunc(specs, func(a, b tools.Spec) int {
		if ab, bb := a.Source == "builtin", b.Source == "builtin"; ab != bb {
			if ab {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Name, b.Name))
	})
	var b bytes.Buffer
	b.WriteString("# Tool catalog\n\n")
	b.WriteString("Generated by hearth from its tool registry: the built-in tools and those of the MCP servers in gateway.json, with the manifests in tools/*.tool.json applied. Do not edit it: hearth writes it again whenever the tools change. To change an MCP tool's side effects or permission, or to turn it off, write a manifest in tools/ (see the README).\n\n")
	fmt.Fprintf(&b, "%d tools.\n", len(specs))
	for _, s := range specs {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Name)
		if d := oneLine(s.Description, catalogDescription); d != "" {
			b.WriteString(d + "\n\n")
		}
		fmt.Fprintf(&b, "- source: %s\n", oneLine(s.Source, 128))
		fmt.Fprintf(&b, "- permission: %s (%s)\n", s.Permission, permissionMeaning(s.Permission))
		fmt.Fprintf(&b, "- side effects: %s\n", s.Effect)
	}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = oneLine(p.Error(), 512)
		}
		slices.Sort(msgs)
		b.WriteString("\n## Manifests left out\n\n")
		for _, m := range msgs {
			b.WriteString("- " + m + "\n")
		}
	}
	return b.Bytes()
}

func permissionMeaning(p tools.Permission) string {
	switch p {
	case tools.Safe:
		return "runs when the agent asks"
	case tools.Confirm:
		return "the owner approves each call"
	case tools.Admin:
		return "never offered to the agent"
	}
	return "unknown"
}

// oneLine is s on one line, cut to n bytes: a description cannot open a
// heading or close the front matter.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !isRuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// catalogReason says what changed, for the commit and the ledger.
func catalogReason(before, after []byte) string {
	if before == nil {
		return "The tool registry's catalog, generated at start."
	}
	was, is := catalogNames(before), catalogNames(after)
	var added, removed []string
	for _, n := range is {
		if !slices.Contains(was, n) {
			added = append(added, n)
		}
	}
	for _, n := range was {
		if !slices.Contains(is, n) {
			removed = append(removed, n)
		}
	}
	parts := []string{"The tools changed"}
	if len(added) > 0 {
		parts = append(parts, "added: "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed: "+strings.Join(removed, ", "))
	}
	if len(added) == 0 && len(removed) == 0 {
		parts = append(parts, "descriptions, classes or manifests")
	}
	return oneLine(strings.Join(parts, "; ")+".", 2048)
}

// catalogNames are the tools a catalog body lists.
func catalogNames(body []byte) []string {
	var out []string
	for line := range strings.SplitSeq(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok && name != "Manifests left out" {
			out = append(out, name)
		}
	}
	return out
}
