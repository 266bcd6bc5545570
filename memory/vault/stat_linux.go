package vault

import (
	"os"

	"golang.org/x/sys/unix"
)

// statAt stats the entry name of the open directory dir (full is its
// path): size, mtime, inode and status-change time, which any write,
// rename over or chmod changes, even one that puts mtime back.
func statAt(dir *os.File, full, name string) (statKey, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return statKey{}, &os.PathError{Op: "fstatat", Path: full, Err: err}
	}
	return statKey{size: st.Size, mtime: st.Mtim.Nano(), ino: int64(st.Ino), ctime: st.Ctim.Nano(), mode: st.Mode}, nil
}
