//go:build !linux

package vault

import "os"

// statAt stats full; off Linux, size, mtime and mode say a file is
// unchanged.
func statAt(_ *os.File, full, _ string) (statKey, error) {
	fi, err := os.Lstat(full)
	if err != nil {
		return statKey{}, err
	}
	return statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}, nil
}
