package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/jobs"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// AuthorForget is the author of what a forget changes in the vault: the
// notes, summaries and entity notes made from the turns forgotten, and
// the rewrites of notes without them.
const AuthorForget = vault.AuthorForget

// statusBefore is the front matter key that keeps a hidden note's status
// until it is rewritten.
const statusBefore = "status_before_forget"

// forgetMarkerFile (in the root's index/) names the turns whose forget has
// not yet reached what was made from them: written before the tombstone,
// removed once the vault is done, read again at the next start.
const forgetMarkerFile = "forget.pending.json"

// Derived is what a forget did to what was made from the turns.
type Derived struct {
	Removed  []string // notes and summaries removed
	Hidden   []string // notes kept out of context until rewritten
	Entities []string // entity notes changed or removed
	Commit   string
	// History lists the files whose earlier versions, still holding what
	// was forgotten, git's history keeps.
	History []string
}

type forgetMarker struct {
	IDs []string `json:"ids"`
	By  string   `json:"by"`
	// Convs is the conversation of each record (by id): once the
	// tombstone is in, the journal no longer says. A marker without it
	// (an older hearth's) treats every summary as the records'.
	Convs map[string]string `json:"convs,omitempty"`
}

func (h *Hearth) forgetMarkerPath() string {
	if h.cfg.Vault == nil {
		return ""
	}
	return filepath.Join(h.cfg.Vault.Dir(), "index", forgetMarkerFile)
}

// markForget saves the marker before the tombstone: a crash between the
// two leaves a marker naming turns that are still live, which the next
// start skips.
func (h *Hearth) markForget(ids []string, convs map[string]string, by string) {
	p := h.forgetMarkerPath()
	if p == "" {
		return
	}
	b, _ := json.Marshal(forgetMarker{IDs: ids, By: by, Convs: convs})
	if err := writeFileDurable(filepath.Dir(p), filepath.Base(p), b); err != nil {
		h.log.Warn("forget: marker not saved; a crash now would leave notes made from the turns until the next forget", "err", err)
	}
}

func (h *Hearth) clearForgetMarker() {
	if p := h.forgetMarkerPath(); p != "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("forget: marker not removed", "err", err)
		}
	}
}

