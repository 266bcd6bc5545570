package hearth

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// Vault is what the core needs of the readable memory (memory/vault):
// *vault.Vault implements it. Its writes go through the core's commit
// path (Propose, DecideProposal), serialized with journal commits.
type Vault interface {
	// Dir is the memory root, where queued proposals are kept.
	Dir() string
	// Policy is the governance policy (config/memory.policy.yml).
	Policy() (vault.Policy, error)
	// Read returns a file of the root, nil when it does not exist.
	Read(path string) ([]byte, error)
	// Apply writes an approved proposal, commits and ledgers it.
	Apply(ctx context.Context, p *vault.Proposal) (vault.Result, error)
	// OwnerEdits lists what the owner changed by hand, uncommitted.
	OwnerEdits(ctx context.Context) ([]vault.Edit, error)
	// CommitOwnerEdits commits what the owner changed by hand.
	CommitOwnerEdits(ctx context.Context) (vault.Result, []error, error)
	// CommitPending commits the writes saved whose commit failed or was
	// cut short by a crash, as their authors.
	CommitPending(ctx context.Context) (vault.Result, error)
	// Pending counts the writes saved whose commit waits.
	Pending() (int, error)
	// Reject ledgers and commits a proposal's rejection.
	Reject(ctx context.Context, p *vault.Proposal, by, why string) (vault.Result, error)
	// ReadAt reads a file as it is, or at a version (a commit).
	ReadAt(ctx context.Context, path, rev string) ([]byte, string, error)
	// List lists the notes a filter selects.
	List(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error)
	// History lists the changes to a file, newest first.
	History(ctx context.Context, path string, limit int) ([]vault.Change, error)
	// Maintain keeps the repository small: it packs the loose objects
	// once there are threshold or more (0: the vault's default), and
	// merges the packs into one past vault.PackMergeThreshold.
	Maintain(ctx context.Context, threshold int) (vault.Maintenance, error)
	// Purge empties a layer (a directory of the vault), ledgered and
	// committed.
	Purge(ctx context.Context, layer, reason, author string) (vault.Result, error)
}

// Decisions a ProposalDecided carries.
const (
	DecisionApplied  = "applied"
	DecisionQueued   = "queued"
	DecisionRejected = "rejected"
)

// ProposalOutcome says what became of a proposal.
type ProposalOutcome struct {
	ID       string
	Path     string // the file it changes
	Decision string // DecisionApplied, DecisionQueued or DecisionRejected
	Why      string
	Commit   string // the git commit of an applied proposal; "" if it failed
	// CommitFailed: the files are written but not committed (the next
	// commit of those paths takes them in).
	CommitFailed bool
}

// ProposalQueued is a proposal waiting for the owner's review. It must
// arrive: a client shows it in its review list.
type ProposalQueued struct {
	Proposal vault.Proposal
	Why      string // why policy queued it
	// Current is the file as it is now (nil: there is none), so that the
	// owner sees the change as a diff.
	Current []byte
}

// ProposalDecided is a proposal applied or rejected, by policy or by the
// owner. It must arrive: a client drops it from its review list.
type ProposalDecided struct {
	ProposalOutcome
	By string // who decided: "policy", or the owner
}

func (*ProposalQueued) Class() Class  { return ClassNotices }
func (*ProposalDecided) Class() Class { return ClassNotices }

// DecidedByPolicy is ProposalDecided.By when policy decided.
const DecidedByPolicy = "policy"

// vaultWrite bounds one vault write (owner edits, file, commit, ledger).
const vaultWrite = time.Minute

