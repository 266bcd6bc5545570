// Package data holds the defaults that are copied into a new memory root:
// the companion's instruction file (AGENT.md) and the continuity anchor
// template (continuity.json).
//
// The defaults are only a starting point. Once copied, the files belong to
// the user and are never overwritten; see memory.Open.
package data

import (
	"embed"
	"io/fs"
)

//go:embed AGENT.md continuity.json
var defaults embed.FS

// Defaults returns the default files of a memory root, with paths relative
// to the root (for example "AGENT.md").
func Defaults() fs.FS {
	return defaults
}
