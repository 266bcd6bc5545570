package hearth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/memory/vault"
)

// The vault's core operations (seed 000: read, write, edit, delete, list,
// history) are methods here, reached the same way by every door: the
// agent's memory tools, the protocol's vault_* messages, and mnemo memory.
// Reads go to the files and git directly; writes go through the commit
// path: an owner's write is applied as theirs (ledgered, committed, with a
// reason), an agent's is a proposal under the policy (Propose).

// Vault write operations (VaultWrite.Op).
const (
	VaultOpWrite  = "write"  // create or replace a file with Content
	VaultOpEdit   = "edit"   // patch a note (Patch)
	VaultOpDelete = "delete" // deprecate a note, or with Hard remove the file
)

// VaultWrite is one write to the vault.
type VaultWrite struct {
	Op      string // VaultOpWrite, VaultOpEdit or VaultOpDelete
	Path    string // slash-separated, relative to the memory root
	Content string // write: the whole new file
	Patch   *vault.Patch
	// Hard, on delete, removes the file; else a note is kept and marked
	// deprecated (the default of "remove").
	Hard bool
	// Base, when set, is the hash (vault.Hash) of the file the write was
	// made against: a file that no longer has it is not written.
	Base    string
	Reason  string
	Sources []vault.Source
	// Author is who writes: "" or the owner applies it as theirs; the
	// agent's (or a job's) write is a proposal the policy governs.
	Author string
}

// VaultFile is a file of the vault as read: its content now, or at the
// commit Commit.
type VaultFile struct {
	Path    string
	Content []byte
	Commit  string // "" for the file as it is now
}

// vaultRead bounds one vault read (a file, a list, a history).
const vaultRead = time.Minute

// VaultRead reads the file path of the memory root as it is now (at ""),
// or at a version: a commit hash (abbreviated or not) or a revision.
func (h *Hearth) VaultRead(ctx context.Context, path, at string) (VaultFile, error) {
	v := h.cfg.Vault
	if v == nil {
		return VaultFile{}, noVault()
	}
	ctx, cancel := context.WithTimeout(ctx, vaultRead)
	defer cancel()
	if err := vault.CheckReadPath(path); err != nil {
		return VaultFile{}, &Problem{Code: CodeBadRequest, Message: err.Error()}
	}
	b, commit, err := v.ReadAt(ctx, path, at)
	switch {
	case errors.Is(err, vault.ErrNotFound):
		if at != "" {
			return VaultFile{}, &Problem{Code: CodeBadRequest, Message: fmt.Sprintf("%s does not exist at version %s", path, at)}
		}
		return VaultFile{}, &Problem{Code: CodeBadRequest, Message: fmt.Sprintf("%s does not exist", path)}
	case err != nil:
		h.log.Error("vault: read", "path", path, "at", at, "err", err)
		return VaultFile{}, &Problem{Code: CodeInternal, Message: "hearth could not read that file; details are in hearth's log"}
	}
	return VaultFile{Path: path, Content: b, Commit: commit}, nil
}

// VaultList lists the notes f selects (all of knowledge/ by default).
func (h *Hearth) VaultList(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error) {
	v := h.cfg.Vault
	if v == nil {
		return nil, noVault()
	}
	ctx, cancel := context.WithTimeout(ctx, vaultRead)
	defer cancel()
	notes, err := v.List(ctx, f)
	if err != nil {
		if strings.Contains(err.Error(), "not a clean relative path") || strings.Contains(err.Error(), "dot files") {
			return nil, &Problem{Code: CodeBadRequest, Message: err.Error()}
		}
		h.log.Error("vault: list", "err", err)
		return nil, &Problem{Code: CodeInternal, Message: "hearth could not list the notes; details are in hearth's log"}
	}
	return notes, nil
}

// VaultHistory lists the changes to the file path, newest first, at most
// limit (0: all): each commit with who, when and why, and the ledger
// lines no commit of the file holds (rejections, writes not committed
// yet). VaultRead at a change's commit gives the file as it was.
func (h *Hearth) VaultHistory(ctx context.Context, path string, limit int) ([]vault.Change, error) {
	v := h.cfg.Vault
	if v == nil {
		return nil, noVault()
	}
	ctx, cancel := context.WithTimeout(ctx, vaultRead)
	defer cancel()
	if err := vault.CheckReadPath(path); err != nil {
		return nil, &Problem{Code: CodeBadRequest, Message: err.Error()}
	}
	cs, err := v.History(ctx, path, limit)
	if err != nil {
		h.log.Error("vault: history", "path", path, "err", err)
		return nil, &Problem{Code: CodeInternal, Message: "hearth could not read the file's history; details are in hearth's log"}
	}
	return cs, nil
}

