package jobs

import (
	"fmt"
	"time"
)

// at is the schedule's local time on the day of d.
func (s Schedule) at(d time.Time) time.Time {
	return time.Date(d.Year(), d.Month(), d.Day(), s.Hour, s.Minute, 0, 0, d.Location())
}

// Last is the latest time the schedule was due at or before now, in now's
// location; zero for an event.
func (s Schedule) Last(now time.Time) time.Time {
	switch s.Kind {
	case Daily:
		t := s.at(now)
		if t.After(now) {
			t = s.at(now.AddDate(0, 0, -1))
		}
		return t
	case Weekly:
		back := (int(now.Weekday()) - int(s.Weekday) + 7) % 7
		t := s.at(now.AddDate(0, 0, -back))
		if t.After(now) {
			t = s.at(now.AddDate(0, 0, -back-7))
		}
		return t
	}
	return time.Time{}
}

// Next is the earliest time the schedule is due after now; zero for an
// event.
func (s Schedule) Next(now time.Time) time.Time {
	switch s.Kind {
	case Daily:
		t := s.at(now)
		if !t.After(now) {
			t = s.at(now.AddDate(0, 0, 1))
		}
		return t
	case Weekly:
		ahead := (int(s.Weekday) - int(now.Weekday()) + 7) % 7
		t := s.at(now.AddDate(0, 0, ahead))
		if !t.After(now) {
			t = s.at(now.AddDate(0, 0, ahead+7))
		}
		return t
	}
	return time.Time{}
}

// Period is what a run due at `due` covers: a daily run the local day
// before (period "2026-11-25"), a weekly run the seven days before (period
// the ISO week of the last of them, "2026-W47"), from inclusive, to
// exclusive.
func (s Schedule) Period(due time.Time) (period string, from, to time.Time) {
	to = time.Date(due.Year(), due.Month(), due.Day(), 0, 0, 0, 0, due.Location())
	switch s.Kind {
	case Daily:
		from = to.AddDate(0, 0, -1)
		return from.Format(time.DateOnly), from, to
	case Weekly:
		from = to.AddDate(0, 0, -7)
		y, w := to.AddDate(0, 0, -1).ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w), from, to
	}
	return "", time.Time{}, time.Time{}
}

// Key is the run key of job name over period: a key that finished never
// runs again.
func Key(name, period string) string { return name + ":" + period }

// Missed is the last n times the schedule was due at or before now,
// oldest first (Last is the newest); none for an event.
func (s Schedule) Missed(now time.Time, n int) []time.Time {
	last := s.Last(now)
	if last.IsZero() || n <= 0 {
		return nil
	}
	step := 1
	if s.Kind == Weekly {
		step = 7
	}
	out := make([]time.Time, n)
	for i := range n {
		out[n-1-i] = s.at(last.AddDate(0, 0, -i*step))
	}
	return out
}

// CatchUp bounds the missed periods a start runs: a week of dailies, a
// month of weeklies.
func CatchUp(k Kind) int {
	switch k {
	case Daily:
		return 7
	case Weekly:
		return 4
	}
	return 0
}
