package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// PreferencesFile, in the memory root, holds the owner's preferences:
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5",
//	 "context": {"budget_tokens": 24000, "shares": {"recent": 75, "knowledge": 10, "memories": 5, "tools": 10}}}
//
// Every field is optional. provider and model override the configured
// ones (Config.ModelSettings); context overrides the base context budget
// (Config.Budget), an omitted field keeping its base value. It is checked
// before every turn, so an edit applies to the next message with no
// restart. Keys stay in the environment.
const PreferencesFile = "preferences.json"

// Preferences is a valid PreferencesFile.
type Preferences struct {
	Provider string // "" or a supported provider, lower case
	Model    string // "" or a model name
	// Context is the base budget with the file's "context" object over
	// it, validated; nil when the file has none.
	Context *hearth.ContextBudget
}

// Change is what a PrefsWatcher.Current call found.
type Change struct {
	// Updated is set when the file changed (or was first read) and its
	// new content became the current preferences.
	Updated bool
	// Err is set when the file changed and its new content is invalid
	// (or cannot be read): the previous preferences stay current. It is
	// reported once per change, for the caller to tell the owner once.
	Err error
}

// PrefsOptions configure a PrefsWatcher.
type PrefsOptions struct {
	// ReadFile reads a file of the memory root (memory.Root.ReadFile).
	ReadFile func(name string) ([]byte, error)
	// Stat, when set, is how an unchanged file is told apart without
	// reading it: its size and modification time. nil means the file is
	// read on every check and compared with the last content read (it is
	// still parsed only when it changed).
	Stat func(name string) (fs.FileInfo, error)
	// Base is the budget Context overrides; zero means
	// hearth.DefaultContextBudget.
	Base hearth.ContextBudget
	// Now is the clock Stat's times are compared with; nil means
	// time.Now.
	Now func() time.Time
}

// racyWindow is the coarsest modification-time granularity of common file
// systems: a file modified within it of when it was last read may have
// changed again with the same size and time, so it is read again (and
// compared, not parsed) until it is older.
const racyWindow = 2 * time.Second

// PrefsWatcher keeps the owner's preferences as validated snapshots: a
// change to PreferencesFile is parsed once, and an invalid one leaves the
// last good snapshot in place. It is safe for concurrent use.
type PrefsWatcher struct {
	o PrefsOptions

	mu      sync.Mutex
	current Preferences
	read    bool      // seen and stamp hold a read
	seen    [32]byte  // hash of the last content read (or of its error)
	stamp   fileStamp // Stat's at that read
	readAt  time.Time // when that read was
}

// fileStamp is what Stat says of a file; ok is false when Stat failed for
// another reason than a missing file.
type fileStamp struct {
	ok, exists bool
	size       int64
	mtime      time.Time
}

// NewPrefsWatcher watches PreferencesFile through o.
func NewPrefsWatcher(o PrefsOptions) *PrefsWatcher {
	if o.Base == (hearth.ContextBudget{}) {
		o.Base = hearth.DefaultContextBudget()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &PrefsWatcher{o: o}
}

// Current returns the current preferences, having checked the file: when
// it changed, its new content becomes current if valid, and Change says
// which. A missing file is no preference.
func (w *PrefsWatcher) Current() (Preferences, Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stamp fileStamp
	if w.o.Stat != nil {
		stamp = stampOf(w.o.Stat(PreferencesFile))
		if w.read && stamp.ok && stamp == w.stamp && w.settled(stamp) {
			return w.snapshot(), Change{}
		}
	}
	now := w.o.Now()
	data, err := w.o.ReadFile(PreferencesFile)
	sum := contentHash(data, err)
	if w.read && sum == w.seen {
		w.stamp, w.readAt = stamp, now
		return w.snapshot(), Change{}
	}
	w.read, w.seen, w.stamp, w.readAt = true, sum, stamp, now
	p, err := w.parse(data, err)
	if err != nil {
		return w.snapshot(), Change{Err: fmt.Errorf("%s: %w", PreferencesFile, err)}
	}
	w.current = p
	return w.snapshot(), Change{Updated: true}
}

// settled reports whether a file with stamp, unchanged since the last
// read, cannot have changed unseen: it is missing, or it was last
// modified well before that read.
func (w *PrefsWatcher) settled(s fileStamp) bool {
	return !s.exists || s.mtime.Add(racyWindow).Before(w.readAt)
}

func stampOf(fi fs.FileInfo, err error) fileStamp {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileStamp{ok: true}
	case err != nil:
		return fileStamp{}
	}
	return fileStamp{ok: true, exists: true, size: fi.Size(), mtime: fi.ModTime()}
}

// contentHash identifies what a read found: the content, no file, or an
// error.
func contentHash(data []byte, err error) [32]byte {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sha256.Sum256([]byte("missing"))
	case err != nil:
		return sha256.Sum256([]byte("error\x00" + err.Error()))
	}
	return sha256.Sum256(append([]byte("content\x00"), data...))
}

// snapshot is a copy of the current preferences that the caller may keep.
func (w *PrefsWatcher) snapshot() Preferences {
	p := w.current
	if p.Context != nil {
		b := *p.Context
		p.Context = &b
	}
	return p
}

// prefsFile is PreferencesFile's JSON.
type prefsFile struct {
	Provider string          `json:"provider"`
	Model    string          `json:"model"`
	Context  json.RawMessage `json:"context"`
}

// parse validates what ReadFile returned.
func (w *PrefsWatcher) parse(data []byte, err error) (Preferences, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Preferences{}, nil
	case err != nil:
		return Preferences{}, err
	}
	var f prefsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Preferences{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Preferences{}, errors.New("unexpected data after the JSON object")
	}
	p := Preferences{Provider: strings.ToLower(strings.TrimSpace(f.Provider)), Model: strings.TrimSpace(f.Model)}
	if err := checkProvider(p.Provider); err != nil {
		return Preferences{}, fmt.Errorf("provider %q is %w", p.Provider, err)
	}
	if len(f.Context) > 0 && !bytes.Equal(f.Context, []byte("null")) {
		b := w.o.Base
		dec := json.NewDecoder(bytes.NewReader(f.Context))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return Preferences{}, fmt.Errorf("context: %w", err)
		}
		fitKnowledge(&b, f.Context)
		if err := b.Validate(); err != nil {
			return Preferences{}, err
		}
		p.Context = &b
	}
	return p, nil
}

// fitKnowledge keeps a file written before the knowledge share valid: when
// its shares leave "knowledge" out and the default knowledge share would
// take the sum over 100, knowledge gets what the others leave.
func fitKnowledge(b *hearth.ContextBudget, raw json.RawMessage) {
	var named struct {
		Shares map[string]json.RawMessage `json:"shares"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Shares == nil {
		return
	}
	if _, ok := named.Shares["knowledge"]; ok {
		return
	}
	s := &b.Shares
	if s.Recent+s.Knowledge+s.Memories+s.Tools > 100 {
		s.Knowledge = max(0, 100-s.Recent-s.Memories-s.Tools)
	}
}