// VaultWrite carries out w: the owner's write is applied at once (after
// their hand edits are committed, so a Base made against an older file
// is refused as stale, never clobbering), the agent's is proposed under
// the policy. Either way every subscriber hears the outcome.
func (h *Hearth) VaultWrite(ctx context.Context, w VaultWrite) (ProposalOutcome, error) {
	v := h.cfg.Vault
	if v == nil {
		return ProposalOutcome{}, noVault()
	}
	if err := vault.CheckWritePath(w.Path); err != nil {
		return ProposalOutcome{}, &Problem{Code: CodeBadRequest, Message: err.Error()}
	}
	author := w.Author
	if author == "" {
		author = vault.AuthorOwner
	}
	if id, ok := auth.From(ctx); ok && !id.IsOwner() && author == vault.AuthorOwner {
		// A door writing for someone else (an agent's device allowed
		// vault write): never the owner's write, a proposal of theirs
		// under the policy, its source their own text.
		author = vault.ExternalAuthor(id.Subject)
		if len(w.Sources) == 0 {
			sum := sha256.Sum256([]byte(w.Content))
			w.Sources = []vault.Source{{Thread: "door:" + id.Subject, ExcerptSHA256: hex.EncodeToString(sum[:])}}
		}
	}
	p := vault.Proposal{ID: vault.NewProposalID(), Path: w.Path, Base: w.Base, Reason: strings.TrimSpace(w.Reason),
		Sources: w.Sources, Author: author, CreatedAt: time.Now().UTC()}
	if author != vault.AuthorOwner {
		current, err := v.Read(w.Path)
		if err != nil {
			h.log.Error("vault: read", "path", w.Path, "err", err)
			return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not read the memory file; nothing was written"}
		}
		if err := shapeWrite(&p, w, current); err != nil {
			return ProposalOutcome{}, err
		}
		return h.Propose(ctx, p)
	}
	if p.Reason == "" {
		p.Reason = "written by the owner"
	}
	h.vaultMu.Lock()
	defer h.vaultMu.Unlock()
	h.ownerEditsLocked(ctx)
	current, err := v.Read(w.Path)
	if err != nil {
		h.log.Error("vault: read", "path", w.Path, "err", err)
		return ProposalOutcome{}, &Problem{Code: CodeInternal, Message: "hearth could not read the memory file; nothing was written"}
	}
	if err := shapeWrite(&p, w, current); err != nil {
		return ProposalOutcome{}, err
	}
	return h.applyLocked(ctx, &p, "written by the owner", ByOwner)
}

// shapeWrite makes w a proposal p against the file as it is (current, nil
// when absent).
func shapeWrite(p *vault.Proposal, w VaultWrite, current []byte) error {
	bad := func(f string, a ...any) error { return &Problem{Code: CodeBadRequest, Message: fmt.Sprintf(f, a...)} }
	if p.Base == "" && current != nil {
		p.Base = vault.Hash(current)
	}
	switch w.Op {
	case VaultOpWrite:
		if w.Content == "" {
			return bad("write %s: give the file's content (an empty file is a delete)", w.Path)
		}
		p.Op, p.Content = vault.OpUpdate, w.Content
		if current == nil {
			if w.Base != "" {
				return bad("%s does not exist any more: it was deleted since", w.Path)
			}
			p.Op = vault.OpCreate
		}
	case VaultOpEdit:
		if w.Patch == nil || w.Patch.BodyAppend == "" && len(w.Patch.TagsAdd) == 0 && w.Patch.Confidence == nil && !w.Patch.Confirmed {
			return bad("edit %s: say what to change (text to append, tags to add, a confidence, or confirmed)", w.Path)
		}
		if current == nil {
			return bad("%s does not exist", w.Path)
		}
		if _, err := vault.ParseNote(w.Path, current); err != nil {
			return bad("%s does not parse, so it can only be replaced whole: %v", w.Path, err)
		}
		p.Op, p.Patch = vault.OpUpdate, w.Patch
	case VaultOpDelete:
		if current == nil {
			return bad("%s does not exist", w.Path)
		}
		p.Op = vault.OpDelete
		if !w.Hard {
			if _, err := vault.ParseNote(w.Path, current); err != nil {
				return bad("%s is not a note that parses, so it cannot be deprecated; delete it for good (hard) or fix it: %v", w.Path, err)
			}
			p.Op = vault.OpDeprecate
		}
	default:
		return bad("vault op %q: want write, edit or delete", w.Op)
	}
	return nil
}

func noVault() error {
	return &Problem{Code: CodeUnavailable, Message: "this hearth has no vault"}
}
