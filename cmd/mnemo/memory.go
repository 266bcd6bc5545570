package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// memoryUsage is mnemo memory's help.
const memoryUsage = `usage: mnemo memory COMMAND
  The vault: the notes hearth keeps in the memory root, under git.
  list [--type T] [--status S] [--tag T] [--prefix P]
                    the notes (of knowledge/, or under the path prefix P)
  read PATH [--at VERSION]
                    print a file, as it is or at a version (history shows them)
  write PATH [--file F] [--reason R] [--base SHA256]
                    create or replace a file with F's content (default: stdin)
  edit PATH [--append TEXT] [--tag T]... [--confidence X] [--confirmed] [--reason R]
                    patch a note
  delete PATH [--hard] [--reason R]
                    mark a note deprecated (kept); --hard removes the file
  history PATH [-n N]
                    the changes to a file, newest first: version, when, who, what, why
  pending           the agent's proposals that wait for your review
  approve ID [--file F]
                    write a proposal (F: your edited version of its file)
  reject ID         drop a proposal
  purge LAYER [--confirm] [--reason R]
                    empty a layer: index, summaries, knowledge, proposals, or
                    threads (the whole conversation: needs --confirm)
  export [PATH]     hearth writes an archive of the memory root on its own
                    machine (default: under the root's artifacts/exports/)
  Writes are yours: ledgered in audit/ledger/ (a file a month) and committed.`

// memoryReq is a parsed mnemo memory command: the request to send (its
// Ref is set when sent) and, for write and approve --file, where the
// content comes from ("-": standard input).
type memoryReq struct {
	sub     string
	msg     ipc.Msg
	content string // a file name, "-" for stdin, "" for none
}

