package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// stopUsage is mnemo stop's help.
const stopUsage = `usage: mnemo stop [-wait D]
  Ask hearth to shut down gracefully (the owner only): it finishes the
  reply in flight, tells its clients and flushes the journal. mnemo stop
  returns once hearth has closed the connection, or fails after D (30s).`

// stopHearth asks hearth to shut down and waits until it has closed the
// connection, which it does once its core has stopped.
func stopHearth(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, stopUsage) }
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for hearth to stop")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{errors.New(stopUsage)}
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ref := newRef()
	if err := conn.Send(&ipc.Shutdown{Ref: ref}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	said := false
	for {
		m, err := conn.Recv(ctx)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("hearth has not stopped after %s; it may be finishing a reply (its log says)", *wait)
		case err != nil:
			// hearth closed the connection: its core has stopped.
			fmt.Fprintln(w, "hearth stopped")
			return nil
		}
		e, ok := m.(*ipc.Error)
		if !ok {
			continue
		}
		switch {
		case e.Code == ipc.CodeShuttingDown:
			if !said {
				fmt.Fprintln(w, "hearth is stopping")
				said = true
			}
		case e.Code == ipc.CodeUnknownType:
			return errors.New("this hearth cannot be stopped by a client: upgrade it, or run `hearth stop` on its machine")
		case e.Ref == ref:
			return e
		}
	}
}
