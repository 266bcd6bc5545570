package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// FlushCursorFile is the flush pass's cursor in CuratorConfig.StateDir,
// beside the curator's: the last record flushed and the summary that
// covers it.
const FlushCursorFile = "flush.cursor"

// DefaultFlushAt is the share of the recent-turn allowance (percent) past
// which the flush pass runs, ahead of need.
const DefaultFlushAt = 80

// DefaultFlushLowWater is how full (percent of the recent-turn share) a
// flush leaves the window's unflushed part: past FlushAt the pass flushes
// the oldest unflushed records until what is left fits in this much, so
// one flush covers several turns instead of the one about to leave.
const DefaultFlushLowWater = 50

// Flushed is what one flush pass made: the records it covered, the
// summary and what policy did with it and with the proposals.
type Flushed struct {
	Records  []string // the ids of the records flushed
	Path     string   // the summary's file in the vault
	Summary  string
	Outcome  ProposalOutcome   // the summary's
	Outcomes []ProposalOutcome // the proposals'
	Rejected []curator.Rejection
	// Questions are the files of the questions asked.
	Questions []string
	// Took is the pass's wall time, off the reply path: the model call,
	// the proposals and the summary's vault write, the cursor.
	Took time.Duration
	// InputTokens and OutputTokens are what its model call cost.
	InputTokens, OutputTokens int64
}

// flushMemo is the flush cursor's file: the last record flushed, the
// first one the summary covers, the summary's path and its text (kept
// here too, so that a summary policy queued still stands in for what it
// covers).
type flushMemo struct {
	Cursor  string `json:"cursor"`
	From    string `json:"from"`
	Path    string `json:"path"`
	Summary string `json:"summary"`
}

// loadFlush reads the flush cursor; without one nothing is flushed yet.
func (h *Hearth) loadFlush() (flushMemo, error) {
	var m flushMemo
	b, err := os.ReadFile(filepath.Join(h.curator.cfg.StateDir, FlushCursorFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("flush cursor: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("flush cursor: %w", err)
	}
	return m, nil
}

func (h *Hearth) saveFlush(m flushMemo) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("flush cursor: %w", err)
	}
	if err := writeFileDurable(h.curator.cfg.StateDir, FlushCursorFile, append(b, '\n')); err != nil {
		return fmt.Errorf("flush cursor: %w", err)
	}
	c := h.curator
	c.mu.Lock()
	c.flush = m
	c.health.FlushCursor = m.Cursor
	c.health.Unflushed = 0
	c.health.Flushes++
	c.mu.Unlock()
	return nil
}

// summaryBlock is what stands in the window for the flushed records.
func summaryBlock(m flushMemo) string {
	if m.Summary == "" {
		return ""
	}
	return "## Earlier in this conversation (summary)\n" + m.Summary
}

// firstUnflushed is the index of the first record of recent after cursor
// (record ids sort in journal order).
func firstUnflushed(recent []journal.Record, cursor string) int {
	i, _ := slices.BinarySearchFunc(recent, cursor, func(r journal.Record, id string) int { return strings.Compare(r.ID, id) })
	if i < len(recent) && recent[i].ID == cursor {
		i++
	}
	return i
}