// memoryArgs checks mnemo memory's arguments and builds the request.
func memoryArgs(args []string) (memoryReq, error) {
	if len(args) == 0 {
		return memoryReq{}, usageError{errors.New(memoryUsage)}
	}
	sub := args[0]
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		at, file, reason, base, typ, status, tag, prefix, appendText string
		hard, confirmed                                              bool
		limit                                                        int
		confidence                                                   = -1.0
		tags                                                         tagList
	)
	one := func() (string, error) { // parses flags around one argument
		var pos []string
		rest := args[1:]
		for {
			if err := fs.Parse(rest); err != nil {
				return "", usagef("memory %s: %v\n%s", sub, err, memoryUsage)
			}
			if fs.NArg() == 0 {
				break
			}
			pos = append(pos, fs.Arg(0))
			rest = fs.Args()[1:]
		}
		if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
			return "", usagef("memory %s needs one argument\n%s", sub, memoryUsage)
		}
		return strings.TrimSpace(pos[0]), nil
	}
	none := func() error {
		if err := fs.Parse(args[1:]); err != nil {
			return usagef("memory %s: %v\n%s", sub, err, memoryUsage)
		}
		if fs.NArg() != 0 {
			return usagef("memory %s takes no arguments\n%s", sub, memoryUsage)
		}
		return nil
	}
	req := memoryReq{sub: sub}
	switch sub {
	case "list":
		fs.StringVar(&typ, "type", "", "")
		fs.StringVar(&status, "status", "", "")
		fs.StringVar(&tag, "tag", "", "")
		fs.StringVar(&prefix, "prefix", "", "")
		if err := none(); err != nil {
			return req, err
		}
		req.msg = &ipc.VaultList{NoteType: typ, Status: status, Tag: tag, Prefix: prefix}
	case "pending":
		if err := none(); err != nil {
			return req, err
		}
		req.msg = &ipc.Proposals{}
	case "read":
		fs.StringVar(&at, "at", "", "")
		p, err := one()
		if err != nil {
			return req, err
		}
		req.msg = &ipc.VaultRead{Path: p, At: at}
	case "history":
		fs.IntVar(&limit, "n", 0, "")
		p, err := one()
		if err != nil {
			return req, err
		}
		req.msg = &ipc.VaultHistory{Path: p, Limit: limit}
	case "write":
		fs.StringVar(&file, "file", "-", "")
		fs.StringVar(&reason, "reason", "", "")
		fs.StringVar(&base, "base", "", "")
		p, err := one()
		if err != nil {
			return req, err
		}
		req.msg, req.content = &ipc.VaultWrite{Op: ipc.VaultOpWrite, Path: p, Reason: reason, Base: base}, file
	case "edit":
		fs.StringVar(&appendText, "append", "", "")
		fs.Var(&tags, "tag", "")
		fs.Float64Var(&confidence, "confidence", -1, "")
		fs.BoolVar(&confirmed, "confirmed", false, "")
		fs.StringVar(&reason, "reason", "", "")
		p, err := one()
		if err != nil {
			return req, err
		}
		pt := &ipc.VaultPatch{Append: appendText, TagsAdd: tags, Confirmed: confirmed}
		if confidence >= 0 {
			if confidence > 1 {
				return req, usagef("memory edit: --confidence is between 0 and 1")
			}
			pt.Confidence = &confidence
		}
		if pt.Append == "" && len(pt.TagsAdd) == 0 && pt.Confidence == nil && !pt.Confirmed {
			return req, usagef("memory edit: say what to change: --append, --tag, --confidence or --confirmed")
		}
		req.msg = &ipc.VaultWrite{Op: ipc.VaultOpEdit, Path: p, Patch: pt, Reason: reason}
	case "delete":
		fs.BoolVar(&hard, "hard", false, "")
		fs.StringVar(&reason, "reason", "", "")
		p, err := one()
		if err != nil {
			return req, err
		}
		req.msg = &ipc.VaultWrite{Op: ipc.VaultOpDelete, Path: p, Hard: hard, Reason: reason}
	case "approve":
		fs.StringVar(&file, "file", "", "")
		id, err := one()
		if err != nil {
			return req, usagef("memory approve needs one proposal id (mnemo memory pending shows them)")
		}
		req.msg, req.content = &ipc.ProposalDecide{ID: id, Approve: true}, file
	case "reject":
		id, err := one()
		if err != nil {
			return req, usagef("memory reject needs one proposal id (mnemo memory pending shows them)")
		}
		req.msg = &ipc.ProposalDecide{ID: id}
	case "purge":
		fs.BoolVar(&confirmed, "confirm", false, "")
		fs.StringVar(&reason, "reason", "", "")
		layer, err := one()
		if err != nil {
			return req, usagef("memory purge needs one layer: index, summaries, knowledge, proposals or threads")
		}
		if layer == "threads" && !confirmed {
			return req, usagef("memory purge threads erases the whole conversation from disk: add --confirm")
		}
		req.msg = &ipc.VaultPurge{Layer: layer, Confirm: confirmed, Reason: reason}
	case "export":
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 1 {
			return req, usagef("memory export takes at most one path\n%s", memoryUsage)
		}
		p := fs.Arg(0)
		if p != "" {
			abs, err := filepath.Abs(p)
			if err != nil {
				return req, err
			}
			p = abs
		}
		req.msg = &ipc.VaultExport{Path: p}
	default:
		return req, usagef("unknown memory command %q\n%s", sub, memoryUsage)
	}
	return req, nil
}

// tagList is a repeatable --tag.
type tagList []string

func (t *tagList) String() string     { return strings.Join(*t, ",") }
func (t *tagList) Set(s string) error { *t = append(*t, s); return nil }

