package config

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
)

// memRoot is a memory root holding at most PreferencesFile, with a clock:
// each write stamps the file with the clock's time.
type memRoot struct {
	mu      sync.Mutex
	text    *string
	mtime   time.Time
	now     time.Time
	reads   int
	readErr error
}

func newMemRoot() *memRoot { return &memRoot{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// write replaces the file and moves the clock past the racy window, as
// time passes between an edit and the next turn.
func (r *memRoot) write(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text, r.mtime = &s, r.now
	r.now = r.now.Add(time.Minute)
}

func (r *memRoot) remove() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text = nil
}

func (r *memRoot) readFile(name string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.readErr != nil {
		return nil, r.readErr
	}
	if name != PreferencesFile || r.text == nil {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return []byte(*r.text), nil
}

func (r *memRoot) stat(name string) (fs.FileInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != PreferencesFile || r.text == nil {
		return nil, fmt.Errorf("stat %s: %w", name, fs.ErrNotExist)
	}
	return fileInfo{size: int64(len(*r.text)), mtime: r.mtime}, nil
}

func (r *memRoot) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *memRoot) readCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

type fileInfo struct {
	size  int64
	mtime time.Time
}

func (f fileInfo) Name() string       { return PreferencesFile }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return 0o644 }
func (f fileInfo) ModTime() time.Time { return f.mtime }
func (f fileInfo) IsDir() bool        { return false }
func (f fileInfo) Sys() any           { return nil }

var base = hearth.ContextBudget{Tokens: 10000, Shares: hearth.ContextShares{Recent: 75, Memories: 15, Tools: 10}}

func budget(tokens, recent, memories, tools int) *hearth.ContextBudget {
	return &hearth.ContextBudget{Tokens: tokens, Shares: hearth.ContextShares{Recent: recent, Memories: memories, Tools: tools}}
}

func (r *memRoot) watcher() *PrefsWatcher {
	return NewPrefsWatcher(PrefsOptions{ReadFile: r.readFile, Stat: r.stat, Base: base, Now: r.clock})
}