// windowLocked is the part of c's recent records the model sees, and the
// block that stands in for what is left out. Without the flush pass it is
// contextWindow. With it, the summary takes its tokens from the recent
// share, and only flushed records may leave: unflushed ones are kept
// past the share, up to the whole budget; past that the oldest are cut
// and a marker says so (counted in CuratorHealth.Cut). h.mu is held.
func (h *Hearth) windowLocked(c *conversation, b ContextBudget) ([]journal.Record, string) {
	allow := b.Allowance()
	cs := h.curator
	if cs == nil || cs.cfg.FlushAt < 0 || c != h.conv {
		// The flush keeps one cursor, main's (see DESIGN.md
		// "Conversations"): another conversation's window is plain.
		return contextWindow(c.recent, h.cfg.ContextTurns, allow.Recent), ""
	}
	cs.mu.Lock()
	active, memo := cs.active, cs.flush
	cs.mu.Unlock()
	if !active {
		return contextWindow(c.recent, h.cfg.ContextTurns, allow.Recent), ""
	}
	recent := c.recent
	block := summaryBlock(memo)
	window := contextWindow(recent, h.cfg.ContextTurns, max(0, allow.Recent-estimateTokens(block)))
	start, u := len(recent)-len(window), firstUnflushed(recent, memo.Cursor)
	kept, cut := 0, 0
	if start > u {
		over := contextWindow(recent, len(recent), max(0, b.Tokens-estimateTokens(block)))
		if ostart := len(recent) - len(over); ostart <= u {
			window, kept = recent[u:], start-u
		} else {
			window, kept, cut = over, start-ostart, ostart-u
		}
	}
	cs.mu.Lock()
	cs.health.Kept, cs.health.Cut = kept, cut
	cs.mu.Unlock()
	if len(window) > 0 && memo.From != "" && window[0].ID <= memo.From {
		block = "" // every record the summary covers is in the window
	}
	if cut > 0 {
		h.log.Warn("context: records cut before they were flushed", "cut", cut, "flush_cursor", memo.Cursor)
		marker := fmt.Sprintf("[%d earlier messages of this conversation were left out before they could be summarised; the journal keeps them.]", cut)
		block = strings.TrimSpace(block + "\n\n" + marker)
	}
	return window, block
}

// flushPending runs the flush pass when the window, over the turns
// curated, has passed FlushAt of its share: the oldest records after the
// flush cursor, down to what fits in FlushLowWater of the share, are
// sent to the curator's model with the summary so far; its proposals go
// through Propose, its summary to summaries/threads/ (one file per
// flush, named after the first record it adds, so that a flush run again
// after a crash updates the same file), then the cursor moves. A model
// failure or an unusable reply is an error: the records stay unflushed,
// and so stay in the window.
func (h *Hearth) flushPending(ctx context.Context) error {
	c := h.curator
	if c.cfg.FlushAt < 0 {
		return nil
	}
	allow := h.budget().Allowance()
	c.mu.Lock()
	memo, curated := c.flush, c.health.Cursor
	c.mu.Unlock()
	h.mu.Lock()
	recent := slices.Clone(h.conv.recent)
	h.mu.Unlock()
	// It looks ahead from the turns curated, not from a turn that may be
	// arriving: what is flushed, and when, does not depend on the race.
	recent = recent[:firstUnflushed(recent, curated)]
	share := max(0, allow.Recent-estimateTokens(summaryBlock(memo)))
	ahead := contextWindow(recent, max(2, h.cfg.ContextTurns*c.cfg.FlushAt/100), share*c.cfg.FlushAt/100)
	// The window may have grown past the cursor (a larger budget): then
	// nothing is due.
	lo, hi := firstUnflushed(recent, memo.Cursor), len(recent)-len(ahead)
	var rng []journal.Record
	if lo < hi {
		// Due: flush down to the low-water mark (hysteresis), so that the
		// next flush is several turns away.
		low := contextWindow(recent, max(1, h.cfg.ContextTurns*c.cfg.FlushLowWater/100), share*c.cfg.FlushLowWater/100)
		for _, r := range recent[lo:max(hi, len(recent)-len(low))] {
			if r.IsTurn() {
				rng = append(rng, r)
			}
		}
	}
	c.mu.Lock()
	c.health.Unflushed = len(rng)
	c.mu.Unlock()
	if len(rng) == 0 {
		return nil
	}
	start := time.Now()
	resp, usage, err := h.curatorAsk(ctx, h.flushPrompt(), curator.FlushMessage(h.conv.id, memo.Summary, rng),
		&llm.OutputSchema{Name: curator.FlushSchemaName, Schema: curator.FlushSchema, Strict: true})
	if err == nil {
		var res curator.Result
		var summary string
		res, summary, err = curator.DecodeFlush([]byte(resp.Text), curator.Input{Thread: h.conv.id, Records: rng, Read: h.cfg.Vault.Read})
		if err == nil {
			return h.keepFlush(ctx, memo, rng, res, summary, start, usage)
		}
	}
	c.mu.Lock()
	c.health.LastError = "flush: " + err.Error()
	c.mu.Unlock()
	return fmt.Errorf("flush: %w", err)
}

