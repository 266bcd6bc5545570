package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mnemo/mnemo/ipc"
)

// conversationsUsage is mnemo conversations' help.
const conversationsUsage = `usage: mnemo conversations [--json]
  List the conversations, the most recently active first: id, title (the
  first message), turns, last activity. mnemo history --conversation ID
  prints one; in the UI, /resume ID switches to it.`

// conversationsCmd lists the conversations.
func conversationsCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("conversations", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, conversationsUsage) }
	asJSON := fs.Bool("json", false, "one conversation per line as JSON, the wire's object")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{errors.New(conversationsUsage)}
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !conn.History().HasFeature("conversations") && conn.History().Features != nil {
		return errors.New("this hearth has one conversation only: upgrade it")
	}
	ref := newRef()
	return request(ctx, conn, &ipc.Conversations{Ref: ref}, ref, "this hearth has one conversation only: upgrade it", func(m ipc.Msg) (bool, error) {
		l, ok := m.(*ipc.ConversationList)
		if !ok || l.Ref != ref {
			return false, nil
		}
		if !*asJSON {
			printConversations(w, l.Conversations)
			return true, nil
		}
		for _, c := range l.Conversations {
			b, err := json.Marshal(c)
			if err != nil {
				return true, err
			}
			fmt.Fprintf(w, "%s\n", b)
		}
		return true, nil
	})
}

func printConversations(w io.Writer, cs []ipc.ConversationInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTURNS\tLAST ACTIVE\tTITLE")
	for _, c := range cs {
		when := "-"
		if !c.LastActive.IsZero() {
			when = c.LastActive.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c.ID, c.Turns, when, c.Title)
	}
	tw.Flush()
}