// memoryCmd carries out one mnemo memory command over hearth's vault.
func memoryCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, in io.Reader, w io.Writer) error {
	req, err := memoryArgs(args)
	if err != nil {
		return err
	}
	if req.content != "" {
		var b []byte
		if req.content == "-" {
			b, err = io.ReadAll(in)
		} else {
			b, err = os.ReadFile(req.content)
		}
		if err != nil {
			return fmt.Errorf("memory %s: %w", req.sub, err)
		}
		switch m := req.msg.(type) {
		case *ipc.VaultWrite:
			m.Content = string(b)
		case *ipc.ProposalDecide:
			m.Content = string(b)
		}
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !hasFeature(conn.History(), "vault") {
		return errors.New("this hearth has no vault: upgrade it")
	}
	ref := newRef()
	setVaultRef(req.msg, ref)
	if err := conn.Send(req.msg); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	m, err := awaitVault(ctx, conn, ref)
	if err != nil {
		return err
	}
	return printVault(w, m)
}

// printVault prints hearth's answer to a mnemo memory command; a write
// that was not applied is an error.
func printVault(w io.Writer, m ipc.Msg) error {
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
			fmt.Fprintf(w, "applied %s: %s, saved but not committed yet (git failed; hearth retries)\n", m.ID, m.Path)
		case m.By == "owner" && strings.HasPrefix(m.Why, "rejected by"):
			fmt.Fprintf(w, "rejected %s: %s\n", m.ID, m.Why)
		default:
			return fmt.Errorf("not written: %s", m.Why)
		}
	case *ipc.VaultPurged:
		what := "files"
		if m.Layer == "threads" {
			what = "turns"
		}
		fmt.Fprintf(w, "purged %s: %d %s", m.Layer, m.Removed, what)
		switch {
		case m.Commit != "":
			fmt.Fprintf(w, " (commit %s)", m.Commit[:min(len(m.Commit), 12)])
		case m.CommitFailed:
			fmt.Fprint(w, " (not committed yet: git failed; hearth retries)")
		}
		fmt.Fprintln(w)
	case *ipc.VaultExported:
		for _, n := range m.Notes {
			fmt.Fprintln(w, "note:", n)
		}
		fmt.Fprintf(w, "exported %d files to %s (%d bytes) on hearth's machine\n", m.Files, m.Path, m.Bytes)
	case *ipc.VaultFile:
		io.WriteString(w, m.Content)
		if m.Truncated {
			return errors.New("the file is longer than one message carries; read it in the memory root")
		}
	case *ipc.VaultNotes:
		for _, n := range m.Notes {
			if n.Error != "" {
				fmt.Fprintf(w, "%s  (does not parse: %s)\n", n.Path, oneLine(n.Error))
				continue
			}
			tags := ""
			if len(n.Tags) > 0 {
				tags = "  #" + strings.Join(n.Tags, " #")
			}
			fmt.Fprintf(w, "%s  %-10s %-12s %s%s\n", n.Path, n.NoteType, n.Status, oneLine(n.Title), tags)
		}
		if len(m.Notes) == 0 {
			fmt.Fprintln(w, "no notes match")
		}
		if m.More {
			fmt.Fprintln(w, "(more match: narrow with --prefix, --type, --status or --tag)")
		}
	case *ipc.VaultChanges:
		for _, c := range m.Changes {
			v := c.Commit[:min(len(c.Commit), 12)]
			if v == "" {
				v = "(uncommitted)"
			}
			what := c.Op
			if what == "" {
				what = c.Subject
			}
			why := c.Reason
			if why == "" {
				why = c.Subject
			}
			fmt.Fprintf(w, "%-13s  %s  %-8s %-9s %s\n", v, c.When.Local().Format(time.DateTime), c.Author, what, oneLine(why))
		}
		if len(m.Changes) == 0 {
			fmt.Fprintln(w, "no changes")
		}
		if m.More {
			fmt.Fprintln(w, "(older changes left out: use -n)")
		}
	}
	return nil
}

// setVaultRef sets the ref of a mnemo memory request.
func setVaultRef(m ipc.Msg, ref string) {
	switch m := m.(type) {
	case *ipc.Proposals:
		m.Ref = ref
	case *ipc.ProposalDecide:
		m.Ref = ref
	case *ipc.VaultRead:
		m.Ref = ref
	case *ipc.VaultWrite:
		m.Ref = ref
	case *ipc.VaultList:
		m.Ref = ref
	case *ipc.VaultHistory:
		m.Ref = ref
	case *ipc.VaultPurge:
		m.Ref = ref
	case *ipc.VaultExport:
		m.Ref = ref
	}
}

// awaitVault waits for the answer with ref, as awaitRef does, knowing the
// vault's answers too.
func awaitVault(ctx context.Context, conn *ipc.Conn, ref string) (ipc.Msg, error) {
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return nil, fmt.Errorf("connection to hearth lost: %w", err)
		}
		r := refOf(m)
		switch m := m.(type) {
		case *ipc.VaultFile:
			r = m.Ref
		case *ipc.VaultNotes:
			r = m.Ref
		case *ipc.VaultChanges:
			r = m.Ref
		case *ipc.VaultPurged:
			r = m.Ref
		case *ipc.VaultExported:
			r = m.Ref
		}
		if r != ref {
			continue
		}
		if e, ok := m.(*ipc.Error); ok {
			return nil, e
		}
		return m, nil
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
