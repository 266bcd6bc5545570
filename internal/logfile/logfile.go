// Package logfile is a log file that rotates by size: when a write would
// take it past its limit it is renamed to PATH.1 (the older ones shifting
// to PATH.2 ... PATH.N, the oldest dropped), optionally gzip'd, and a new
// PATH begins. Files and the directory it creates are the owner's alone.
//
// It also has Redact, a slog ReplaceAttr that hides e-mail addresses and
// token-looking strings in what is logged.
package logfile

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Defaults for Options left zero.
const (
	DefaultMaxBytes = 10 << 20
	DefaultBackups  = 5
)

// Options bound a File's size on disk.
type Options struct {
	// MaxBytes is the size at which the file rotates; 0 means
	// DefaultMaxBytes. A single write larger than it goes whole into a
	// file of its own.
	MaxBytes int64
	// Backups is how many rotated files are kept; 0 means
	// DefaultBackups, negative none.
	Backups int
	// Compress gzips rotated files (PATH.1.gz ...).
	Compress bool
}

// File is an append-only log file that rotates by size. It is safe for
// concurrent use.
type File struct {
	path string
	o    Options

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating it 0600, and its directory 0700) the log file at
// path for appending. An existing file keeps its content and is made
// 0600.
func Open(path string, o Options) (*File, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Backups == 0 {
		o.Backups = DefaultBackups
	}
	l := &File{path: path, o: o}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past
// MaxBytes. When rotating fails the file goes on growing, and the error
// is returned once.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	var rerr error
	if l.size > 0 && l.size+int64(len(p)) > l.o.MaxBytes {
		rerr = l.rotate()
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err == nil && rerr != nil {
		err = rerr
	}
	return n, err
}

// rotate moves PATH to PATH.1 (shifting the backups) and opens a new
// PATH. On failure the current file stays open.
func (l *File) rotate() error {
	if l.o.Backups < 0 {
		if err := l.f.Truncate(0); err != nil {
			return fmt.Errorf("log file: rotate: %w", err)
		}
		l.size = 0
		return nil
	}
	ext := ""
	if l.o.Compress {
		ext = ".gz"
	}
	name := func(i int) string { return l.path + "." + strconv.Itoa(i) + ext }
	if err := os.Remove(name(l.o.Backups)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("log file: rotate: %w", err)
	}
	for i := l.o.Backups - 1; i >= 1; i-- {
		if err := os.Rename(name(i), name(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log file: rotate: %w", err)
		}
	}
	first := l.path + ".1"
	if err := os.Rename(l.path, first); err != nil {
		return fmt.Errorf("log file: rotate: %w", err)
	}
	old := l.f
	if err := l.open(); err != nil {
		// Keep writing where we were: the renamed file.
		return err
	}
	old.Close()
	if l.o.Compress {
		if err := compress(first); err != nil {
			return fmt.Errorf("log file: rotate: %w", err)
		}
	}
	return nil
}

// compress replaces path by path.gz.
func compress(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path+".gz"); err != nil {
		return err
	}
	return os.Remove(path)
}

// Close closes the file; later writes fail with os.ErrClosed.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
