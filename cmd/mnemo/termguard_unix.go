//go:build unix

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// guardTerminal keeps what libraries print on their own off the UI. The
// UI draws on the terminal through a duplicate of standard output (term);
// file descriptors 1 and 2 then point at the file stray, so that a line a
// library prints (the PulseAudio client prints a server message it does
// not know to standard output; ALSA, under PortAudio, writes to standard
// error) lands there instead of across the screen, and so does a crash's
// stack trace, written as the process dies. restore points 1 and 2 back
// at the terminal and says how many bytes went astray. When standard
// output is not a terminal (isTerminal), there is no screen to guard: term
// is os.Stdout and nothing moves.
func guardTerminal(stray string, isTerminal func(fd int) bool) (term *os.File, restore func() (int64, error), err error) {
	if !isTerminal(1) {
		return os.Stdout, func() (int64, error) { return 0, nil }, nil
	}
	f, err := os.OpenFile(stray, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", stray, err)
	}
	defer f.Close()
	saved := [2]int{-1, -1}
	undo := func() error {
		var first error
		for i, fd := range saved {
			if fd < 0 {
				continue
			}
			if err := unix.Dup2(fd, i+1); err != nil && first == nil {
				first = fmt.Errorf("restore fd %d: %w", i+1, err)
			}
			unix.Close(fd)
			saved[i] = -1
		}
		return first
	}
	for i := range saved {
		fd, err := unix.FcntlInt(uintptr(i+1), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			undo()
			return nil, nil, fmt.Errorf("keep fd %d: %w", i+1, err)
		}
		saved[i] = fd
	}
	termFd, err := unix.FcntlInt(uintptr(saved[0]), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		undo()
		return nil, nil, fmt.Errorf("duplicate the terminal: %w", err)
	}
	term = os.NewFile(uintptr(termFd), "/dev/stdout")
	for i := range saved {
		if err := unix.Dup2(int(f.Fd()), i+1); err != nil {
			term.Close()
			undo()
			return nil, nil, fmt.Errorf("redirect fd %d: %w", i+1, err)
		}
	}
	restore = func() (int64, error) {
		err := undo()
		term.Close()
		st, serr := os.Stat(stray)
		if serr != nil {
			return 0, err
		}
		return st.Size(), err
	}
	return term, restore, nil
}
