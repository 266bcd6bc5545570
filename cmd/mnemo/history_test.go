package main

import (
	"errors"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2h", now.Add(-2 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"3d", now.AddDate(0, 0, -3)},
		{"0d", now},
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, loc)},
		{"2026-11-01 18:30", time.Date(2026, 11, 1, 18, 30, 0, 0, loc)},
		{"2026-11-01T18:30", time.Date(2026, 11, 1, 18, 30, 0, 0, loc)},
		{"2026-11-01T18:30:00Z", time.Date(2026, 11, 1, 18, 30, 0, 0, time.UTC)},
		{"2026-11-01T18:30:00+02:00", time.Date(2026, 11, 1, 16, 30, 0, 0, time.UTC)},
		{" 2h ", now.Add(-2 * time.Hour)},
	} {
		got, err := parseSince(tc.in, now, loc)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-2h", "2026-13-01", "3w", "d", "-1d", "2026/11/01"} {
		if got, err := parseSince(bad, now, loc); err == nil {
			t.Errorf("parseSince(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"2h", "3d", "2026-11-01", "2026-11-01T18:30:00Z", "99999999d", "1e9h"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now, time.UTC)
		if err == nil && got.IsZero() {
			t.Errorf("parseSince(%q) accepted with a zero time", s)
		}
		if err == nil && got.After(now) && !isAbsolute(s) {
			t.Errorf("parseSince(%q) = %v: a duration back from now lands after it", s, got)
		}
	})
}

// isAbsolute reports whether s names a time rather than a duration.
func isAbsolute(s string) bool {
	_, err := time.ParseDuration(s)
	return err != nil && (len(s) < 1 || s[len(s)-1] != 'd')
}

func TestHistoryFlags(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		args      []string
		limit     int
		all, json bool
		since     bool
		conv      string
		usage     bool
	}{
		{args: nil},
		{args: []string{"-n", "5"}, limit: 5},
		{args: []string{"--all", "--json"}, all: true, json: true},
		{args: []string{"--since", "2h", "-n", "3"}, limit: 3, since: true},
		{args: []string{"--conversation", "trip", "-n", "3"}, limit: 3, conv: "trip"},
		{args: []string{"-n", "-1"}, usage: true},
		{args: []string{"-n", "2", "--all"}, usage: true},
		{args: []string{"--since", "someday"}, usage: true},
		{args: []string{"--bogus"}, usage: true},
		{args: []string{"extra"}, usage: true},
	} {
		q, err := historyFlags(tc.args, now)
		var ue usageError
		if tc.usage {
			if !errors.As(err, &ue) || exitCode(err) != exitUsage {
				t.Errorf("%v: err %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || q.Limit != tc.limit || q.All != tc.all || q.JSON != tc.json || q.Since.IsZero() == tc.since || q.Conversation != tc.conv {
			t.Errorf("%v: %+v, %v", tc.args, q, err)
		}
	}
}
