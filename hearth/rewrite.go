package hearth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// needRewrite adds notes a forget hid to those the curator rewrites, and
// wakes it.
func (h *Hearth) needRewrite(paths ...string) {
	c := h.curator
	if c == nil || len(paths) == 0 {
		return
	}
	c.mu.Lock()
	if c.rewrite == nil {
		c.rewrite = map[string]bool{}
	}
	for _, p := range paths {
		c.rewrite[p] = true
	}
	c.mu.Unlock()
	h.curateSoon()
}

// rewritePending rewrites the notes a forget hid (status needs_rewrite),
// each through the curator's model and the vault's policy; at the first
// pass it also finds those hidden before a restart. A model failure is an
// error (the notes stay hidden, and the worker retries with backoff).
func (h *Hearth) rewritePending(ctx context.Context) error {
	c := h.curator
	c.mu.Lock()
	scanned := c.rewriteScanned
	c.rewriteScanned = true
	c.mu.Unlock()
	if !scanned {
		var found []string
		for _, prefix := range []string{vault.KnowledgeDir + "/", vault.SummariesDir + "/"} {
			notes, err := h.cfg.Vault.List(ctx, vault.ListFilter{Prefix: prefix, Status: vault.NeedsRewrite})
			if err != nil {
				h.log.Warn("rewrite: notes unreadable", "err", err)
				continue
			}
			for _, n := range notes {
				found = append(found, n.Path)
			}
		}
		if len(found) > 0 {
			c.mu.Lock()
			if c.rewrite == nil {
				c.rewrite = map[string]bool{}
			}
			for _, p := range found {
				c.rewrite[p] = true
			}
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	var paths []string
	for p := range c.rewrite {
		paths = append(paths, p)
	}
	c.mu.Unlock()
	slices.Sort(paths)
	for _, p := range paths {
		if err := h.rewriteNote(ctx, p); err != nil {
			c.mu.Lock()
			c.health.LastError = "rewrite: " + err.Error()
			c.mu.Unlock()
			return fmt.Errorf("rewrite %s: %w", p, err)
		}
		c.mu.Lock()
		delete(c.rewrite, p)
		c.mu.Unlock()
	}
	return nil
}

// rewriteNote asks the curator's model to rewrite the hidden note p
// from the records it still rests on (never shown what was forgotten),
// and proposes the rewrite (or the removal) as author forget, under
// policy. Only a model failure is an error; a note the owner changed
// since, or one whose rewrite waits in the inbox, is left.
func (h *Hearth) rewriteNote(ctx context.Context, p string) error {
	cur, err := h.cfg.Vault.Read(p)
	if err != nil || cur == nil {
		return nil
	}
	n, err := vault.ParseNote(p, cur)
	if err != nil || n.Status != vault.NeedsRewrite {
		return nil // the owner's now
	}
	if ps, _, err := vault.ListProposals(h.cfg.Vault.Dir()); err == nil && slices.ContainsFunc(ps, func(q *vault.Proposal) bool {
		return q.Path == p && q.Author == AuthorForget
	}) {
		return nil // a rewrite waits for the owner
	}
	var ids []string
	for _, s := range n.Sources {
		ids = append(ids, strings.ToUpper(s.Turn))
	}
	live, err := h.cfg.Journal.Find(ctx, ids)
	if err != nil {
		return fmt.Errorf("read the journal: %w", err)
	}
	var recs []journal.Record
	var kept []vault.Source
	for i, id := range ids {
		if r, ok := live[id]; ok {
			recs = append(recs, r)
			kept = append(kept, n.Sources[i])
		}
	}
	slices.SortFunc(recs, func(a, b journal.Record) int { return strings.Compare(a.ID, b.ID) })
	thread := MainConversation
	if len(n.Sources) > 0 && n.Sources[0].Thread != "" {
		thread = n.Sources[0].Thread
	}
	// The model is shown the note's front matter (its sources now only
	// those kept) and the records it still cites, never its old body:
	// that holds what was forgotten.
	seen := curator.RewriteNote{Path: p, Title: n.Title, Type: n.Type, Tags: n.Tags}
	resp, _, err := h.curatorAsk(ctx, h.rewritePrompt(), curator.RewriteMessage(seen, thread, recs),
		&llm.OutputSchema{Name: curator.RewriteSchemaName, Schema: curator.RewriteSchema, Strict: true})
	if err != nil {
		return fmt.Errorf("curator model: %w", err)
	}
	rw, err := curator.DecodeRewrite([]byte(resp.Text))
	if err != nil {
		// The note stays hidden; the next start asks again.
		h.log.Warn("rewrite: reply rejected; the note stays out of context", "path", p, "why", err)
		c := h.curator
		c.mu.Lock()
		c.health.Rejected++
		c.mu.Unlock()
		return nil
	}
	prop := vault.Proposal{Path: p, Base: vault.Hash(cur), Author: AuthorForget, Sources: kept,
		Reason: "rewritten without turns the owner forgot: " + rw.Reason}
	if rw.Remove || len(kept) == 0 {
		prop.Op = vault.OpDelete
	} else {
		st := vault.Active
		if was, ok := n.Extra(statusBefore); ok && was != "" && was != string(vault.NeedsRewrite) {
			st = vault.Status(was)
		}
		n.SetExtra(statusBefore, "")
		n.Status, n.Title, n.Body, n.Sources = st, rw.Title, []byte(rw.Body+"\n"), kept
		prop.Op, prop.Content = vault.OpUpdate, string(n.Format())
	}
	out, err := h.Propose(ctx, prop)
	if err != nil {
		h.log.Warn("rewrite: not proposed; the note stays out of context", "path", p, "err", err)
		return nil
	}
	h.log.Info("rewrote a note after a forget", "path", p, "op", prop.Op, "decision", out.Decision, "why", out.Why)
	return nil
}

// rewritePrompt is prompts/rewrite.system.md from the vault, or the
// default.
func (h *Hearth) rewritePrompt() string {
	b, err := h.cfg.Vault.Read(curator.RewritePromptPath)
	if err != nil {
		h.log.Warn("rewrite: prompt unreadable; using the default", "path", curator.RewritePromptPath, "err", err)
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return curator.RewritePrompt
}