// resumeForget finishes, at start, a forget a crash cut short between its
// tombstone and the vault: the turns the marker names that are no longer
// live.
func (h *Hearth) resumeForget(ctx context.Context) {
	p := h.forgetMarkerPath()
	if p == "" {
		return
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var m forgetMarker
	if err != nil || json.Unmarshal(b, &m) != nil {
		h.log.Warn("forget: marker unreadable; dropped", "err", err)
		h.clearForgetMarker()
		return
	}
	live, err := h.cfg.Journal.Find(ctx, m.IDs)
	if err != nil {
		h.log.Warn("forget: journal unreadable; the marker waits", "err", err)
		return
	}
	gone := map[string]string{}
	for _, id := range m.IDs {
		if _, ok := live[id]; !ok {
			gone[id] = m.Convs[id] // "": not known, every summary's span counts
		}
	}
	if len(gone) > 0 {
		h.log.Info("forget: finishing a forget a stop cut short", "turns", len(gone))
		if _, err := h.forgetDerived(ctx, gone, m.By); err != nil {
			h.log.Warn("forget: what was made from the turns is not yet changed; retried at the next start", "err", err)
			return
		}
	}
	h.clearForgetMarker()
}

// forgetDerived carries a forget to what was made from the turns ids,
// as one vault batch authored forget (one commit, a ledger line a file),
// not governed by policy: it is the owner's decision carried out.
//
//   - A knowledge note whose every source is forgotten is removed; one with
//     other sources loses the forgotten ones and is hidden (status
//     needs_rewrite, its status kept in status_before_forget) until the
//     curator rewrites it without them (rewrite.go).
//   - A summary covering a forgotten turn (one of its sources, or between
//     the first and last it cites; for a flush's thread summary, a turn
//     of its own conversation) is removed: a thread summary's flush
//     cursor is reset, so the window falls back to the live records and
//     the flush pass summarises them again; a daily or weekly period is
//     due again, and a session is queued for its session_end jobs, which
//     the woken job runner runs over the turns that remain. Record ids are
//     global and conversations interleave: a summary of another
//     conversation whose span merely contains the id stays.
//   - An entity note loses the forgotten events from its evidence, and is
//     removed when none is left; the graph drops them at once.
//
// Notes are found by a scan of the vault's notes (List, whose cache makes
// it a stat per note; BenchmarkForgetScan) rather than an index kept
// beside them: a forget is rare, and the scan cannot drift from the files
// the owner edits. It runs before the vault's mutex is taken; each note
// found is read and checked again under it. The tombstone is in the
// journal already (forget, under commitMu); this cascade holds vaultMu,
// and commitMu only for each decision's record (decidedLocked).
//
// gone maps each forgotten record's id to its conversation ("": not
// known, when a marker an older hearth wrote is resumed).
func (h *Hearth) forgetDerived(ctx context.Context, gone map[string]string, by string) (Derived, error) {
	var out Derived
	ids := slices.Sorted(maps.Keys(gone))
	if d, ok := h.cfg.Entities.(interface{ DropEvents([]string) }); ok {
		d.DropEvents(ids)
	}
	v := h.cfg.Vault
	if v == nil {
		return out, nil
	}
	bv, ok := v.(BatchVault)
	if !ok {
		return out, errors.New("forget: the vault cannot write a batch")
	}
	// The scan runs before the vault's mutex is taken (other writes go
	// on meanwhile); each note found is read again under it.
	type found struct {
		path    string
		summary bool
	}
	var cands []found
	for _, prefix := range []string{vault.KnowledgeDir + "/", vault.SummariesDir + "/"} {
		notes, err := v.List(ctx, vault.ListFilter{Prefix: prefix})
		if err != nil {
			return out, fmt.Errorf("forget: list notes: %w", err)
		}
		for _, n := range notes {
			summary := strings.HasPrefix(n.Path, vault.SummariesDir+"/")
			if touches(n.Path, n.Sources, gone, summary) {
				cands = append(cands, found{n.Path, summary})
			}
		}
	}
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	h.ownerEditsLocked(ctx)
	var ps []*vault.Proposal
	spans := map[string]jobs.Span{} // of each summary removed
	reason := fmt.Sprintf("the %s forgot %d turn(s) this was made from", forgetter(by), len(ids))
	for _, c := range cands {
		p, hidden, span, err := h.forgetNote(c.path, gone, c.summary, reason)
		if err != nil {
			return out, err
		}
		if p == nil {
			continue
		}
		ps = append(ps, p)
		if hidden {
			out.Hidden = append(out.Hidden, c.path)
		} else {
			out.Removed = append(out.Removed, c.path)
			spans[c.path] = span
		}
	}
	eps, err := h.forgetEntityNotes(gone, reason)
	if err != nil {
		return out, err
	}
	for _, p := range eps {
		out.Entities = append(out.Entities, p.Path)
	}
	ps = append(ps, eps...)
	h.forgetFlushLocked(gone)
	if len(ps) == 0 {
		return out, nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	defer cancel()
	res, err := bv.ApplyBatch(wctx, ps, fmt.Sprintf("forget: %d file(s) made from forgotten turns", len(ps)))
	var cerr *vault.CommitError
	switch {
	case err == nil:
	case errors.As(err, &cerr):
		h.log.Warn("vault: the forget's changes are saved but not committed; retrying in the background", "err", err)
		h.vaultFailed(h.waitingLocked(), err)
	default:
		return out, fmt.Errorf("forget: vault: %w", err)
	}
	out.Commit = res.Commit
	h.knowledge(ctx, res.Paths)
	for _, p := range ps {
		out.History = append(out.History, p.Path)
		h.decidedLocked(ctx, ProposalOutcome{ID: p.ID, Path: p.Path, Decision: DecisionApplied, Why: p.Reason, Commit: res.Commit, CommitFailed: cerr != nil}, by)
	}
	h.forgetJobs(out.Removed, spans)
	h.needRewrite(out.Hidden...)
	h.log.Info("forget reached the vault", "removed", len(out.Removed), "hidden", len(out.Hidden), "entity_notes", len(out.Entities), "commit", res.Commit)
	return out, nil
}

func forgetter(by string) string {
	if by == ByAgent {
		return "owner (through the agent)"
	}
	return "owner"
}

// touches reports whether the note at p, with sources, was made from a
// forgotten turn: one of its sources, or, for a summary, any turn between
// the first and the last it cites (record ids sort in journal order). Ids
// are global and conversations interleave: a flush's thread summary
// (summaryConv) covers only its conversation's turns of that span, so a
// forgotten turn of another conversation leaves it; a period's summary
// (daily, weekly, a session's) covers every conversation's. gone maps
// each id to its conversation ("": not known, which counts for every
// summary).
func touches(p string, srcs []vault.Source, gone map[string]string, summary bool) bool {
	if len(srcs) == 0 {
		return false
	}
	first, last := "", ""
	for _, s := range srcs {
		t := strings.ToUpper(s.Turn)
		if _, ok := gone[t]; ok {
			return true
		}
		if t == "" {
			continue
		}
		if first == "" || t < first {
			first = t
		}
		if t > last {
			last = t
		}
	}
	if !summary || first == "" {
		return false
	}
	conv := summaryConv(p)
	for id, of := range gone {
		if conv != "" && of != "" && of != conv {
			continue // another conversation's turn
		}
		if id >= first && id <= last {
			return true
		}
	}
	return false
}

// summaryConv is the conversation whose flush wrote the summary at p
// (summaries/threads/<conversation>-<first record id>.md, writeSummary),
// or "" for a summary of every conversation (a period's: daily, weekly, a
// session's, whose names end in a date or a lowercase id).
func summaryConv(p string) string {
	name, ok := strings.CutPrefix(p, vault.SummariesDir+"/threads/")
	if !ok {
		return ""
	}
	name = strings.TrimSuffix(name, ".md")
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return ""
	}
	conv, id := name[:i], name[i+1:]
	if len(id) != 26 || id != strings.ToUpper(id) || !journal.ValidConversation(conv) {
		return ""
	}
	return conv
}

// forgetNote is the change a forget makes to the note at p: its removal
// (a summary, or every source forgotten), or the note hidden without the
// forgotten sources (hidden true). nil: nothing to do. span is the first
// and the last record the note cites, forgotten or not.
func (h *Hearth) forgetNote(p string, gone map[string]string, summary bool, reason string) (prop *vault.Proposal, hidden bool, span jobs.Span, err error) {
	cur, err := h.cfg.Vault.Read(p)
	if err != nil {
		return nil, false, span, fmt.Errorf("forget: read %s: %w", p, err)
	}
	if cur == nil {
		return nil, false, span, nil
	}
	n, err := vault.ParseNote(p, cur)
	if err != nil || !touches(p, n.Sources, gone, summary) {
		return nil, false, span, nil // changed since the scan
	}
	var kept []vault.Source
	for _, s := range n.Sources {
		t := strings.ToUpper(s.Turn)
		if _, ok := gone[t]; !ok {
			kept = append(kept, s)
		}
		if t != "" && (span.From == "" || t < span.From) {
			span.From = t
		}
		span.To = max(span.To, t)
	}
	prop = &vault.Proposal{ID: vault.NewProposalID(), Path: p, Base: vault.Hash(cur), Author: AuthorForget, Reason: reason, Sources: kept}
	if summary || len(kept) == 0 {
		prop.Op = vault.OpDelete
		return prop, false, span, nil
	}
	if n.Status != vault.NeedsRewrite {
		n.SetExtra(statusBefore, string(n.Status))
		n.Status = vault.NeedsRewrite
	}
	n.Sources = kept
	prop.Op, prop.Content = vault.OpUpdate, string(n.Format())
	prop.Reason = reason + "; kept out of context until it is rewritten without them"
	return prop, true, span, nil
}

// forgetEntityNotes are the changes to the entity notes (entities/) that
// cite a forgotten event: the events dropped from their evidence and
// relations, the note removed when no evidence is left.
func (h *Hearth) forgetEntityNotes(gone map[string]string, reason string) ([]*vault.Proposal, error) {
	root := filepath.Join(h.cfg.Vault.Dir(), graph.EntityDir)
	var out []*vault.Proposal
	err := filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".md") || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		rel, err := filepath.Rel(h.cfg.Vault.Dir(), full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		cur, err := h.cfg.Vault.Read(p)
		if err != nil || cur == nil {
			return err
		}
		n, err := graph.ParseNote(strings.TrimSuffix(path.Base(p), ".md"), cur)
		if err != nil {
			return nil // not one hearth wrote: the owner's
		}
		changed := false
		drop := func(ev []string) []string {
			k := slices.DeleteFunc(slices.Clone(ev), func(id string) bool { _, ok := gone[id]; return ok })
			if len(k) != len(ev) {
				changed = true
			}
			return k
		}
		before := len(n.Entity.Evidence)
		n.Entity.Evidence = drop(n.Entity.Evidence)
		n.Entity.Mentions = max(0, n.Entity.Mentions-(before-len(n.Entity.Evidence)))
		rels := n.Relations[:0]
		for _, r := range n.Relations {
			if r.Evidence = drop(r.Evidence); len(r.Evidence) > 0 {
				rels = append(rels, r)
			}
		}
		n.Relations = rels
		if !changed {
			return nil
		}
		var srcs []vault.Source
		for _, id := range n.Entity.Evidence {
			srcs = append(srcs, vault.Source{Thread: MainConversation, Turn: id})
		}
		prop := &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpUpdate, Path: p, Base: vault.Hash(cur), Author: AuthorForget, Reason: reason, Sources: srcs}
		if len(n.Entity.Evidence) == 0 || n.Entity.Mentions == 0 {
			prop.Op = vault.OpDelete
		} else {
			prop.Content = string(graph.RenderNote(n))
		}
		out = append(out, prop)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("forget: entity notes: %w", err)
	}
	return out, nil
}

