package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// memoryUsage is mnemo memory's help.
const memoryUsage = `usage: mnemo memory list | approve ID | reject ID
  Review what the agent proposed to remember that policy left for you:
  list       the proposals waiting, oldest first (id, op, file, why)
  approve ID write it to the vault and commit it
  reject ID  drop it`

// memoryArgs checks mnemo memory's arguments: the subcommand and, for
// approve and reject, the proposal id.
func memoryArgs(args []string) (sub, id string, err error) {
	if len(args) == 0 {
		return "", "", usageError{errors.New(memoryUsage)}
	}
	switch sub = args[0]; sub {
	case "list":
		if len(args) != 1 {
			return "", "", usagef("memory list takes no arguments\n%s", memoryUsage)
		}
	case "approve", "reject":
		if len(args) != 2 || strings.TrimSpace(args[1]) == "" {
			return "", "", usagef("memory %s needs one proposal id (mnemo memory list shows them)", sub)
		}
		id = strings.TrimSpace(args[1])
	default:
		return "", "", usagef("unknown memory command %q\n%s", sub, memoryUsage)
	}
	return sub, id, nil
}

// memoryCmd lists the proposals waiting for the owner, or approves or
// rejects one.
func memoryCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	sub, id, err := memoryArgs(args)
	if err != nil {
		return err
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !hasFeature(conn.History(), "vault") {
		return errors.New("this hearth has no vault to review: upgrade it")
	}
	ref := newRef()
	var req ipc.Msg = &ipc.Proposals{Ref: ref}
	if sub != "list" {
		req = &ipc.ProposalDecide{ID: id, Approve: sub == "approve", Ref: ref}
	}
	if err := conn.Send(req); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	m, err := awaitRef(ctx, conn, ref)
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case *ipc.ProposalList:
		if len(m.Proposals) == 0 {
			fmt.Fprintln(w, "no proposals wait for review")
			return nil
		}
		for _, p := range m.Proposals {
			fmt.Fprintf(w, "%s  %s  %-9s %s  %s\n", p.ID, p.CreatedAt.Local().Format(time.DateTime), p.Op, p.Path, oneLine(p.Reason))
		}
		if m.More {
			fmt.Fprintln(w, "(more wait: approve or reject these to see them)")
		}
	case *ipc.ProposalDecided:
		switch {
		case m.Decision == "applied" && m.Commit != "":
			fmt.Fprintf(w, "applied %s: %s (commit %s)\n", m.ID, m.Path, m.Commit[:min(len(m.Commit), 12)])
		case m.Decision == "applied":
			fmt.Fprintf(w, "applied %s: %s, saved but not committed yet (git failed; see hearth's log)\n", m.ID, m.Path)
		default:
			fmt.Fprintf(w, "rejected %s: %s\n", m.ID, m.Why)
		}
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
