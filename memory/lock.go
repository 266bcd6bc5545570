package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile is the file in a memory root whose lock marks its one owner.
const LockFile = "hearth.lock"

// Modes of a Holder.
const (
	HolderDaemon = "daemon" // hearth
	HolderLocal  = "local"  // mnemo --local
)

// Holder describes the process that owns a memory root.
type Holder struct {
	PID   int       `json:"pid"`
	Mode  string    `json:"mode"`           // HolderDaemon or HolderLocal
	Addr  string    `json:"addr,omitempty"` // where a daemon listens
	Since time.Time `json:"since"`
}

// ErrRootHeld is matched (errors.Is) by the error of LockRoot on a root
// another process owns.
var ErrRootHeld = errors.New("memory root is in use")

// HeldError says who owns a memory root that could not be locked.
type HeldError struct {
	Dir    string
	Holder Holder // zero when the owner's record could not be read
}

func (e *HeldError) Error() string {
	h := e.Holder
	switch {
	case h.PID == 0:
		return fmt.Sprintf("memory root %s is in use by another process", e.Dir)
	case h.Mode == HolderLocal:
		return fmt.Sprintf("memory root %s is in use by mnemo --local (pid %d)", e.Dir, h.PID)
	case h.Addr != "":
		return fmt.Sprintf("memory root %s is in use by hearth (pid %d, listening on %s)", e.Dir, h.PID, h.Addr)
	}
	return fmt.Sprintf("memory root %s is in use by hearth (pid %d)", e.Dir, h.PID)
}

// Is makes errors.Is(err, ErrRootHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrRootHeld }

// RootLock is the exclusive lock on a memory root: one process owns a
// root, so that the journal and the index have one writer. The lock is
// the kernel's (flock), so it ends with its process, kill -9 included.
type RootLock struct {
	f      *os.File
	holder Holder
}

// LockRoot takes the lock of the memory root dir (creating dir, 0700, if
// needed) and records h in it: PID defaults to this process, Since to
// now. When another process holds it, the error is a *HeldError naming
// that process.
func LockRoot(dir string, h Holder) (*RootLock, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("memory root %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("memory root %s: lock: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			held := &HeldError{Dir: dir}
			held.Holder, _ = readHolder(f)
			return nil, held
		}
		return nil, fmt.Errorf("memory root %s: lock: %w", dir, err)
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Since.IsZero() {
		h.Since = time.Now().UTC()
	}
	l := &RootLock{f: f, holder: h}
	if err := l.write(); err != nil {
		l.Close()
		return nil, fmt.Errorf("memory root %s: lock: %w", dir, err)
	}
	return l, nil
}

// SetAddr records where the owner listens, once it knows.
func (l *RootLock) SetAddr(addr string) error {
	l.holder.Addr = addr
	return l.write()
}

// write replaces the lock file's record with l's holder, fsync'd.
func (l *RootLock) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return err
	}
	return l.f.Sync()
}

// Close releases the lock. The file stays: removing it would race with
// the next owner taking it.
func (l *RootLock) Close() error {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return l.f.Close()
}

// ReadHolder reports who owns the memory root dir; ok is false when nobody
// does (no lock file, or a lock file whose owner has gone).
func ReadHolder(dir string) (h Holder, ok bool, err error) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, os.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, err
	}
	defer f.Close()
	// A shared lock is granted only while no one holds the exclusive one.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return Holder{}, false, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		return Holder{}, false, err
	}
	h, err = readHolder(f)
	return h, true, err
}

func readHolder(f *os.File) (Holder, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 64<<10))
	if err != nil {
		return Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("lock record: %w", err)
	}
	return h, nil
}
