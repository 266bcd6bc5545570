package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// forgetUsage is mnemo forget's help.
const forgetUsage = `usage: mnemo forget [--purge] ID...
  Forget turns for good: they leave the conversation, search and every
  client's view; the journal keeps a tombstone. IDs are turn ids or search
  hit ids (mnemo search shows them).
  --purge   also erase the text of every forgotten turn from the journal on
            disk (not undoable); with no ID, purge what was forgotten before`

// forget asks hearth to forget the turns args name and says what it did.
func forget(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("forget", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, forgetUsage) }
	purge := fs.Bool("purge", false, "also erase the forgotten text from disk")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	ids := fs.Args()
	if len(ids) == 0 && !*purge {
		return usageError{errors.New(forgetUsage)}
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !hasFeature(conn.History(), "forget") {
		return errors.New("this hearth cannot forget turns: upgrade it")
	}
	ref := newRef()
	if err := conn.Send(&ipc.Forget{IDs: ids, Purge: *purge, Ref: ref}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	m, err := awaitRef(ctx, conn, ref)
	if err != nil {
		return err
	}
	f, ok := m.(*ipc.Forgotten)
	if !ok {
		return fmt.Errorf("hearth answered forget with %q", m.Type())
	}
	if len(f.IDs) > 0 {
		fmt.Fprintf(w, "forgot %d turn(s): %s\n", len(f.IDs), strings.Join(f.IDs, " "))
	}
	if len(f.Unknown) > 0 {
		fmt.Fprintf(w, "no turn has these ids (or they were forgotten already): %s\n", strings.Join(f.Unknown, " "))
	}
	if v := f.Vault; v != nil {
		fmt.Fprintf(w, "memory made from them: %d note(s) removed, %d kept out of context until rewritten without them, %d entity note(s) changed\n",
			len(v.Removed), len(v.Hidden), len(v.Entities))
	}
	switch {
	case f.Purged != nil:
		fmt.Fprintf(w, "purged: the text of %d turn(s) was erased from %d journal file(s)\n", f.Purged.Records, f.Purged.Shards)
		if len(f.GitKeeps) > 0 {
			fmt.Fprintf(w, "not erased: git history still holds earlier versions of %d vault file(s) made from forgotten turns:\n", len(f.GitKeeps))
			for _, p := range f.GitKeeps {
				fmt.Fprintf(w, "  %s\n", p)
			}
			fmt.Fprintln(w, "hearth does not rewrite history (nor can it reach clones, exports or backups); to erase them, rewrite the memory root's repository yourself, e.g. `git filter-repo --invert-paths --path FILE`, with hearth stopped")
		}
	case len(f.IDs) > 0:
		fmt.Fprintln(w, "their text stays in the journal on disk until `mnemo forget --purge`")
		if f.Vault != nil {
			fmt.Fprintln(w, "earlier versions of the memory made from them stay in the vault's git history")
		}
	}
	return nil
}

// search prints the hits of a memory search, each with the id that
// mnemo forget takes.
func search(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(w)
	k := fs.Int("k", 10, "how many hits")
	kinds := fs.String("kind", "", "only these kinds, comma-separated: turn, tool, knowledge")
	statuses := fs.String("status", "", "knowledge notes of these statuses, comma-separated (default active)")
	minConf := fs.Float64("min-confidence", 0, "only knowledge notes of at least this confidence (0..1)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return usagef(`search needs the query: mnemo search "garden plans"`)
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ref := newRef()
	req := &ipc.Search{Query: query, K: *k, Kinds: commaList(*kinds), Statuses: commaList(*statuses), MinConfidence: *minConf, Ref: ref}
	if err := conn.Send(req); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	m, err := awaitRef(ctx, conn, ref)
	if err != nil {
		return err
	}
	res, ok := m.(*ipc.SearchResults)
	if !ok {
		return fmt.Errorf("hearth answered search with %q", m.Type())
	}
	if len(res.Results) == 0 {
		fmt.Fprintln(w, "no memories match")
		return nil
	}
	for _, h := range res.Results {
		text := strings.Join(strings.Fields(h.Turn.Content), " ")
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		if h.Kind == ipc.KindKnowledge {
			// A note's section: its file and heading say where to read
			// or correct it.
			where := h.Path
			if h.Heading != "" {
				where += " § " + h.Heading
			}
			fmt.Fprintf(w, "%s  %s  note   %.2f  %s (%s, confidence %.2f): %s\n", h.Turn.ID, h.Turn.TS.Local().Format(time.DateTime), h.Score, where, h.Status, h.Confidence, text)
			continue
		}
		fmt.Fprintf(w, "%s  %s  %-5s  %.2f  %s\n", h.Turn.ID, h.Turn.TS.Local().Format(time.DateTime), h.Turn.Role, h.Score, text)
	}
	return nil
}

// commaList is a comma-separated flag's values, blanks dropped.
func commaList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// awaitRef returns hearth's answer to the request ref: the first message
// carrying it, an error about it returned as an error.
func awaitRef(ctx context.Context, conn *ipc.Conn, ref string) (ipc.Msg, error) {
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return nil, fmt.Errorf("connection to hearth lost: %w", err)
		}
		if refOf(m) != ref {
			continue
		}
		if e, ok := m.(*ipc.Error); ok {
			return nil, e
		}
		return m, nil
	}
}

// refOf is the ref an answer carries; "" for a message that has none.
func refOf(m ipc.Msg) string {
	switch m := m.(type) {
	case *ipc.Error:
		return m.Ref
	case *ipc.Forgotten:
		return m.Ref
	case *ipc.SearchResults:
		return m.Ref
	case *ipc.ProposalList:
		return m.Ref
	case *ipc.ProposalDecided:
		return m.Ref
	}
	return ""
}

func hasFeature(h *ipc.History, f string) bool {
	for _, x := range h.Features {
		if x == f {
			return true
		}
	}
	return false
}

func newRef() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
