package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// FlushCursorFile is main's flush cursor in CuratorConfig.StateDir,
// beside the curator's: the last record flushed and the summary that
// covers it. Every other conversation has its own (FlushCursorFileOf).
const FlushCursorFile = "flush.cursor"

// FlushCursorFileOf is conversation conv's flush cursor file in
// CuratorConfig.StateDir: FlushCursorFile for main, flush.<conv>.cursor
// for the others (a conversation id has no dot).
func FlushCursorFileOf(conv string) string {
	if conv == MainConversation || conv == "" {
		return FlushCursorFile
	}
	return "flush." + conv + ".cursor"
}

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
	// Forgotten are records of it forgotten while it wrote: what it made
	// of them was forgotten again after (keepFlush).
	Forgotten []string
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

// loadFlushes reads every conversation's flush cursor: main's, then the
// others' files; a conversation without one has flushed nothing yet.
// main's unreadable is an error (the curator stays off, as before
// conversations); another's is logged, and that conversation's flush is
// off (its window trims as without a curator) until hearth restarts.
func (h *Hearth) loadFlushes() (memos map[string]flushMemo, off map[string]bool, err error) {
	dir := h.curator.cfg.StateDir
	memos, off = map[string]flushMemo{}, map[string]bool{}
	m, err := readFlush(filepath.Join(dir, FlushCursorFile))
	if err != nil {
		return nil, nil, err
	}
	memos[MainConversation] = m
	names, err := filepath.Glob(filepath.Join(dir, "flush.*.cursor"))
	if err != nil {
		return nil, nil, fmt.Errorf("flush cursors: %w", err)
	}
	for _, name := range names {
		conv := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "flush."), ".cursor")
		if !journal.ValidConversation(conv) || conv == MainConversation {
			continue
		}
		m, err := readFlush(name)
		if err != nil {
			h.log.Error("curator: a conversation's flush cursor is unreadable; its flush is off", "conversation", conv, "err", err)
			off[conv] = true
			continue
		}
		memos[conv] = m
	}
	return memos, off, nil
}

func readFlush(path string) (flushMemo, error) {
	var m flushMemo
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("flush cursor: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("flush cursor %s: %w", filepath.Base(path), err)
	}
	return m, nil
}

// saveFlush writes conversation conv's flush cursor durably (temporary
// file, fsync, rename, directory fsync), then keeps it.
func (h *Hearth) saveFlush(conv string, m flushMemo) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("flush cursor: %w", err)
	}
	if err := writeFileDurable(h.curator.cfg.StateDir, FlushCursorFileOf(conv), append(b, '\n')); err != nil {
		return fmt.Errorf("flush cursor: %w", err)
	}
	c := h.curator
	c.mu.Lock()
	c.flush[conv] = m
	if conv == MainConversation {
		c.health.FlushCursor = m.Cursor
	}
	c.unflushed[conv] = 0
	c.health.Unflushed = sumUnflushed(c.unflushed)
	c.health.Flushes++
	c.mu.Unlock()
	return nil
}

func sumUnflushed(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
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
	if cs == nil || cs.cfg.FlushAt < 0 {
		return contextWindow(c.recent, h.cfg.ContextTurns, allow.Recent), ""
	}
	cs.mu.Lock()
	active, memo, off := cs.active, cs.flush[c.id], cs.flushOff[c.id]
	cs.mu.Unlock()
	if !active || off {
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
		h.log.Warn("context: records cut before they were flushed", "conversation", c.id, "cut", cut, "flush_cursor", memo.Cursor)
		marker := fmt.Sprintf("[%d earlier messages of this conversation were left out before they could be summarised; the journal keeps them.]", cut)
		block = strings.TrimSpace(block + "\n\n" + marker)
	}
	return window, block
}

