package hearth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// gatedVault is a real vault whose writes (Apply, ApplyBatch) stop once
// inside, after being told, until released: a git commit held mid-way.
type gatedVault struct {
	*vault.Vault
	entered chan string   // the write that got inside
	release chan struct{} // closed: the writes go on
}

func (g *gatedVault) hold(what string) {
	g.entered <- what
	<-g.release
}

func (g *gatedVault) Apply(ctx context.Context, p *vault.Proposal) (vault.Result, error) {
	g.hold("apply " + p.Path)
	return g.Vault.Apply(ctx, p)
}

func (g *gatedVault) ApplyBatch(ctx context.Context, ps []*vault.Proposal, subject string) (vault.Result, error) {
	g.hold("batch " + subject)
	return g.Vault.ApplyBatch(ctx, ps, subject)
}

// TestTurnNotBehindVaultCommit: while a vault write — a proposal, a
// batch, a forget's cascade — is held inside its commit, a turn is still
// stored and answered; the write's decision is journaled once it is
// released, after the turn's records.
func TestTurnNotBehindVaultCommit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, h *hearth.Hearth, turnID string) error
	}{
		{"propose", func(ctx context.Context, h *hearth.Hearth, _ string) error {
			_, err := h.Propose(ctx, noteProposal("knowledge/projects/shed.md", "project", "The shed is green."))
			return err
		}},
		{"batch", func(ctx context.Context, h *hearth.Hearth, _ string) error {
			_, err := h.ProposeBatch(ctx, []vault.Proposal{noteProposal("knowledge/projects/shed.md", "project", "The shed is green.")}, "job test", false)
			return err
		}},
		{"forget", func(ctx context.Context, h *hearth.Hearth, turnID string) error {
			_, err := h.Forget(ctx, hearth.ForgetRequest{IDs: []string{turnID}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, j, _ := openVaultRoot(t)
			ctx := t.Context()
			// A turn and a note made from it, for the forget's cascade.
			first, err := j.Append(ctx, journal.Record{Role: "user", Text: "the shed is green", Mode: "text"})
			if err != nil {
				t.Fatal(err)
			}
			p := vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: "knowledge/projects/colour.md",
				Content: noteWith("Colour", "project", "The shed is green.", first.ID), Reason: "made from the conversation",
				Sources: []vault.Source{{Thread: hearth.MainConversation, Turn: first.ID}}, Author: vault.AuthorCurator}
			if _, err := v.Apply(ctx, &p); err != nil {
				t.Fatal(err)
			}
			g := &gatedVault{Vault: v, entered: make(chan string, 1), release: make(chan struct{})}
			h := runCore(t, hearth.Config{Journal: j, Vault: g, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second})
			sub, err := h.Subscribe(hearth.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()

			wrote := make(chan error, 1)
			go func() { wrote <- tc.write(ctx, h, first.ID) }()
			var held string
			select {
			case held = <-g.entered:
			case err := <-wrote:
				t.Fatalf("the vault write ended without reaching the vault: %v", err)
			}
			released := false
			defer func() {
				if !released {
					close(g.release)
				}
			}()

			// The turn is stored and answered while the write is held.
			if err := h.Send("", "what colour is the shed?"); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			errDone := errors.New("done")
			err = sub.Run(wctx, func(evs []hearth.Event) error {
				for _, ev := range evs {
					if _, ok := ev.(*hearth.ReplyDone); ok {
						return errDone
					}
				}
				return nil
			})
			if !errors.Is(err, errDone) {
				t.Fatalf("no reply while %s was held inside its commit: %v (the turn waits behind the vault)", held, err)
			}
			select {
			case err := <-wrote:
				t.Fatalf("the vault write ended while held: %v", err)
			default:
			}
			close(g.release)
			released = true
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			// Its decision is journaled after the turn's records.
			var order []string
			if err := j.Scan(ctx, func(r journal.Record) error {
				switch {
				case r.IsDecision():
					order = append(order, "decision")
				case r.IsTurn():
					order = append(order, r.Role)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n := len(order); n < 3 || order[n-1] != "decision" || order[n-2] != "agent" || order[n-3] != "user" {
				t.Fatalf("journal order %v: want the turn, then the held write's decision", order)
			}
		})
	}
}
