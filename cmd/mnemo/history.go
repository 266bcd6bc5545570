package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo/mnemo/tui"
)

// historyFlags parses the flags of `mnemo history`; now anchors --since
// durations.
func historyFlags(args []string, now time.Time) (tui.HistoryOptions, error) {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 0, "the last N turns")
	all := fs.Bool("all", false, "every turn")
	asJSON := fs.Bool("json", false, "one turn per line as JSON")
	since := fs.String("since", "", "turns from then on: a duration (2h, 3d) or a date (2026-11-01, RFC 3339)")
	conv := fs.String("conversation", "", "the conversation ID (mnemo conversations lists them; default main)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return tui.HistoryOptions{}, usagef("history [-n N | --all] [--since T] [--json] [--conversation ID]")
		}
		return tui.HistoryOptions{}, usagef("history: %w", err)
	}
	q := tui.HistoryOptions{Limit: *n, All: *all, JSON: *asJSON, Notes: os.Stderr, Conversation: *conv}
	switch {
	case fs.NArg() > 0:
		return q, usagef("history takes no arguments (got %q); see mnemo help", fs.Arg(0))
	case *n < 0:
		return q, usagef("history: -n must be a positive number of turns")
	case *all && *n > 0:
		return q, usagef("history: -n and --all do not go together")
	}
	if *since != "" {
		t, err := parseSince(*since, now, time.Local)
		if err != nil {
			return q, usageError{err}
		}
		q.Since = t
	}
	return q, nil
}

// parseSince reads a --since value: a duration back from now ("90m",
// "2h", "3d"), a date ("2026-11-01", midnight in loc), a date and time
// ("2026-11-01 18:30" or with a T, in loc) or RFC 3339.
func parseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 100_000 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateOnly, "2006-01-02 15:04", "2006-01-02T15:04", time.DateTime, "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (2h, 3d), a date (2026-11-01) or a time (2026-11-01T18:30:00Z)", s)
}
