// Package archive exports a memory root to one .tar.gz in open formats and
// imports it into a new root.
//
// An archive holds, in this order:
//
//	README.md       what every folder is, and how to restore by hand
//	root/...        every file of the memory root as it is, but .git, index/
//	                (derived) and hearth.lock (who runs)
//	history.bundle  the root's git history: a git bundle (v2), which
//	                `git clone` and `git fetch` read
//	manifest.json   every file of root/ with its size and SHA-256, and the
//	                branch HEAD names
//
// Nothing in it needs mnemo to be read: tar, gzip, git and a text editor do.
package archive

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/mnemo/mnemo/memory"
)

// Names of the archive's entries.
const (
	readmeName   = "README.md"
	bundleName   = "history.bundle"
	manifestName = "manifest.json"
	rootPrefix   = "root/"

	// Format names the archive's format in its manifest.
	Format = "mnemo-export"
	// Version is the version of the format this package writes.
	Version = 1

	dirPerm  = 0o700
	filePerm = 0o600

	lockFile = "hearth.lock"
	indexDir = "index"
	gitDir   = ".git"
)

// Options tune Export and Import. The zero value is ready.
type Options struct {
	Log *slog.Logger     // nil: discard
	Now func() time.Time // nil: time.Now
	// OpenRepository opens the root's repository for the export's
	// history (nil: memory.OpenRepository). The vault passes its own
	// (vault.OpenRepository), whose reads look in the packs again when
	// a pack or merge the keeper made meanwhile moved an object.
	OpenRepository func(dir string) (*git.Repository, error)
}

func (o Options) openRepository(dir string) (*git.Repository, error) {
	if o.OpenRepository == nil {
		return memory.OpenRepository(dir)
	}
	return o.OpenRepository(dir)
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Report says what Export or Import did.
type Report struct {
	Files int   // files of the root written
	Bytes int64 // their bytes
	Refs  int   // git references in the history
	Head  string
	// Notes are what Export left out or cut, each with why (a symbolic
	// link, a journal line still being written).
	Notes []string
	// Gaps are what Import could not restore, or found damaged; the rest
	// is restored all the same.
	Gaps []string
}

// Manifest is manifest.json.
type Manifest struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	Head    string    `json:"head,omitempty"` // the branch HEAD names, e.g. refs/heads/master
	Files   []File    `json:"files"`
	Notes   []string  `json:"notes,omitempty"`
}

// File is one file of the root in the manifest.
type File struct {
	Path   string `json:"path"` // slash-separated, relative to the root
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ErrNotEmpty is returned by Import for a root that already holds files.
var ErrNotEmpty = errors.New("memory root is not empty")

// ErrUnsafePath is wrapped by the error for an archive entry whose name
// would leave the root, or name what an archive may not write.
var ErrUnsafePath = errors.New("unsafe path in archive")

// entry kinds
const (
	kindReadme = iota + 1
	kindManifest
	kindBundle
	kindRoot // a file or directory of the root; rel is its path
)

// classify checks an archive entry's name and says what it is. For a root
// entry rel is its path relative to the root (slash-separated, clean,
// local). It refuses absolute paths, "..", empty or "." elements,
// backslashes and NULs, and any ".git" element (a restored root's
// repository comes from the bundle only: a .git/config or hook from an
// archive could run code) as well as hearth.lock.
func classify(name string) (kind int, rel string, err error) {
	unsafe := func(why string) (int, string, error) {
		return 0, "", fmt.Errorf("%w: %q: %s", ErrUnsafePath, name, why)
	}
	if strings.ContainsAny(name, "\\\x00") {
		return unsafe("backslash or NUL")
	}
	n := strings.TrimSuffix(name, "/")
	if !isLocal(n) {
		return unsafe("not a plain relative path")
	}
	switch n {
	case readmeName:
		return kindReadme, "", nil
	case manifestName:
		return kindManifest, "", nil
	case bundleName:
		return kindBundle, "", nil
	case strings.TrimSuffix(rootPrefix, "/"):
		return kindRoot, ".", nil
	}
	rel, ok := strings.CutPrefix(n, rootPrefix)
	if !ok {
		return unsafe("not under " + rootPrefix)
	}
	for _, el := range strings.Split(rel, "/") {
		if strings.EqualFold(el, gitDir) {
			return unsafe("names git's own directory")
		}
	}
	if rel == lockFile {
		return unsafe("names the root's lock file")
	}
	return kindRoot, rel, nil
}

// isLocal reports whether p is a clean, relative, slash-separated path with
// no "..", "." or empty element.
func isLocal(p string) bool {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// excluded reports whether Export leaves the root's path rel out.
func excluded(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return top == gitDir || top == indexDir || rel == lockFile ||
		rel == ExportsDir || strings.HasPrefix(rel, ExportsDir+"/")
}

// isShard reports whether rel is a journal shard, which only grows.
func isShard(rel string) bool {
	dir, file := path.Split(rel)
	return dir == "threads/" && strings.HasSuffix(file, ".jsonl")
}
