// Package data holds the defaults that are copied into a new memory root:
// the companion's instruction file (AGENT.md) and the continuity anchor
// template (continuity.json), and the vault's defaults (the invariants, the
// memory policy, prompts; see Vault).
//
// The defaults are only a starting point. Once copied, the files belong to
// the user and are never overwritten; see memory.Open and vault.Ensure.
package data

import (
	"embed"
	"io/fs"
)

//go:embed AGENT.md continuity.json
var defaults embed.FS

//go:embed all:vault
var vault embed.FS

// Defaults returns the default files of a memory root, with paths relative
// to the root (for example "AGENT.md").
func Defaults() fs.FS {
	return defaults
}

// Vault returns the default files of the vault, with paths relative to the
// memory root (for example "config/memory.policy.yml").
func Vault() fs.FS {
	sub, err := fs.Sub(vault, "vault")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return sub
}