// forgetFlushLocked resets each conversation's flush cursor whose
// summary covers a forgotten record of that conversation: the summary no
// longer stands in its window, the window keeps the live records (as
// before any flush), and the next flush pass summarises them again.
// Other conversations keep theirs, even where their span holds the id (a
// record whose conversation is not known counts for every one). vaultMu
// is held.
func (h *Hearth) forgetFlushLocked(gone map[string]string) {
	c := h.curator
	if c == nil {
		return
	}
	c.mu.Lock()
	memos := maps.Clone(c.flush)
	c.mu.Unlock()
	for conv, memo := range memos {
		if memo.Summary == "" || memo.From == "" {
			continue
		}
		hit := false
		for id, of := range gone {
			if (of == "" || of == conv) && id >= memo.From && id <= memo.Cursor {
				hit = true
			}
		}
		if !hit {
			continue
		}
		if err := writeFileDurable(c.cfg.StateDir, FlushCursorFileOf(conv), []byte("{}\n")); err != nil {
			h.log.Warn("forget: the flush cursor could not be reset; its summary still stands in the window", "conversation", conv, "err", err)
			continue
		}
		c.mu.Lock()
		c.flush[conv] = flushMemo{}
		if conv == MainConversation {
			c.health.FlushCursor = ""
		}
		c.mu.Unlock()
		h.log.Info("forget: the conversation's summary covered a forgotten turn; the window falls back to the live records", "conversation", conv)
	}
}

