package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Manifests: the owner's word on MCP tools (seed 003 §6.1). A file
// tools/<anything>.tool.json in the memory root describes one tool by the
// name it is offered under:
//
//	{"name": "files__write_file", "side_effects": "writes_local", "permission": "safe"}
//
// "side_effects" (read_only, writes_local, writes_external, irreversible)
// and "permission" (safe, confirm, admin) replace what the tool's
// annotations and its gateway entry give; "description" replaces the
// server's; "disabled": true leaves the tool out. A field left out keeps
// what the tool had. Other keys are refused: a manifest that says what the
// registry would ignore is a mistake to report, not to guess at.
//
// Built-in tools keep their own classes: a manifest naming one is refused.
// An invalid manifest (not JSON, an unknown key or value, an invalid name,
// a name another manifest already took, a file over 64 KiB) is reported
// with its file name and left out; the others apply. Manifests are read
// on every List and Call, like gateway.json.

// ManifestSuffix ends the name of every manifest file.
const ManifestSuffix = ".tool.json"

// maxManifestBytes bounds one manifest file.
const maxManifestBytes = 64 << 10

// Manifest is one tools/*.tool.json file.
type Manifest struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	SideEffects Effect     `json:"side_effects,omitempty"`
	Permission  Permission `json:"permission,omitempty"`
	Disabled    bool       `json:"disabled,omitempty"`
}

// ManifestError is a manifest left out, and why.
type ManifestError struct {
	File string // the file as the owner knows it, e.g. tools/x.tool.json
	Err  error
}

func (e *ManifestError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

// ParseManifest decodes and checks one manifest: one JSON object, known
// keys only, a valid tool name, known side effects and permission, and
// something to set.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if len(b) > maxManifestBytes {
		return m, fmt.Errorf("larger than %d KiB", maxManifestBytes>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("not a manifest: %w (a manifest is one JSON object with name, and side_effects, permission, description or disabled)", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Manifest{}, errors.New("more than one JSON value: a manifest is one object")
	}
	m.Description = strings.TrimSpace(m.Description)
	switch {
	case m.Name == "":
		return Manifest{}, errors.New(`"name" is missing: name the tool as it is offered, e.g. files__write_file`)
	case !validName(m.Name):
		return Manifest{}, fmt.Errorf("name %q: a tool name is 1 to 64 bytes of a-z, A-Z, 0-9, _ and -", m.Name)
	case m.SideEffects != "" && !slices.Contains([]Effect{ReadOnly, WritesLocal, WritesExternal, Irreversible}, m.SideEffects):
		return Manifest{}, fmt.Errorf("side_effects %q: want read_only, writes_local, writes_external or irreversible", m.SideEffects)
	case m.Permission != "" && !slices.Contains([]Permission{Safe, Confirm, Admin}, m.Permission):
		return Manifest{}, fmt.Errorf("permission %q: want safe, confirm or admin", m.Permission)
	case m.SideEffects == "" && m.Permission == "" && m.Description == "" && !m.Disabled:
		return Manifest{}, errors.New("sets nothing: give side_effects, permission, description or disabled")
	}
	return m, nil
}

// readManifests reads every *.tool.json in dir, in name order. "" or a
// missing directory is no manifests. Each one left out is an error; a
// manifest naming a built-in (builtin reports which) too.
func readManifests(dir string, builtin func(string) bool) (map[string]Manifest, []error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	shown := filepath.Base(dir)
	if err != nil {
		return nil, []error{&ManifestError{File: shown, Err: fmt.Errorf("cannot read the manifest directory: %w", err)}}
	}
	out := map[string]Manifest{}
	from := map[string]string{}
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ManifestSuffix) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.ToSlash(filepath.Join(shown, e.Name()))
		fail := func(err error) { errs = append(errs, &ManifestError{File: file, Err: err}) }
		if !e.Type().IsRegular() {
			fail(errors.New("not a regular file"))
			continue
		}
		b, err := readBounded(filepath.Join(dir, e.Name()), maxManifestBytes)
		if err != nil {
			fail(err)
			continue
		}
		m, err := ParseManifest(b)
		switch {
		case err != nil:
			fail(err)
		case builtin(m.Name):
			fail(fmt.Errorf("%s is a built-in tool: built-ins keep their own side effects and permission", m.Name))
		case from[m.Name] != "":
			fail(fmt.Errorf("%s is described already by %s", m.Name, from[m.Name]))
		default:
			out[m.Name], from[m.Name] = m, file
		}
	}
	return out, errs
}

// readBounded reads a file of at most n bytes.
func readBounded(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("larger than %d KiB", n>>10)
	}
	return b, nil
}

// apply gives sp what its manifest says; false when it disables the tool.
func (m Manifest) apply(sp *Spec) bool {
	if m.Disabled {
		return false
	}
	if m.SideEffects != "" && m.SideEffects != sp.Effect {
		// Reading twice changes nothing; otherwise the annotations'
		// idempotence described another tool than the owner's.
		sp.Effect, sp.Idempotent = m.SideEffects, m.SideEffects == ReadOnly
	}
	if m.Permission != "" {
		sp.Permission = m.Permission
	}
	if m.Description != "" {
		sp.Description = cut(m.Description, maxDescription)
	}
	return true
}
