package wire

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/vault"
)

// VaultCore is what the vault's operations need of the core; Core embeds
// it.
type VaultCore interface {
	VaultRead(ctx context.Context, path, at string) (hearth.VaultFile, error)
	VaultWrite(ctx context.Context, w hearth.VaultWrite) (hearth.ProposalOutcome, error)
	VaultList(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error)
	VaultHistory(ctx context.Context, path string, limit int) ([]vault.Change, error)
	PurgeLayer(ctx context.Context, req hearth.PurgeRequest) (hearth.PurgeResult, error)
	Export(ctx context.Context, path string) (hearth.ExportResult, error)
}

// purgeTimeout and exportTimeout bound a purge and an export.
const (
	purgeTimeout  = 10 * time.Minute
	exportTimeout = 30 * time.Minute
)

// vaultPurge carries out the owner's purge off the caller's goroutine;
// once asked it completes even when the client leaves.
func (s *Session) vaultPurge(m *ipc.VaultPurge) {
	req := hearth.PurgeRequest{Layer: m.Layer, Confirm: m.Confirm, Reason: m.Reason}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), purgeTimeout)
		defer cancel()
		res, err := s.core.PurgeLayer(ctx, req)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(&ipc.VaultPurged{Layer: res.Layer, Removed: res.Removed, Commit: res.Commit, CommitFailed: res.CommitFailed, Ref: m.Ref})
	})
}

// vaultExport writes an export off the caller's goroutine; Close
// cancels it.
func (s *Session) vaultExport(m *ipc.VaultExport) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, exportTimeout)
		defer cancel()
		res, err := s.core.Export(ctx, m.Path)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(&ipc.VaultExported{Path: res.Path, Bytes: res.Bytes, Files: res.Files, Notes: res.Notes, Ref: m.Ref})
	})
}

// vaultRead answers a vault_read off the caller's goroutine.
func (s *Session) vaultRead(m *ipc.VaultRead) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, vaultTimeout)
		defer cancel()
		f, err := s.core.VaultRead(ctx, m.Path, m.At)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		out := &ipc.VaultFile{Path: f.Path, Commit: f.Commit, Ref: m.Ref}
		out.Content, out.Truncated = Cut(string(f.Content), ipc.MaxTurnContent)
		s.reply(out)
	})
}

// vaultWrite carries out the owner's write off the caller's goroutine;
// once asked it completes even when the client leaves.
func (s *Session) vaultWrite(m *ipc.VaultWrite) {
	w := hearth.VaultWrite{Op: m.Op, Path: m.Path, Content: m.Content, Hard: m.Hard, Base: m.Base, Reason: m.Reason, Author: vault.AuthorOwner}
	if p := m.Patch; p != nil {
		w.Patch = &vault.Patch{BodyAppend: p.Append, TagsAdd: p.TagsAdd, Confidence: p.Confidence, Confirmed: p.Confirmed}
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), vaultTimeout)
		defer cancel()
		out, err := s.core.VaultWrite(ctx, w)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(ProposalDecided(out, hearth.ByOwner, m.Ref))
	})
}

// vaultList answers a vault_list off the caller's goroutine.
func (s *Session) vaultList(m *ipc.VaultList) {
	f := vault.ListFilter{Type: m.NoteType, Status: vault.Status(m.Status), Tag: m.Tag, Prefix: m.Prefix}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, vaultTimeout)
		defer cancel()
		notes, err := s.core.VaultList(ctx, f)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		out := &ipc.VaultNotes{Notes: make([]ipc.VaultNote, 0, len(notes)), Ref: m.Ref}
		room := ipc.MaxLineBytes - 256 - len(m.Ref)*6
		for _, n := range notes {
			w := ipc.VaultNote{Path: n.Path, ID: n.ID, Title: n.Title, NoteType: n.Type, Status: string(n.Status), Tags: n.Tags, UpdatedAt: n.UpdatedAt, Error: n.Err}
			if room -= encodedLen(w) + 1; room < 0 {
				out.More = true
				break
			}
			out.Notes = append(out.Notes, w)
		}
		s.reply(out)
	})
}

// vaultHistory answers a vault_history off the caller's goroutine.
func (s *Session) vaultHistory(m *ipc.VaultHistory) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, vaultTimeout)
		defer cancel()
		cs, err := s.core.VaultHistory(ctx, m.Path, max(m.Limit, 0))
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		out := &ipc.VaultChanges{Path: m.Path, Changes: make([]ipc.VaultChange, 0, len(cs)), Ref: m.Ref}
		room := ipc.MaxLineBytes - 256 - len(m.Ref)*6 - len(m.Path)*6
		for _, c := range cs {
			w := ipc.VaultChange{Commit: c.Commit, Author: c.Author, When: c.When, Subject: c.Subject}
			if len(c.Ledger) > 0 {
				e := c.Ledger[0]
				w.Op, w.Reason, w.Proposal = string(e.Op), e.Reason, e.Proposal
			}
			w.Reason, _ = Cut(w.Reason, 4096)
			if room -= encodedLen(w) + 1; room < 0 {
				out.More = true
				break
			}
			out.Changes = append(out.Changes, w)
		}
		s.reply(out)
	})
}

// encodedLen is the length of v in JSON, escaped as ipc escapes it (an
// upper bound: the encoder may escape more than json.Marshal).
func encodedLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
