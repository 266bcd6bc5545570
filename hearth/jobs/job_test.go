package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"io/fs"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, file string
		want       string // Schedule.String(), or "" when an error is wanted
		err        string // a substring of the error
	}{
		{"daily", "schedule: daily at 05:00\nprompt: prompts/daily.system.md\n", "daily at 05:00", ""},
		{"weekly", "schedule: weekly on Sunday at 06:30\nprompt: prompts/w.md\ninputs: {turns: last_week, notes: [knowledge/]}\n", "weekly on sunday at 06:30", ""},
		{"sess", "schedule: on session_end\nprompt: prompts/s.md\ninputs: {turns: session}\n", "on session_end", ""},
		{"empty", "", "", "empty"},
		{"nosched", "prompt: prompts/d.md\n", "", "schedule"},
		{"hour", "schedule: daily at 25:00\nprompt: prompts/d.md\n", "", "HH:MM"},
		{"day", "schedule: weekly on funday at 06:00\nprompt: prompts/d.md\n", "", "weekday"},
		{"event", "schedule: on boot\nprompt: prompts/d.md\n", "", "only event"},
		{"unknown", "schedule: daily at 05:00\nprompt: prompts/d.md\ncron: x\n", "", "cron"},
		{"dup", "schedule: daily at 05:00\nschedule: daily at 06:00\nprompt: prompts/d.md\n", "", "already defined"},
		{"prompt", "schedule: daily at 05:00\nprompt: ../secrets.md\n", "", "under prompts/"},
		{"notes", "schedule: daily at 05:00\nprompt: prompts/d.md\ninputs: {notes: [config]}\n", "", "inputs.notes"},
		{"turns", "schedule: daily at 05:00\nprompt: prompts/d.md\ninputs: {turns: forever}\n", "", "inputs.turns"},
		{"tools", "schedule: daily at 05:00\nprompt: prompts/d.md\ntools: [shell]\n", "", "no tools"},
		{"two", "schedule: daily at 05:00\nprompt: prompts/d.md\n---\nx: 1\n", "", "one YAML document"},
		{"Bad-Name", "schedule: daily at 05:00\nprompt: prompts/d.md\n", "", "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := Parse(tt.name, []byte(tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "jobs/"+tt.name+".yml: ") {
					t.Fatalf("err %v, want one naming the file and saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := j.Schedule.String(); got != tt.want || !j.Enabled {
				t.Errorf("schedule %q enabled %v, want %q", got, j.Enabled, tt.want)
			}
			// What String writes parses back to the same schedule.
			if s, err := ParseSchedule(j.Schedule.String()); err != nil || s != j.Schedule {
				t.Errorf("round trip %+v %v", s, err)
			}
		})
	}
}

// TestShipped: the default jobs parse, and their prompts ship too.
func TestShipped(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, data.Vault()); err != nil {
		t.Fatal(err)
	}
	js, bad, err := Load(dir)
	if err != nil || len(bad) > 0 || len(js) != 3 {
		t.Fatalf("jobs %d bad %v err %v", len(js), bad, err)
	}
	for _, j := range js {
		if _, err := fs.Stat(data.Vault(), j.Prompt); err != nil {
			t.Errorf("%s: %v", j.Name, err)
		}
	}
}

// TestLoadBad: a bad file is reported on its own and the others load.
func TestLoadBad(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, Dir), 0o700)
	os.WriteFile(filepath.Join(dir, Dir, "good.yml"), []byte("schedule: daily at 05:00\nprompt: prompts/d.md\n"), 0o600)
	os.WriteFile(filepath.Join(dir, Dir, "bad.yml"), []byte("schedule: hourly\nprompt: prompts/d.md\n"), 0o600)
	js, bad, err := Load(dir)
	if err != nil || len(js) != 1 || js[0].Name != "good" || len(bad) != 1 || !strings.Contains(bad[0].Error(), "jobs/bad.yml: schedule") {
		t.Fatalf("jobs %v bad %v err %v", js, bad, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"schedule: daily at 05:00\nprompt: prompts/daily.system.md\ninputs:\n  turns: yesterday\n  notes: [knowledge]\ntools: []\nenabled: true\n",
		"schedule: weekly on sunday at 06:00\nprompt: prompts/w.md\n",
		"schedule: on session_end\nprompt: prompts/s.md\ninputs: {turns: session}\n",
		"schedule: [1]\n", "&a x: *a\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, err := Parse("fuzz", []byte(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "jobs/fuzz.yml: ") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if !strings.HasPrefix(j.Prompt, "prompts/") || len(j.Tools) != 0 {
			t.Fatalf("accepted %+v", j)
		}
		if s2, err := ParseSchedule(j.Schedule.String()); err != nil || s2 != j.Schedule {
			t.Fatalf("schedule %+v does not round trip: %v", j.Schedule, err)
		}
	})
}

