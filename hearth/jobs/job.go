// Package jobs is the vault's job registry (jobs/<name>.yml) and the
// arithmetic of running it: parsing a job strictly, when a schedule is
// next due, which period a run covers (its run key), and the durable
// record of which keys have finished. It writes nothing to the vault
// itself; the core (hearth/jobs.go) runs the jobs and proposes what they
// make through the vault's policy.
package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Dir is where the registry lives in the memory root.
const Dir = "jobs"

// Kind is how a job is triggered.
type Kind string

const (
	Daily  Kind = "daily"  // every day at a local time
	Weekly Kind = "weekly" // once a week, on a weekday at a local time
	Event  Kind = "event"  // when an event happens (session_end)
)

// EventSessionEnd fires when a session ends: idle for a while, or hearth
// stopped (then at the next start).
const EventSessionEnd = "session_end"

// Schedule is when a job runs.
type Schedule struct {
	Kind         Kind
	Hour, Minute int          // Daily and Weekly, local time
	Weekday      time.Weekday // Weekly
	Event        string       // Event
}

// String is the schedule as written in a job file.
func (s Schedule) String() string {
	switch s.Kind {
	case Daily:
		return fmt.Sprintf("daily at %02d:%02d", s.Hour, s.Minute)
	case Weekly:
		return fmt.Sprintf("weekly on %s at %02d:%02d", strings.ToLower(s.Weekday.String()), s.Hour, s.Minute)
	case Event:
		return "on " + s.Event
	}
	return ""
}

// Inputs is what a job reads.
type Inputs struct {
	// Turns is which conversation records it is shown: yesterday,
	// last_week, session or none.
	Turns string
	// Notes are vault folders whose notes it is shown (knowledge/…).
	Notes []string
}

// Job is one parsed jobs/<name>.yml.
type Job struct {
	Name     string // the file's name without .yml
	Schedule Schedule
	Prompt   string // a path under prompts/
	Inputs   Inputs
	Tools    []string // tools it may call; none by default (no tool runs yet)
	Enabled  bool
}

// Author is the vault author of the job's proposals.
func (j *Job) Author() string { return "job:" + j.Name }

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)
	clockRE = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)
	turnSet = map[string]bool{"yesterday": true, "last_week": true, "session": true, "none": true}
)

// ValidName reports whether name may name a job (and its file).
func ValidName(name string) bool { return nameRE.MatchString(name) }

type file struct {
	Schedule string   `yaml:"schedule"`
	Prompt   string   `yaml:"prompt"`
	Inputs   *inputs  `yaml:"inputs"`
	Tools    []string `yaml:"tools"`
	Enabled  *bool    `yaml:"enabled"`
}

type inputs struct {
	Turns string   `yaml:"turns"`
	Notes []string `yaml:"notes"`
}

// maxFile bounds a job file; a job is a few lines.
const maxFile = 16 << 10

// Parse reads the job file named name (without .yml). Unknown keys,
// duplicate keys, a second document, a bad schedule, a prompt outside
// prompts/ or a note folder outside knowledge/ and summaries/ are errors
// that say what is wrong and how it is written.
func Parse(name string, b []byte) (*Job, error) {
	where := path.Join(Dir, name+".yml")
	fail := func(format string, a ...any) (*Job, error) {
		return nil, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...))
	}
	if !ValidName(name) {
		return fail("the name must be lower case letters, digits, - or _, starting with a letter, at most 40")
	}
	if len(b) > maxFile {
		return fail("%d bytes, at most %d", len(b), maxFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return fail("empty; a job needs at least schedule and prompt")
		}
		return fail("%v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fail("one YAML document only")
	}
	j := &Job{Name: name, Enabled: true, Inputs: Inputs{Turns: "none"}}
	s, err := ParseSchedule(f.Schedule)
	if err != nil {
		return fail("schedule: %v", err)
	}
	j.Schedule = s
	p := f.Prompt
	if p == "" || !strings.HasPrefix(p, "prompts/") || path.Clean(p) != p || !strings.HasSuffix(p, ".md") || strings.Contains(p, "\\") {
		return fail("prompt %q: want a .md file under prompts/, as prompts/daily.system.md", p)
	}
	j.Prompt = p
	if f.Inputs != nil {
		if f.Inputs.Turns != "" {
			if !turnSet[f.Inputs.Turns] {
				return fail("inputs.turns %q: want yesterday, last_week, session or none", f.Inputs.Turns)
			}
			j.Inputs.Turns = f.Inputs.Turns
		}
		for _, n := range f.Inputs.Notes {
			c := path.Clean(strings.TrimSuffix(n, "/"))
			if c != strings.TrimSuffix(n, "/") || !(c == "knowledge" || c == "summaries" || strings.HasPrefix(c, "knowledge/") || strings.HasPrefix(c, "summaries/")) {
				return fail("inputs.notes %q: want a folder under knowledge/ or summaries/", n)
			}
			j.Inputs.Notes = append(j.Inputs.Notes, c)
		}
	}
	if len(f.Tools) > 0 {
		return fail("tools %v: jobs may call no tools yet; leave tools out or empty", f.Tools)
	}
	if f.Enabled != nil {
		j.Enabled = *f.Enabled
	}
	if j.Schedule.Kind == Event && j.Inputs.Turns != "session" && j.Inputs.Turns != "none" {
		return fail("inputs.turns %q: an event job reads the session's turns (session) or none", j.Inputs.Turns)
	}
	return j, nil
}

// ParseSchedule reads "daily at HH:MM", "weekly on <weekday> at HH:MM" or
// "on session_end".
func ParseSchedule(s string) (Schedule, error) {
	const want = `want "daily at 05:00", "weekly on sunday at 06:00" or "on session_end"`
	f := strings.Fields(s)
	clock := func(c string) (int, int, error) {
		m := clockRE.FindStringSubmatch(c)
		if m == nil {
			return 0, 0, fmt.Errorf("time %q: want HH:MM, 24-hour, local", c)
		}
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		return h, mi, nil
	}
	switch {
	case len(f) == 3 && f[0] == "daily" && f[1] == "at":
		h, m, err := clock(f[2])
		if err != nil {
			return Schedule{}, err
		}
		return Schedule{Kind: Daily, Hour: h, Minute: m}, nil
	case len(f) == 5 && f[0] == "weekly" && f[1] == "on" && f[3] == "at":
		d, ok := weekdays[strings.ToLower(f[2])]
		if !ok {
			return Schedule{}, fmt.Errorf("weekday %q: want monday … sunday", f[2])
		}
		h, m, err := clock(f[4])
		if err != nil {
			return Schedule{}, err
		}
		return Schedule{Kind: Weekly, Weekday: d, Hour: h, Minute: m}, nil
	case len(f) == 2 && f[0] == "on":
		if f[1] != EventSessionEnd {
			return Schedule{}, fmt.Errorf("event %q: the only event is %s", f[1], EventSessionEnd)
		}
		return Schedule{Kind: Event, Event: f[1]}, nil
	}
	return Schedule{}, fmt.Errorf("%q: %s", s, want)
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}
