package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// lockFile is the file, directly under the memory root, whose exclusive lock
// makes a process the root's one owner. It also records who that owner is.
const lockFile = "hearth.lock"

// maxHolderSize bounds how much of a lock file is read: a holder record is a
// short line, and anything longer is not one.
const maxHolderSize = 64 << 10

// Holder modes: who holds a memory root.
const (
	// ModeDaemon is hearth, the daemon.
	ModeDaemon = "daemon"
	// ModeLocal is a mnemo client running hearth in-process (mnemo --local).
	ModeLocal = "local"
)

// Holder describes who holds a memory root.
type Holder struct {
	PID   int       `json:"pid"`
	Mode  string    `json:"mode"`           // ModeDaemon or ModeLocal
	Addr  string    `json:"addr,omitempty"` // the daemon's listen address, when it has one
	Since time.Time `json:"since"`
}

// ErrRootHeld is matched by errors.Is for a root another process holds (or
// another RootLock of this process).
var ErrRootHeld = errors.New("memory root is in use")

// HeldError says who holds a memory root; errors.Is(err, ErrRootHeld) is
// true for it.
type HeldError struct {
	Dir    string // absolute path of the root
	Holder Holder // zero when the holder's record cannot be read
}

// Error names the holder, for instance "memory root /x is in use by hearth
// (pid 123, listening on 127.0.0.1:7744)".
func (e *HeldError) Error() string {
	h := e.Holder
	if h.PID <= 0 {
		return fmt.Sprintf("memory root %s is in use by another process (no readable holder record in %s)",
			e.Dir, filepath.Join(e.Dir, lockFile))
	}
	var who string
	switch h.Mode {
	case ModeDaemon:
		who = "hearth"
	case ModeLocal:
		who = "mnemo --local"
	case "":
		who = "another process"
	default:
		who = fmt.Sprintf("a %q process", h.Mode)
	}
	detail := []string{fmt.Sprintf("pid %d", h.PID)}
	if h.Addr != "" {
		detail = append(detail, "listening on "+h.Addr)
	}
	return fmt.Sprintf("memory root %s is in use by %s (%s)", e.Dir, who, strings.Join(detail, ", "))
}

// Is reports whether target is ErrRootHeld.
func (e *HeldError) Is(target error) bool { return target == ErrRootHeld }

// RootLock is the exclusive lock on a memory root, taken by LockRoot. Its
// methods are safe for concurrent use.
type RootLock struct {
	dir string

	mu     sync.Mutex
	f      *os.File // nil once closed
	holder Holder
}