// forgetJobs lets the periods of the daily and weekly summaries removed
// run again when their jobs are next due, and queues each session whose
// summary was removed (spans: what it covered) for its session_end jobs
// to summarise again from the turns that remain; the runner is woken.
func (h *Hearth) forgetJobs(removed []string, spans map[string]jobs.Span) {
	s := h.jobs
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return
	}
	changed := false
	for _, p := range removed {
		for _, dir := range []string{"summaries/daily/", "summaries/weekly/"} {
			if period, ok := strings.CutPrefix(p, dir); ok && s.st.Unfinish(strings.TrimSuffix(period, ".md")) {
				changed = true
			}
		}
		first, ok := sessionSummary(p)
		sp := spans[p]
		if !ok || sp.From == "" {
			continue
		}
		s.st.Unfinish(first)
		if !slices.Contains(s.st.Redo, sp) {
			s.st.Redo = append(s.st.Redo, sp)
		}
		changed = true
	}
	if changed {
		if err := s.st.Save(s.cfg.StateDir); err != nil {
			h.log.Warn("jobs: state not saved", "err", err)
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// sessionSummary reports whether p is a session's summary, as a
// session_end job names it (summaries/threads/<date>-<first record id,
// lowercase>.md), and the first record's id.
func sessionSummary(p string) (string, bool) {
	name, ok := strings.CutPrefix(p, vault.SummariesDir+"/threads/")
	if !ok {
		return "", false
	}
	name = strings.TrimSuffix(name, ".md")
	if len(name) != len(time.DateOnly)+1+26 || name[len(time.DateOnly)] != '-' {
		return "", false
	}
	if _, err := time.Parse(time.DateOnly, name[:len(time.DateOnly)]); err != nil {
		return "", false
	}
	id := name[len(time.DateOnly)+1:]
	if id != strings.ToLower(id) {
		return "", false
	}
	return strings.ToUpper(id), true
}