// flushPending runs the flush pass for each conversation loaded (see
// flushConversation); one conversation's failure does not keep the
// others from theirs. A conversation unloaded meanwhile is flushed when
// it is next loaded and a turn of it is curated: until then its window,
// read back from the journal, keeps its unflushed records.
func (h *Hearth) flushPending(ctx context.Context) error {
	c := h.curator
	if c.cfg.FlushAt < 0 {
		return nil
	}
	h.mu.Lock()
	convs := make([]*conversation, 0, len(h.convs))
	for _, cv := range h.convs {
		convs = append(convs, cv)
	}
	h.mu.Unlock()
	slices.SortFunc(convs, func(a, b *conversation) int { return strings.Compare(a.id, b.id) })
	c.mu.Lock()
	for id := range c.unflushed {
		if !slices.ContainsFunc(convs, func(cv *conversation) bool { return cv.id == id }) {
			delete(c.unflushed, id) // unloaded: as of the last pass, nothing known
		}
	}
	c.health.Unflushed = sumUnflushed(c.unflushed)
	c.mu.Unlock()
	var errs []error
	for _, cv := range convs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := h.flushConversation(ctx, cv); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushConversation runs the flush pass for cv when its window, over the
// turns curated, has passed FlushAt of its share: the oldest records after
// its flush cursor, down to what fits in FlushLowWater of the share, are
// sent to the curator's model with the summary so far; its proposals go
// through Propose, its summary to summaries/threads/ (one file per
// flush, named after the conversation and the first record it adds, so
// that a flush run again after a crash updates the same file), then the
// conversation's cursor moves. A model failure or an unusable reply is
// an error: the records stay unflushed, and so stay in the window.
func (h *Hearth) flushConversation(ctx context.Context, cv *conversation) error {
	c := h.curator
	allow := h.budget().Allowance()
	c.mu.Lock()
	memo, curated, off := c.flush[cv.id], c.health.Cursor, c.flushOff[cv.id]
	c.mu.Unlock()
	if off {
		return nil
	}
	h.mu.Lock()
	recent := slices.Clone(cv.recent)
	seen := h.forgets // the forgets these records are already without
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
	c.unflushed[cv.id] = len(rng)
	c.health.Unflushed = sumUnflushed(c.unflushed)
	c.mu.Unlock()
	if len(rng) == 0 {
		return nil
	}
	start := time.Now()
	resp, usage, err := h.curatorAsk(ctx, h.flushPrompt(), curator.FlushMessage(cv.id, memo.Summary, rng),
		&llm.OutputSchema{Name: curator.FlushSchemaName, Schema: curator.FlushSchema, Strict: true})
	if err == nil {
		var res curator.Result
		var summary string
		res, summary, err = curator.DecodeFlush([]byte(resp.Text), curator.Input{Thread: cv.id, Records: rng, Read: h.cfg.Vault.Read})
		if err == nil {
			return h.keepFlush(ctx, cv.id, seen, memo, rng, res, summary, start, usage)
		}
	}
	c.mu.Lock()
	c.health.LastError = "flush: " + err.Error()
	c.mu.Unlock()
	return fmt.Errorf("flush %s: %w", cv.id, err)
}

// keepFlush carries out a flush reply and moves the flush cursor. seen
// is the count of forgets when the flush read its records: a forget of
// one of them since (the model's answer takes seconds) drops the flush,
// and the next reads the live records; one that commits while the flush
// writes has its cascade run again over what the flush wrote, which that
// cascade's scan may have missed.
func (h *Hearth) keepFlush(ctx context.Context, conv string, seen uint64, memo flushMemo, rng []journal.Record, res curator.Result, summary string, start time.Time, usage llm.Usage) error {
	c := h.curator
	if gone, _, lost := h.flushRaced(seen, conv, rng); len(gone) > 0 || lost {
		h.log.Info("flush: a turn it read was forgotten meanwhile; dropped, the next flush reads the live turns", "conversation", conv, "forgotten", len(gone))
		return nil
	}
	done := Flushed{Summary: summary, Rejected: res.Rejected, InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens}
	for _, r := range rng {
		done.Records = append(done.Records, r.ID)
	}
	var applied, queued, rejected int
	done.Outcomes, done.Questions, applied, queued, rejected = h.carryOut(ctx, "flush", res)
	first, last := rng[0].ID, rng[len(rng)-1].ID
	done.Path = vault.SummariesDir + "/threads/" + conv + "-" + first + ".md"
	from := memo.From
	if from == "" {
		from = first
	}
	out, err := h.writeSummary(ctx, conv, done.Path, from, first, last, summary)
	if err != nil {
		return err
	}
	done.Outcome = out
	if memo.From == "" {
		memo.From = first
	}
	memo.Cursor, memo.Path, memo.Summary = last, done.Path, summary
	if err := h.saveFlush(conv, memo); err != nil {
		return err
	}
	if gone, by, lost := h.flushRaced(seen, conv, rng); lost {
		h.log.Warn("flush: more forgets came while it wrote than hearth follows; what it made is kept", "conversation", conv)
	} else if len(gone) > 0 {
		h.log.Info("flush: a turn it read was forgotten while it wrote; forgetting again what it made", "conversation", conv, "forgotten", len(gone))
		if _, err := h.forgetDerived(ctx, gone, by); err != nil {
			return fmt.Errorf("flush %s: forget what it made of a forgotten turn: %w", conv, err)
		}
		done.Forgotten = slices.Sorted(maps.Keys(gone))
	}
	h.log.Info("flushed", "conversation", conv, "from", first, "to", last, "records", len(rng), "summary", done.Path, "summary_decision", out.Decision,
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
func (h *Hearth) writeSummary(ctx context.Context, conv, path, from, first, last, summary string) (ProposalOutcome, error) {
	current, err := h.cfg.Vault.Read(path)
	if err != nil {
		return ProposalOutcome{}, fmt.Errorf("flush summary: %w", err)
	}
	var src []vault.Source
	for _, id := range []string{from, first, last} {
		if !slices.ContainsFunc(src, func(s vault.Source) bool { return s.Turn == id }) {
			src = append(src, vault.Source{Thread: conv, Turn: id})
		}
	}
	n := &vault.Note{ID: vault.NewNoteID(), Title: "Conversation " + conv + " so far", Type: "summary", Confidence: 1, Sources: src, Body: []byte(summary + "\n")}
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

// maxForgot is how many forgets Hearth.forgot keeps: far more than can
// commit during one flush's model call.
const maxForgot = 64

// forgotten is one committed forget: its sequence number (Hearth.forgets
// after it), the records it forgot and who forgot them.
type forgotten struct {
	seq uint64
	ids []string
	by  string
}

// flushRaced returns the records of rng (conversation conv) forgotten by
// a forget committed after the count seen, with who forgot them. lost:
// more forgets came since than forgot keeps, and which records they
// forgot is not known.
func (h *Hearth) flushRaced(seen uint64, conv string, rng []journal.Record) (gone map[string]string, by string, lost bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.forgets == seen {
		return nil, "", false
	}
	if len(h.forgot) == 0 || h.forgot[0].seq > seen+1 {
		return nil, "", true
	}
	gone = map[string]string{}
	for _, f := range h.forgot {
		if f.seq <= seen {
			continue
		}
		for _, r := range rng {
			if slices.Contains(f.ids, r.ID) {
				gone[r.ID], by = conv, f.by
			}
		}
	}
	return gone, by, false
}