// LockRoot takes the exclusive lock on the memory root dir, creating dir
// (mode 0700) if it is missing, and records h in the lock file hearth.lock
// (mode 0600); h.PID defaults to this process's and h.Since to now.
//
// The lock is an advisory flock(2) on the lock file, so the kernel drops it
// when the holder exits, however it exits, and a lock file left behind by a
// crash does not stand in the way. The lock belongs to the open file, not
// the process: a second LockRoot of the same root fails in the same process
// too. When the root is held, LockRoot returns a *HeldError naming the
// holder. As a ReadHolder elsewhere may hold the lock for an instant, LockRoot
// tries for about 30ms before it reports the root held.
func LockRoot(dir string, h Holder) (*RootLock, error) {
	if dir == "" {
		return nil, errors.New("memory root: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|openNoFollow, filePerm)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: open lock: %w", dir, err)
	}
	locked, err := lockExclusive(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("memory root %s: lock: %w", dir, err)
	}
	if !locked {
		defer f.Close()
		held, _ := readHolder(f) // unreadable: a zero Holder says so
		return nil, &HeldError{Dir: dir, Holder: held}
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Since.IsZero() {
		h.Since = time.Now()
	}
	h.Since = h.Since.Round(0) // no monotonic reading: h goes to disk
	l := &RootLock{dir: dir, f: f, holder: h}
	if err := l.fixMode(); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.write(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// SetAddr records addr, the address the holder listens on, in the lock file,
// for a process that learns it only after taking the lock (it binds the
// listener under the lock). It fails with fs.ErrClosed after Close.
func (l *RootLock) SetAddr(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("memory root %s: record address: %w", l.dir, fs.ErrClosed)
	}
	old := l.holder.Addr
	l.holder.Addr = addr
	if err := l.write(); err != nil {
		l.holder.Addr = old
		return err
	}
	return nil
}

// Close releases the lock. It empties the lock file first, so that the file
// a clean exit leaves names nobody, but never deletes it: a process that has
// just opened it would then lock a file no longer in the directory, while a
// third created a new one and locked that too. Closing a closed lock does
// nothing.
func (l *RootLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Empty the record while still holding the lock: done after unlocking,
	// it could erase the record of the next holder.
	errs := []error{f.Truncate(0), unlock(f), f.Close()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory root %s: unlock: %w", l.dir, err)
	}
	return nil
}

// ReadHolder reports who holds the memory root dir. ok is false when nobody
// does: the root or its lock file does not exist, or the lock is free, even
// if a holder that crashed left its record behind. When the root is held but
// the record cannot be read (the holder may be writing it), ok is true and
// the Holder is zero.
//
// ReadHolder neither creates nor writes anything, and never disturbs the
// holder: to tell a live holder from a stale record it tries a shared lock,
// which fails at once while the root is held and is otherwise dropped at
// once.
func ReadHolder(dir string) (Holder, bool, error) {
	if dir == "" {
		return Holder{}, false, errors.New("memory root: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Holder{}, false, fmt.Errorf("memory root %s: %w", dir, err)
	}
	dir = abs
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDONLY|openNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("memory root %s: open lock: %w", dir, err)
	}
	defer f.Close()
	free, err := tryLock(f, false)
	if err != nil {
		return Holder{}, false, fmt.Errorf("memory root %s: probe lock: %w", dir, err)
	}
	if free {
		if err := unlock(f); err != nil {
			return Holder{}, false, fmt.Errorf("memory root %s: probe lock: %w", dir, err)
		}
		return Holder{}, false, nil
	}
	h, err := readHolder(f)
	if err != nil {
		return Holder{}, true, nil
	}
	return h, true, nil
}

// fixMode makes the lock file 0600 if it was created otherwise (by hand, or
// under another umask). It runs under the lock.
func (l *RootLock) fixMode() error {
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("memory root %s: lock: %w", l.dir, err)
	}
	if st.Mode().Perm() == filePerm {
		return nil
	}
	if err := l.f.Chmod(filePerm); err != nil {
		return fmt.Errorf("memory root %s: lock: %w", l.dir, err)
	}
	return nil
}

// write replaces the record in the lock file with l.holder and syncs it. It
// runs under the lock, with l.mu held or before l is shared.
func (l *RootLock) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return fmt.Errorf("memory root %s: record holder: %w", l.dir, err)
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("memory root %s: record holder: %w", l.dir, err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("memory root %s: record holder: %w", l.dir, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("memory root %s: record holder: %w", l.dir, err)
	}
	return nil
}

// lockTries and lockFirstWait bound how LockRoot waits out a ReadHolder: its
// shared lock lasts from one system call to the next, but a LockRoot that
// meets it cannot tell it from a holder's. Waits double from lockFirstWait,
// so a root that is really held is reported after about 30ms.
const (
	lockTries     = 6
	lockFirstWait = time.Millisecond
)

// lockExclusive takes the exclusive lock on f without blocking on a holder.
// locked is false when another open file holds the lock.
func lockExclusive(f *os.File) (locked bool, err error) {
	wait := lockFirstWait
	for try := 1; ; try++ {
		locked, err := tryLock(f, true)
		if err != nil || locked || try == lockTries {
			return locked, err
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// readHolder reads the record in the lock file f from its start.
func readHolder(f *os.File) (Holder, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxHolderSize))
	if err != nil {
		return Holder{}, fmt.Errorf("read holder: %w", err)
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("read holder: %w", err)
	}
	if h.PID <= 0 {
		return Holder{}, fmt.Errorf("read holder: no pid in %q", b)
	}
	return h, nil
}