// Propose governs p under the vault's policy and carries out the verdict:
// applied (file, commit, ledger), queued in inbox/proposals/ for the
// owner, or rejected with why. It runs under the vault's mutex (vaultMu),
// serialized with every other vault write but not with journal commits
// (its decision's record is appended in journal order), after committing any edit the owner made by hand (so
// a proposal made against an older file is refused, never clobbers it).
// Every subscriber is told: ProposalQueued, or ProposalDecided.
// An empty ID, author or creation time is filled in.
func (h *Hearth) Propose(ctx context.Context, p vault.Proposal) (ProposalOutcome, error) {
	v := h.cfg.Vault
	if v == nil {
		return ProposalOutcome{}, &Problem{Code: CodeUnavailable, Message: "this hearth has no vault"}
	}
	if p.ID == "" {
		p.ID = vault.NewProposalID()
	}
	if p.Author == "" {
		p.Author = vault.AuthorAgent
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now().UTC()
	}
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	h.ownerEditsLocked(ctx)
	pol, err := v.Policy()
	if err != nil {
		h.log.Warn("vault: the memory policy is invalid", "err", err)
		return ProposalOutcome{}, &Problem{Code: CodeConfigInvalid, Message: "the memory policy (config/memory.policy.yml) is invalid; fix it to write memories"}
	}
	var current []byte
	if fs.ValidPath(p.Path) { // Decide refuses any other path
		if current, err = v.Read(p.Path); err != nil {
			h.log.Error("vault: read", "path", p.Path, "err", err)
			return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not read the memory file; nothing was written"}
		}
	}
	d := vault.Decide(pol, &p, current)
	if d.Verdict == vault.Reject && racedOwner(&p, current) {
		// The owner edited the file since the proposal was made: their
		// text stays, and the change is proposed again, against it, for
		// them to review (never applied on its own).
		d = vault.Decision{Verdict: vault.Queue, Why: "re-proposed: the file changed since the proposal was made (the owner's edit is kept); review it against the file as it is"}
		p.Base = vault.Hash(current)
	}
	out := ProposalOutcome{ID: p.ID, Path: p.Path, Why: d.Why}
	switch d.Verdict {
	case vault.Queue:
		if err := vault.SaveProposal(v.Dir(), &p); err != nil {
			h.log.Error("vault: queue proposal", "proposal", p.ID, "err", err)
			return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not queue the proposal; nothing was written"}
		}
		out.Decision = DecisionQueued
		h.publish(&ProposalQueued{Proposal: p, Why: d.Why, Current: current})
		return out, nil
	case vault.Apply:
		return h.applyLocked(ctx, &p, d.Why, DecidedByPolicy)
	default:
		out.Decision = DecisionRejected
		h.rejectLocked(ctx, &p, DecidedByPolicy, d.Why)
		h.decidedLocked(ctx, out, DecidedByPolicy)
		return out, nil
	}
}

// racedOwner reports whether p, not the owner's, changes a file that is
// no longer the one it was made against (an edit of the owner's raced it).
func racedOwner(p *vault.Proposal, current []byte) bool {
	return p.Author != vault.AuthorOwner && p.Op != vault.OpCreate && p.Base != "" &&
		current != nil && vault.Hash(current) != p.Base
}

// ProposalDecision is the owner's decision on a queued proposal.
type ProposalDecision struct {
	Approve bool
	// By is who decided; "" is the owner.
	By string
	// Content, with Approve, is the owner's edited version of the
	// proposal's file: it is written instead of what was proposed, byte
	// for byte, as the owner's (a deprecate or delete becomes an update).
	Content string
}

// DecideProposal carries out the owner's decision on a queued proposal:
// approved, it is applied (unless its file changed since, when it is
// rejected and must be proposed again), as proposed or as the owner edited
// it (d.Content); rejected, it leaves the inbox, and the ledger and git
// say so. Every subscriber is told with one ProposalDecided.
func (h *Hearth) DecideProposal(ctx context.Context, id string, d ProposalDecision) (ProposalOutcome, error) {
	v := h.cfg.Vault
	if v == nil {
		return ProposalOutcome{}, &Problem{Code: CodeUnavailable, Message: "this hearth has no vault"}
	}
	by := d.By
	if by == "" {
		by = ByOwner
	}
	if d.Content != "" && !d.Approve {
		return ProposalOutcome{}, &Problem{Code: CodeBadRequest, Message: "edited content goes with an approval, not a rejection"}
	}
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	p, err := vault.LoadProposal(v.Dir(), id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(id, "prop_") {
			return ProposalOutcome{}, &Problem{Code: CodeBadRequest, Message: "no proposal waits with that id (it may be decided already)"}
		}
		h.log.Error("vault: load proposal", "proposal", id, "err", err)
		return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not read that proposal"}
	}
	if d.Approve {
		h.ownerEditsLocked(ctx)
		why := "approved by the " + by
		if d.Content != "" {
			// The owner's text, as they wrote it, is theirs: authored
			// by the owner, against the file the proposal was made on.
			if p.Op == vault.OpDeprecate || p.Op == vault.OpDelete {
				p.Op = vault.OpUpdate
			}
			p.Content, p.Patch, p.Author = d.Content, nil, vault.AuthorOwner
			why = "approved as edited by the " + by
		}
		// The commit and the ledger say who approved it.
		p.Reason = strings.TrimSpace(p.Reason) + "\n\n" + strings.ToUpper(why[:1]) + why[1:] + "."
		return h.applyLocked(ctx, p, why, by)
	}
	why := "rejected by the " + by
	h.rejectLocked(ctx, p, by, why)
	if err := h.dropQueued(p.ID); err != nil {
		h.log.Error("vault: drop proposal", "proposal", id, "err", err)
		return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not remove that proposal"}
	}
	out := ProposalOutcome{ID: p.ID, Path: p.Path, Decision: DecisionRejected, Why: why}
	h.decidedLocked(ctx, out, by)
	return out, nil
}

