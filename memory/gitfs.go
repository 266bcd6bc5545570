package memory

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
)

// privateFS is the file system go-git writes the root's repository through.
// go-git's own (osfs) creates directories 0755 and files 0666 less the
// umask, so that .git would be readable by others — and writable by them
// under umask 0. privateFS creates every directory 0700 and every file with
// its owner's permission bits only (0600; git objects, which go-git makes
// read-only, 0400), whatever the umask. It changes nothing that exists.
//
// In the repository's folder (.git), privateFS also writes the index
// whole or not at all: beside it, fsync'd, renamed over it, the folder
// fsync'd (see replacingFile). go-git truncates the index and writes it
// in place, so that a kill meanwhile left a torn index that every later
// commit refused.
type privateFS struct {
	billy.Filesystem
	dotGit bool // the file system is the repository's folder
}

// newPrivateFS is osfs.New(dir) creating what is new private to the owner.
func newPrivateFS(dir string) privateFS {
	return privateFS{Filesystem: osfs.New(dir)}
}

// ownerOnly keeps the owner's permission bits of perm.
func ownerOnly(perm os.FileMode) os.FileMode { return perm &^ 0o077 }

// mkdirs creates dir, relative to the file system's root, and its missing
// parents, each 0700, before osfs would create them 0755. A path that
// leaves the root is left to the wrapped file system, which refuses it.
func (p privateFS) mkdirs(dir string) error {
	rel := filepath.Clean(filepath.FromSlash(dir))
	if rel == "." || rel == string(filepath.Separator) {
		return nil
	}
	if filepath.IsAbs(rel) {
		rel = rel[1:] // as osfs's chroot reads it: below the root
	}
	if !filepath.IsLocal(rel) {
		return nil
	}
	return os.MkdirAll(filepath.Join(p.Root(), rel), dirPerm)
}

func (p privateFS) Create(name string) (billy.File, error) {
	return p.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, filePerm)
}

func (p privateFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if p.dotGit && flag&(os.O_CREATE|os.O_TRUNC) == os.O_CREATE|os.O_TRUNC && filepath.Clean(filepath.FromSlash(name)) == "index" {
		return newReplacingFile(filepath.Join(p.Root(), "index"))
	}
	if flag&os.O_CREATE != 0 {
		if err := p.mkdirs(filepath.Dir(name)); err != nil {
			return nil, err
		}
	}
	return p.Filesystem.OpenFile(name, flag, ownerOnly(perm))
}

func (p privateFS) MkdirAll(name string, perm os.FileMode) error {
	if err := p.mkdirs(name); err != nil {
		return err
	}
	return p.Filesystem.MkdirAll(name, ownerOnly(perm))
}

func (p privateFS) Rename(from, to string) error {
	if err := p.mkdirs(filepath.Dir(to)); err != nil {
		return err
	}
	return p.Filesystem.Rename(from, to)
}

// TempFile creates the file 0600, as os.CreateTemp does.
func (p privateFS) TempFile(dir, prefix string) (billy.File, error) {
	if err := p.mkdirs(dir); err != nil {
		return nil, err
	}
	return p.Filesystem.TempFile(dir, prefix)
}

func (p privateFS) Symlink(target, link string) error {
	if err := p.mkdirs(filepath.Dir(link)); err != nil {
		return err
	}
	return p.Filesystem.Symlink(target, link)
}

// Chmod is how go-git makes objects read-only (0444): here 0400.
func (p privateFS) Chmod(name string, mode os.FileMode) error {
	c, ok := p.Filesystem.(billy.Chmod)
	if !ok {
		return &os.PathError{Op: "chmod", Path: name, Err: errors.ErrUnsupported}
	}
	return c.Chmod(name, ownerOnly(mode))
}

func (p privateFS) Chroot(dir string) (billy.Filesystem, error) {
	fs, err := p.Filesystem.Chroot(dir)
	if err != nil {
		return nil, err
	}
	return privateFS{Filesystem: fs, dotGit: filepath.Clean(filepath.FromSlash(dir)) == git.GitDirName}, nil
}

func (p privateFS) Capabilities() billy.Capability {
	return billy.Capabilities(p.Filesystem)
}

// replacingFile is a file written beside its name (a temporary file in
// its folder, 0600) and put in its place on Close: fsync'd, renamed over
// the name, the folder fsync'd. A crash leaves the old file or the new,
// never a torn one; one that fails to close leaves the old.
type replacingFile struct {
	*os.File
	name   string
	closed bool
}

func newReplacingFile(name string) (*replacingFile, error) {
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &replacingFile{File: f, name: name}, nil
}

// Name is the name the file takes on Close.
func (f *replacingFile) Name() string { return f.name }

func (f *replacingFile) Close() error {
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	tmp := f.File.Name()
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(f.name))
}

// Lock and Unlock are billy.File's; nothing locks the files replaced.
func (f *replacingFile) Lock() error   { return nil }
func (f *replacingFile) Unlock() error { return nil }

// syncDir makes the entries of the folder dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