// keepFlush carries out a flush reply and moves the flush cursor.
func (h *Hearth) keepFlush(ctx context.Context, memo flushMemo, rng []journal.Record, res curator.Result, summary string, start time.Time, usage llm.Usage) error {
	c := h.curator
	done := Flushed{Summary: summary, Rejected: res.Rejected, InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens}
	for _, r := range rng {
		done.Records = append(done.Records, r.ID)
	}
	var applied, queued, rejected int
	done.Outcomes, done.Questions, applied, queued, rejected = h.carryOut(ctx, "flush", res)
	first, last := rng[0].ID, rng[len(rng)-1].ID
	done.Path = vault.SummariesDir + "/threads/" + h.conv.id + "-" + first + ".md"
	from := memo.From
	if from == "" {
		from = first
	}
	out, err := h.writeSummary(ctx, done.Path, from, first, last, summary)
	if err != nil {
		return err
	}
	done.Outcome = out
	if memo.From == "" {
		memo.From = first
	}
	memo.Cursor, memo.Path, memo.Summary = last, done.Path, summary
	if err := h.saveFlush(memo); err != nil {
		return err
	}
	h.log.Info("flushed", "from", first, "to", last, "records", len(rng), "summary", done.Path, "summary_decision", out.Decision,
		"applied", applied, "queued", queued, "rejected", rejected, "questions", len(done.Questions))
	c.mu.Lock()
	c.health.Applied += applied
	c.health.Queued += queued
	c.health.Rejected += rejected
	c.health.Questions += len(done.Questions)
	c.health.LastError = ""
	c.mu.Unlock()
	if c.cfg.OnFlush != nil {
		done.Took = time.Since(start)
		c.cfg.OnFlush(done)
	}
	return nil
}

// writeSummary proposes the summary at path: a new note, or, when a flush
// of the same range wrote it before a crash, an update of it (same id).
// It cites the first record the summary covers (from: summaries are
// cumulative), the first of this flush and the last: a forget of any
// record between them reaches it (forget_derived.go).
func (h *Hearth) writeSummary(ctx context.Context, path, from, first, last, summary string) (ProposalOutcome, error) {
	current, err := h.cfg.Vault.Read(path)
	if err != nil {
		return ProposalOutcome{}, fmt.Errorf("flush summary: %w", err)
	}
	var src []vault.Source
	for _, id := range []string{from, first, last} {
		if !slices.ContainsFunc(src, func(s vault.Source) bool { return s.Turn == id }) {
			src = append(src, vault.Source{Thread: h.conv.id, Turn: id})
		}
	}
	n := &vault.Note{ID: vault.NewNoteID(), Title: "Conversation " + h.conv.id + " so far", Type: "summary", Confidence: 1, Sources: src, Body: []byte(summary + "\n")}
	p := vault.Proposal{Op: vault.OpCreate, Path: path, Author: vault.AuthorCurator, Sources: src,
		Reason: "the conversation's records up to " + last + " leave the context window; the summary takes their place"}
	if current != nil {
		p.Op, p.Base = vault.OpUpdate, vault.Hash(current)
		if old, err := vault.ParseNote(path, current); err == nil {
			n.ID, n.CreatedAt = old.ID, old.CreatedAt
		}
	}
	p.Content = string(n.Format())
	out, err := h.Propose(ctx, p)
	if err != nil {
		return out, fmt.Errorf("flush summary: %w", err)
	}
	if out.Decision != DecisionApplied {
		h.log.Warn("flush: summary not applied; it still stands in the window", "path", path, "decision", out.Decision, "why", out.Why)
	}
	return out, nil
}

// flushPrompt is prompts/flush.system.md from the vault, or the default.
func (h *Hearth) flushPrompt() string {
	b, err := h.cfg.Vault.Read(curator.FlushPromptPath)
	if err != nil {
		h.log.Warn("flush: prompt unreadable; using the default", "path", curator.FlushPromptPath, "err", err)
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return curator.FlushPrompt
}
