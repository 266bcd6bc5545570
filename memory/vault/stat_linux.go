package vault

import (
	"io/fs"
	"syscall"
)

// sysKey is a file's inode and status-change time (ns), which any write,
// rename over or chmod changes, even one that puts mtime back.
func sysKey(fi fs.FileInfo) (ino, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return int64(st.Ino), st.Ctim.Nano()
}