// rejectLocked ledgers and commits a rejection; vaultMu is held. A
// failure is logged: the rejection stands, and a line the ledger could
// not commit goes in with the next commit.
func (h *Hearth) rejectLocked(ctx context.Context, p *vault.Proposal, by, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	defer cancel()
	_, err := h.cfg.Vault.Reject(ctx, p, by, why)
	var cerr *vault.CommitError
	switch {
	case errors.As(err, &cerr):
		h.log.Warn("vault: the rejection is ledgered but not committed; retrying in the background", "proposal", p.ID, "err", err)
		h.vaultFailed(h.waitingLocked(), err)
	case err != nil:
		h.log.Warn("vault: could not record a rejection", "proposal", p.ID, "err", err)
	}
}

// Proposals lists the proposals waiting for the owner, oldest first.
func (h *Hearth) Proposals(ctx context.Context) ([]vault.Proposal, error) {
	v := h.cfg.Vault
	if v == nil {
		return nil, &Problem{Code: CodeUnavailable, Message: "this hearth has no vault"}
	}
	ps, bad, err := vault.ListProposals(v.Dir())
	if err != nil {
		h.log.Error("vault: list proposals", "err", err)
		return nil, &Problem{Code: CodeInternal, Message: "hearth could not read the proposals"}
	}
	for _, e := range bad {
		h.log.Warn("vault: a queued proposal is unreadable; skipped", "err", e)
	}
	out := make([]vault.Proposal, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out, nil
}

// ReviewProposals lists the proposals waiting for the owner, oldest
// first, as the owner reviews them: each with the file as it is now and
// what policy says of it now (why it waits, or that the file changed
// since). It only reads: a write under way may land just after.
func (h *Hearth) ReviewProposals(ctx context.Context) ([]ProposalQueued, error) {
	ps, err := h.Proposals(ctx)
	if err != nil {
		return nil, err
	}
	v := h.cfg.Vault
	pol, perr := v.Policy()
	out := make([]ProposalQueued, len(ps))
	for i, p := range ps {
		out[i].Proposal = p
		if !fs.ValidPath(p.Path) {
			continue
		}
		cur, err := v.Read(p.Path)
		if err != nil {
			h.log.Warn("vault: read a file under review", "path", p.Path, "err", err)
			continue
		}
		out[i].Current = cur
		if perr == nil {
			out[i].Why = vault.Decide(pol, &p, cur).Why
		}
	}
	return out, nil
}

// applyLocked applies p and publishes the outcome; vaultMu is held. A
// failed git commit leaves the write saved: it is reported as a Notice and
// the outcome says so; chat goes on.
func (h *Hearth) applyLocked(ctx context.Context, p *vault.Proposal, why, by string) (ProposalOutcome, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultWrite)
	defer cancel()
	out := ProposalOutcome{ID: p.ID, Path: p.Path, Decision: DecisionApplied, Why: why}
	res, err := h.cfg.Vault.Apply(ctx, p)
	var cerr *vault.CommitError
	switch {
	case err == nil:
		out.Commit = res.Commit
	case errors.Is(err, vault.ErrStale):
		out.Decision, out.Why = DecisionRejected, "the file changed since the proposal was made (the owner edited it); propose it again"
		// It can never apply: it leaves the inbox.
		if err := h.dropQueued(p.ID); err != nil {
			h.log.Warn("vault: drop a stale proposal", "proposal", p.ID, "err", err)
		}
	case errors.As(err, &cerr):
		out.CommitFailed = true
		h.log.Warn("vault: the write is saved but not committed; retrying in the background", "proposal", p.ID, "err", err)
		h.vaultFailed(h.waitingLocked(), err)
	case errors.As(err, new(*vault.ParseError)):
		return ProposalOutcome{}, &Problem{Code: CodeBadRequest, Message: "the note does not parse, so nothing was written: " + err.Error()}
	default:
		h.log.Error("vault: apply", "proposal", p.ID, "err", err)
		return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not write the memory; details are in hearth's log"}
	}
	h.knowledge(ctx, res.Paths)
	h.decidedLocked(ctx, out, by)
	return out, nil
}