// TestPrefsValid: what a valid file means; the context object merges over
// the base budget, an omitted field keeping its value.
func TestPrefsValid(t *testing.T) {
	tests := []struct {
		name string
		file *string
		want Preferences
	}{
		{"no file", nil, Preferences{}},
		{"empty object", ptr(`{}`), Preferences{}},
		{"model only", ptr(`{"model":"grok-4.5"}`), Preferences{Model: "grok-4.5"}},
		{"provider, loosely spelt", ptr(`{"provider":" Anthropic ","model":" claude-x "}`), Preferences{Provider: "anthropic", Model: "claude-x"}},
		{"null context", ptr(`{"context":null}`), Preferences{}},
		{"total only", ptr(`{"context":{"budget_tokens":40000}}`), Preferences{Context: budget(40000, 75, 15, 10)}},
		{"all shares", ptr(`{"context":{"shares":{"recent":50,"memories":30,"tools":20}}}`), Preferences{Context: budget(10000, 50, 30, 20)}},
		{"an omitted share keeps its value", ptr(`{"context":{"shares":{"recent":70}}}`), Preferences{Context: budget(10000, 70, 15, 10)}},
		{"everything", ptr(`{"provider":"xai","model":"m","context":{"budget_tokens":5000,"shares":{"recent":60,"memories":20,"tools":20}}}`),
			Preferences{Provider: "xai", Model: "m", Context: budget(5000, 60, 20, 20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemRoot()
			if tt.file != nil {
				r.write(*tt.file)
			}
			got, change := r.watcher().Current()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Current() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Change{Updated: true}, change); diff != "" {
				t.Errorf("first Change (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestPrefsInvalid: an invalid edit leaves the last good snapshot current
// and is reported exactly once.
func TestPrefsInvalid(t *testing.T) {
	good := `{"provider":"xai","model":"grok-4.5","context":{"budget_tokens":20000}}`
	goodPrefs := Preferences{Provider: "xai", Model: "grok-4.5", Context: budget(20000, 75, 15, 10)}
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{"broken JSON", `{"model":`, "preferences.json: unexpected EOF"},
		{"empty file", ``, "preferences.json: EOF"},
		{"trailing data", `{"model":"m"} {}`, "preferences.json: unexpected data after the JSON object"},
		{"not an object", `["xai"]`, "preferences.json: json: cannot unmarshal array"},
		{"unknown field", `{"modle":"m"}`, `preferences.json: json: unknown field "modle"`},
		{"unknown context field", `{"context":{"budget":9000}}`, `preferences.json: context: json: unknown field "budget"`},
		{"wrong type", `{"model":4}`, `preferences.json: json: cannot unmarshal number into Go struct field prefsFile.model of type string`},
		{"wrong context type", `{"context":{"budget_tokens":"lots"}}`, `preferences.json: context: json: cannot unmarshal string`},
		{"shares over 100", `{"context":{"shares":{"recent":90}}}`, "preferences.json: context budget: shares add up to 115%, more than 100%"},
		{"negative share", `{"context":{"shares":{"tools":-5}}}`, `preferences.json: context budget: share "tools" is -5%; shares must not be negative`},
		{"tiny total", `{"context":{"budget_tokens":10}}`, "preferences.json: context budget: budget_tokens 10 is outside [1000, 2000000]"},
		{"unknown provider", `{"provider":"Mystery"}`, `preferences.json: provider "mystery" is not supported: use "xai", "anthropic" or "openai"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemRoot()
			w := r.watcher()
			r.write(good)
			if _, change := w.Current(); !change.Updated {
				t.Fatalf("good file: Change = %+v", change)
			}
			r.write(tt.file)
			got, change := w.Current()
			if change.Err == nil || !strings.HasPrefix(change.Err.Error(), tt.wantErr) || change.Updated {
				t.Errorf("Change = %+v, want an error starting %q", change, tt.wantErr)
			}
			if diff := cmp.Diff(goodPrefs, got); diff != "" {
				t.Errorf("after a bad edit, Current() (-want the last good +got):\n%s", diff)
			}
			r.write(tt.file) // saved again, same content
			for range 3 {
				got, change := w.Current()
				if diff := cmp.Diff(Change{}, change); diff != "" {
					t.Errorf("the same bad content is reported again (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(goodPrefs, got); diff != "" {
					t.Errorf("Current() (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestPrefsFixedAgain: a sequence of edits, each Change as the owner must
// be told.
func TestPrefsFixedAgain(t *testing.T) {
	good1, good2 := `{"model":"one"}`, `{"model":"two","context":{"budget_tokens":30000}}`
	bad1, bad2 := `{"context":{"shares":{"recent":99}}}`, `{not json`
	p1, p2 := Preferences{Model: "one"}, Preferences{Model: "two", Context: budget(30000, 75, 15, 10)}
	steps := []struct {
		file    *string // nil: removed
		want    Preferences
		updated bool
		wantErr string
	}{
		{ptr(good1), p1, true, ""},
		{ptr(bad1), p1, false, "shares add up to 124%"},
		{ptr(bad1), p1, false, ""},
		{ptr(bad2), p1, false, "invalid character"},
		{ptr(good2), p2, true, ""}, // fixed
		{ptr(good2), p2, false, ""},
		{ptr(bad1), p2, false, "shares add up to 124%"}, // broken again: told again
		{ptr(good1), p1, true, ""},
		{nil, Preferences{}, true, ""}, // removed: no preference
		{nil, Preferences{}, false, ""},
		{ptr(bad2), Preferences{}, false, "invalid character"},
	}
	r := newMemRoot()
	w := r.watcher()
	for i, s := range steps {
		if s.file == nil {
			r.remove()
		} else {
			r.write(*s.file)
		}
		got, change := w.Current()
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("step %d: Current() (-want +got):\n%s", i, diff)
		}
		if change.Updated != s.updated {
			t.Errorf("step %d: Updated = %v, want %v", i, change.Updated, s.updated)
		}
		switch {
		case s.wantErr == "" && change.Err != nil:
			t.Errorf("step %d: Err = %v, want none", i, change.Err)
		case s.wantErr != "" && (change.Err == nil || !strings.Contains(change.Err.Error(), s.wantErr)):
			t.Errorf("step %d: Err = %v, want one containing %q", i, change.Err, s.wantErr)
		}
	}
}

// TestPrefsUnchangedIsNotRead: an unchanged file costs a stat, not a read
// (nor a parse); a file modified within the racy window of its last read
// is read again, compared, and parsed only if it differs.
func TestPrefsUnchangedIsNotRead(t *testing.T) {
	r := newMemRoot()
	w := r.watcher()
	r.write(`{"model":"one"}`)
	for range 5 {
		w.Current()
	}
	if n := r.readCount(); n != 1 {
		t.Errorf("5 checks of an unchanged file read it %d times, want 1", n)
	}
	r.write(`{"model":"two"}`)
	if p, change := w.Current(); p.Model != "two" || !change.Updated {
		t.Errorf("after an edit: %+v, %+v", p, change)
	}
	if n := r.readCount(); n != 2 {
		t.Errorf("reads = %d, want 2", n)
	}

	// Racy: read in the same second as it was written, then rewritten
	// with the same size and time.
	r.mu.Lock()
	r.now = r.mtime.Add(time.Second)
	r.mu.Unlock()
	r.write(`{"model":"tri"}`)
	r.mu.Lock()
	r.now = r.mtime // the clock stands still: a same-second rewrite
	r.mu.Unlock()
	if p, _ := w.Current(); p.Model != "tri" {
		t.Fatalf("Model = %q, want tri", p.Model)
	}
	r.mu.Lock()
	*r.text = `{"model":"for"}` // same size, same mtime
	r.mu.Unlock()
	if p, change := w.Current(); p.Model != "for" || !change.Updated {
		t.Errorf("a same-size same-time rewrite in the racy window was missed: %+v, %+v", p, change)
	}
	// Still racy but unchanged: read and compared, not parsed again.
	if _, change := w.Current(); change != (Change{}) {
		t.Errorf("unchanged content: Change = %+v", change)
	}
	// Once the clock is past the window, stat alone answers.
	r.mu.Lock()
	r.now = r.now.Add(time.Minute)
	r.mu.Unlock()
	w.Current() // one last read, now settled
	before := r.readCount()
	for range 5 {
		w.Current()
	}
	if n := r.readCount() - before; n != 0 {
		t.Errorf("settled file read %d times, want 0", n)
	}

	// A missing file is not read either, once seen missing.
	r.remove()
	w.Current()
	before = r.readCount()
	for range 3 {
		w.Current()
	}
	if n := r.readCount() - before; n != 0 {
		t.Errorf("missing file read %d times, want 0", n)
	}
}

// TestPrefsWithoutStat: with no Stat the file is read each time but parsed
// only when its content changes.
func TestPrefsWithoutStat(t *testing.T) {
	r := newMemRoot()
	w := NewPrefsWatcher(PrefsOptions{ReadFile: r.readFile})
	r.write(`{"model":"one","context":{"budget_tokens":5000}}`)
	want := hearth.ContextBudget{Tokens: 5000, Shares: hearth.DefaultContextBudget().Shares}
	if p, change := w.Current(); !change.Updated || p.Model != "one" || *p.Context != want {
		t.Errorf("first: %+v, %+v (the base is the default budget)", p, change)
	}
	for range 3 {
		if _, change := w.Current(); change != (Change{}) {
			t.Errorf("unchanged: Change = %+v", change)
		}
	}
	r.write(`{"model":"two"}`)
	if p, change := w.Current(); !change.Updated || p.Model != "two" {
		t.Errorf("edited: %+v, %+v", p, change)
	}
}

// TestPrefsReadError: a file that cannot be read is reported once, and the
// last good snapshot stays.
func TestPrefsReadError(t *testing.T) {
	r := newMemRoot()
	w := r.watcher()
	r.write(`{"model":"one"}`)
	w.Current()
	r.write(`{"model":"two"}`)
	r.mu.Lock()
	r.readErr = fmt.Errorf("open %s: %w", PreferencesFile, fs.ErrPermission)
	r.mu.Unlock()
	p, change := w.Current()
	if p.Model != "one" || change.Err == nil || !strings.Contains(change.Err.Error(), "permission denied") {
		t.Errorf("unreadable: %+v, %+v", p, change)
	}
	r.write(`{"model":"two"}`)
	if _, change := w.Current(); change != (Change{}) {
		t.Errorf("still unreadable: Change = %+v, want nothing new", change)
	}
}

// TestPrefsSnapshotIsACopy: a caller changing its snapshot changes no one
// else's.
func TestPrefsSnapshotIsACopy(t *testing.T) {
	r := newMemRoot()
	w := r.watcher()
	r.write(`{"context":{"budget_tokens":5000}}`)
	p, _ := w.Current()
	p.Context.Tokens = 1
	if q, _ := w.Current(); q.Context.Tokens != 5000 {
		t.Errorf("Tokens = %d after a caller changed its copy", q.Context.Tokens)
	}
}

// TestPrefsConcurrent: callers racing on a changed file see one
// consistent snapshot, and exactly one of them gets the error.
func TestPrefsConcurrent(t *testing.T) {
	r := newMemRoot()
	w := r.watcher()
	r.write(`{"model":"one"}`)
	w.Current()
	r.write(`{"model":`)
	var errs, updates atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				p, change := w.Current()
				if p.Model != "one" {
					t.Errorf("Model = %q", p.Model)
				}
				if change.Err != nil {
					errs.Add(1)
				}
				if change.Updated {
					updates.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if errs.Load() != 1 || updates.Load() != 0 {
		t.Errorf("errors reported %d times, updates %d; want 1 and 0", errs.Load(), updates.Load())
	}
}

// TestPrefsKnowledgeShare: a file written before the knowledge share whose
// shares, with the default knowledge share, would add up to more than 100
// stays valid: knowledge gets what the others leave. A file that names
// the knowledge share is taken as written.
func TestPrefsKnowledgeShare(t *testing.T) {
	shares := func(recent, knowledge, memories, tools int) *hearth.ContextBudget {
		return &hearth.ContextBudget{Tokens: hearth.DefaultContextTokens, Shares: hearth.ContextShares{Recent: recent, Knowledge: knowledge, Memories: memories, Tools: tools}}
	}
	tests := []struct {
		name, file string
		want       *hearth.ContextBudget // nil: refused
	}{
		{"older file, full", `{"context":{"shares":{"recent":75,"memories":15,"tools":10}}}`, shares(75, 0, 15, 10)},
		{"older file, room left", `{"context":{"shares":{"recent":70,"memories":12,"tools":10}}}`, shares(70, 8, 12, 10)},
		{"older file, within 100", `{"context":{"shares":{"recent":60}}}`, shares(60, 10, 5, 10)},
		{"knowledge named", `{"context":{"shares":{"recent":60,"knowledge":20,"memories":10,"tools":10}}}`, shares(60, 20, 10, 10)},
		{"knowledge named, over 100", `{"context":{"shares":{"recent":75,"knowledge":10,"memories":15,"tools":10}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newMemRoot()
			r.write(tt.file)
			w := NewPrefsWatcher(PrefsOptions{ReadFile: r.readFile, Stat: r.stat, Now: r.clock})
			got, change := w.Current()
			if tt.want == nil {
				if change.Err == nil {
					t.Errorf("Current() = %+v, want an error", got)
				}
				return
			}
			if change.Err != nil || got.Context == nil || *got.Context != *tt.want {
				t.Errorf("Current() = %+v, %v; want context %+v", got.Context, change.Err, tt.want)
			}
		})
	}
}
