package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// StateFile is the runner's record in its state directory.
const StateFile = "jobs.state.json"

// keep is how many finished keys are remembered per job: enough that no
// period a restart could catch up on is forgotten.
const keep = 64

// Run is the last run of a job.
type Run struct {
	Key      string    `json:"key"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Result is ok, failed (retrying), or skipped.
	Result   string `json:"result"`
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts"`
	// Applied, Queued and Rejected count what policy did with its
	// proposals.
	Applied  int `json:"applied"`
	Queued   int `json:"queued"`
	Rejected int `json:"rejected"`
}

// State is which run keys finished, and each job's last run. Save writes
// it durably; it is the runner's only memory across restarts.
type State struct {
	Done map[string][]string `json:"done"` // job → finished keys, oldest first
	Last map[string]Run      `json:"last"`
	// SessionCursor is the last journal record a session_end run covered.
	SessionCursor string `json:"session_cursor,omitempty"`
	// Redo are the sessions whose summary a forget removed: the
	// session_end jobs run again over the turns of each that remain.
	Redo []Span `json:"redo,omitempty"`
}

// Span is a session by the first and the last journal record its summary
// covered.
type Span struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// LoadState reads dir/StateFile; a missing file is an empty state.
func LoadState(dir string) (*State, error) {
	s := &State{Done: map[string][]string{}, Last: map[string]Run{}}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobs state: %w", err)
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("jobs state %s: %w", filepath.Join(dir, StateFile), err)
	}
	if s.Done == nil {
		s.Done = map[string][]string{}
	}
	if s.Last == nil {
		s.Last = map[string]Run{}
	}
	return s, nil
}

// Finished reports whether key of job finished.
func (s *State) Finished(job, key string) bool {
	for _, k := range s.Done[job] {
		if k == key {
			return true
		}
	}
	return false
}

// Finish marks key of job finished.
func (s *State) Finish(job, key string) {
	if s.Finished(job, key) {
		return
	}
	d := append(s.Done[job], key)
	sort.Strings(d)
	if len(d) > keep {
		d = d[len(d)-keep:]
	}
	s.Done[job] = d
}

// Save writes the state to dir/StateFile: a temporary file, fsync, rename,
// directory fsync.
func (s *State) Save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("jobs state: %w", err)
	}
	if err := writeDurable(dir, StateFile, append(b, '\n')); err != nil {
		return fmt.Errorf("jobs state: %w", err)
	}
	return nil
}

func writeDurable(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Unfinish forgets that any job's run of period finished (its key is
// "<job>:<period>"), so that it runs again when due: what it wrote was
// made from turns the owner forgot, and was removed. It reports whether
// any key was dropped.
func (s *State) Unfinish(period string) bool {
	dropped := false
	for job, keys := range s.Done {
		kept := keys[:0]
		for _, k := range keys {
			if _, p, ok := strings.Cut(k, ":"); ok && p == period {
				dropped = true
				continue
			}
			kept = append(kept, k)
		}
		s.Done[job] = kept
	}
	return dropped
}
