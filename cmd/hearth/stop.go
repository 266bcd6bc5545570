package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
)

// stopHearth asks the hearth that holds root to stop (SIGTERM: it finishes
// the reply in flight, tells its clients and flushes the journal) and waits
// until it has let go of the root. Only the process holding root's lock is
// signalled, so a hearth serving another root is never touched. A root
// nobody holds is not an error: there is nothing to stop.
func stopHearth(ctx context.Context, root string, wait time.Duration, out io.Writer) error {
	h, held, err := memory.ReadHolder(root)
	if err != nil {
		return err
	}
	if !held {
		fmt.Fprintf(out, "no hearth is running on %s\n", root)
		return nil
	}
	switch {
	case h.PID <= 0:
		return fmt.Errorf("%s is held by a process whose record cannot be read; try again", root)
	case h.Mode == memory.ModeLocal:
		return fmt.Errorf("%s is held by mnemo --local (pid %d), not by a hearth; quit that client", root, h.PID)
	}
	p, err := os.FindProcess(h.PID)
	if err != nil {
		return fmt.Errorf("hearth pid %d: %w", h.PID, err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal hearth pid %d: %w", h.PID, err)
	}
	fmt.Fprintf(out, "stopping hearth (pid %d) on %s\n", h.PID, root)

	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// Another process's exit cannot be waited for; its lock's release
	// can be seen, soon after it happens.
	pace := backoff.Policy{Initial: 20 * time.Millisecond, Multiplier: 1.5, Max: 500 * time.Millisecond}
	for attempt := 1; ; attempt++ {
		now, held, err := memory.ReadHolder(root)
		if err != nil {
			return err
		}
		if !held || now.PID != h.PID {
			fmt.Fprintln(out, "hearth stopped")
			return nil
		}
		if !backoff.Sleep(ctx, pace.Delay(attempt)) {
			return fmt.Errorf("hearth (pid %d) has not stopped after %s; it may be finishing a reply (its log says)", h.PID, wait)
		}
	}
}