func TestSchedule(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	daily := Schedule{Kind: Daily, Hour: 5}
	weekly := Schedule{Kind: Weekly, Weekday: time.Sunday, Hour: 6}
	tests := []struct {
		s                Schedule
		now, last, next  string
		period, from, to string
	}{
		{daily, "2026-11-26 04:59", "2026-11-25 05:00", "2026-11-26 05:00", "2026-11-24", "2026-11-24 00:00", "2026-11-25 00:00"},
		{daily, "2026-11-26 05:00", "2026-11-26 05:00", "2026-11-27 05:00", "2026-11-25", "2026-11-25 00:00", "2026-11-26 00:00"},
		{daily, "2026-03-29 05:30", "2026-03-29 05:00", "2026-03-30 05:00", "2026-03-28", "2026-03-28 00:00", "2026-03-29 00:00"}, // DST starts that night
		{daily, "2026-01-01 00:10", "2025-12-31 05:00", "2026-01-01 05:00", "2025-12-30", "2025-12-30 00:00", "2025-12-31 00:00"},
		{weekly, "2026-11-26 12:00", "2026-11-22 06:00", "2026-11-29 06:00", "2026-W47", "2026-11-15 00:00", "2026-11-22 00:00"},
		{weekly, "2026-11-22 05:59", "2026-11-15 06:00", "2026-11-22 06:00", "2026-W46", "2026-11-08 00:00", "2026-11-15 00:00"},
		{weekly, "2026-11-22 06:00", "2026-11-22 06:00", "2026-11-29 06:00", "2026-W47", "2026-11-15 00:00", "2026-11-22 00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.s.String()+" "+tt.now, func(t *testing.T) {
			now := at(tt.now)
			last, next := tt.s.Last(now), tt.s.Next(now)
			if !last.Equal(at(tt.last)) || !next.Equal(at(tt.next)) {
				t.Errorf("last %v next %v, want %s %s", last, next, tt.last, tt.next)
			}
			p, from, to := tt.s.Period(last)
			if p != tt.period || !from.Equal(at(tt.from)) || !to.Equal(at(tt.to)) {
				t.Errorf("period %s [%v, %v), want %s [%s, %s)", p, from, to, tt.period, tt.from, tt.to)
			}
		})
	}
}

// Missed: the last n due times, oldest first, across a DST change.
func TestMissed(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, loc)
	var got []string
	for _, d := range (Schedule{Kind: Daily, Hour: 5}).Missed(now, 4) {
		got = append(got, d.Format("2006-01-02 15:04 MST"))
	}
	want := []string{"2026-03-28 05:00 CET", "2026-03-29 05:00 CEST", "2026-03-30 05:00 CEST", "2026-03-31 05:00 CEST"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("daily missed %q, want %q", got, want)
	}
	got = got[:0]
	for _, d := range (Schedule{Kind: Weekly, Weekday: time.Sunday, Hour: 6}).Missed(now, 2) {
		got = append(got, d.Format("2006-01-02 15:04"))
	}
	if strings.Join(got, ",") != "2026-03-22 06:00,2026-03-29 06:00" {
		t.Errorf("weekly missed %q", got)
	}
	if (Schedule{Kind: Event, Event: EventSessionEnd}).Missed(now, 3) != nil {
		t.Error("an event has due times")
	}
}

func TestState(t *testing.T) {
	dir := t.TempDir()
	s, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keep + 5 {
		s.Finish("daily", Key("daily", time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)))
	}
	s.Finish("daily", "daily:2026-02-01")
	s.Last["daily"] = Run{Key: "daily:2026-03-10", Result: "ok", Attempts: 1}
	if err := s.Save(dir); err != nil {
		t.Fatal(err)
	}
	r, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Done["daily"]) != keep || !r.Finished("daily", "daily:2026-03-10") || r.Finished("daily", "daily:2026-01-01") || r.Last["daily"].Result != "ok" {
		t.Errorf("reloaded %+v", r)
	}
}