// decidedLocked journals a proposal's decision and tells every
// subscriber; vaultMu is held, and commitMu is taken for the append and
// the event only (lock order vaultMu → commitMu), so the record is in
// journal order with every other commit while a turn never waits for the
// vault's git commit. The vault's ledger and git hold the decision
// already (or the keeper commits it late): they are its truth, and the
// journal's record, written after them, is the conversation's account of
// it. A crash in between leaves the decision in the vault without its
// record, never a record of a decision the vault does not hold. A
// record the journal cannot take is logged; the decision stands.
func (h *Hearth) decidedLocked(ctx context.Context, out ProposalOutcome, by string) {
	d := journal.Decision{Proposal: out.ID, Path: out.Path, Verdict: out.Decision, Why: out.Why, Commit: out.Commit}
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	rec, err := h.cfg.Journal.Append(context.WithoutCancel(ctx), journal.DecisionRecord(d, by))
	switch {
	case err != nil:
		h.log.Warn("vault: the decision is in the ledger but not in the journal", "proposal", out.ID, "decision", out.Decision, "err", err)
	case h.cfg.Memory != nil:
		h.cfg.Memory.Notify(rec.ID)
	}
	h.publish(&ProposalDecided{ProposalOutcome: out, By: by})
}

// dropQueued removes the proposal id from the inbox, if it is there.
func (h *Hearth) dropQueued(id string) error {
	err := os.Remove(filepath.Join(h.cfg.Vault.Dir(), filepath.FromSlash(vault.ProposalsDir), id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ownerEditsLocked commits, before a vault write and from the keeper,
// the writes whose commit failed or was cut short by a crash (as their
// authors: the vault keeps them durably) and then what the owner edited
// by hand; vaultMu is held. Failures are logged and left to the keeper's
// retries: the write itself decides.
func (h *Hearth) ownerEditsLocked(ctx context.Context) {
	late, err := h.cfg.Vault.CommitPending(ctx)
	h.knowledge(ctx, late.Paths)
	if err != nil {
		h.log.Warn("vault: a saved change still cannot be committed", "err", err)
		h.vaultFailed(h.waitingLocked(), err)
		return // not the owner's: leave them for the next write
	}
	// While git's index is held, the owner's edits wait (committing them
	// would only ledger the failure again).
	if err := vault.Probe(h.cfg.Vault.Dir()); err != nil {
		edits, eerr := h.cfg.Vault.OwnerEdits(ctx)
		h.keeper.mu.Lock()
		h.keeper.ownerFailed = len(edits) > 0 || eerr != nil
		h.keeper.mu.Unlock()
		if len(edits) > 0 || eerr != nil {
			h.vaultFailed(h.waitingLocked(), err)
		} else {
			h.vaultCaughtUp()
		}
		return
	}
	res, malformed, err := h.cfg.Vault.CommitOwnerEdits(ctx)
	var cerr *vault.CommitError
	failed := errors.As(err, &cerr)
	if err != nil {
		h.log.Warn("vault: could not commit the owner's edits", "err", err)
	}
	if len(res.Paths) > 0 && !failed {
		h.log.Info("vault: committed the owner's edits", "files", len(res.Paths), "commit", res.Commit)
	}
	h.knowledge(ctx, res.Paths)
	for _, e := range malformed {
		h.log.Warn("vault: a note the owner edited does not parse; kept as written", "err", e)
	}
	h.keeper.mu.Lock()
	h.keeper.ownerFailed = failed
	h.keeper.mu.Unlock()
	if failed {
		h.vaultFailed(h.waitingLocked(), err)
		return
	}
	h.vaultCaughtUp()
}

// waitingLocked counts the writes waiting for a commit: each failed
// one, and the owner's edits as one; vaultMu is held.
func (h *Hearth) waitingLocked() int {
	n, err := h.cfg.Vault.Pending()
	if err != nil {
		n = 1
	}
	h.keeper.mu.Lock()
	defer h.keeper.mu.Unlock()
	if h.keeper.ownerFailed {
		n++
	}
	return max(n, 1)
}

// CurrentSource is what a tool call of the turn in flight comes from: the
// conversation's latest owner turn, as a vault source (zero when there is
// none).
func (h *Hearth) CurrentSource() vault.Source {
	return h.CurrentSourceIn(context.Background())
}

// CurrentSourceIn is CurrentSource in the conversation of the turn whose
// tool ctx is (ConversationFrom).
func (h *Hearth) CurrentSourceIn(ctx context.Context) vault.Source {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.convs[ConversationFrom(ctx)]
	if c == nil {
		return vault.Source{}
	}
	for i := len(c.recent) - 1; i >= 0; i-- {
		if c.recent[i].Role == memory.RoleUser {
			return vault.Source{Thread: c.id, Turn: c.recent[i].ID}
		}
	}
	return vault.Source{}
}
