package recall

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseDateWindow(t *testing.T) {
	loc := time.FixedZone("CEST", 2*3600)
	// Thursday 16 May 2024, mid-afternoon.
	at := time.Date(2024, 5, 16, 15, 4, 5, 0, loc)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, loc) }
	day := func(y int, m time.Month, dd int) Window { return Window{d(y, m, dd), d(y, m, dd+1)} }
	tests := []struct {
		text string
		want Window
		ok   bool
	}{
		{"what did I say today?", day(2024, 5, 16), true},
		{"Earlier TODAY", day(2024, 5, 16), true},
		{"what did we talk about this morning", day(2024, 5, 16), true},
		{"yesterday", day(2024, 5, 15), true},
		{"last night", day(2024, 5, 15), true},
		{"the day before yesterday", day(2024, 5, 14), true},
		{"last week", Window{d(2024, 5, 6), d(2024, 5, 13)}, true},
		{"this week", Window{d(2024, 5, 13), d(2024, 5, 20)}, true},
		{"next week", Window{d(2024, 5, 20), d(2024, 5, 27)}, true},
		{"last weekend", Window{d(2024, 5, 11), d(2024, 5, 13)}, true},
		{"this weekend", Window{d(2024, 5, 18), d(2024, 5, 20)}, true},
		{"last month", Window{d(2024, 4, 1), d(2024, 5, 1)}, true},
		{"previous month", Window{d(2024, 4, 1), d(2024, 5, 1)}, true},
		{"this month", Window{d(2024, 5, 1), d(2024, 6, 1)}, true},
		{"last year", Window{d(2023, 1, 1), d(2024, 1, 1)}, true},
		{"what did I say last Tuesday", day(2024, 5, 14), true},
		{"last thursday", day(2024, 5, 9), true},
		{"last tue", day(2024, 5, 14), true},
		{"on Tuesday", day(2024, 5, 14), true},
		{"Thursday", day(2024, 5, 16), true},
		{"next Tuesday", day(2024, 5, 21), true},
		{"this Monday", day(2024, 5, 13), true},
		{"this Sunday", day(2024, 5, 19), true},
		{"3 days ago", day(2024, 5, 13), true},
		{"three days ago", day(2024, 5, 13), true},
		{"a few days ago", day(2024, 5, 13), true},
		{"a day ago", day(2024, 5, 15), true},
		{"2 weeks ago", Window{d(2024, 4, 29), d(2024, 5, 6)}, true},
		{"a couple of weeks ago", Window{d(2024, 4, 29), d(2024, 5, 6)}, true},
		{"a month ago", Window{d(2024, 4, 1), d(2024, 5, 2)}, true},
		{"a year ago", Window{d(2022, 11, 16), d(2023, 11, 17)}, true},
		{"the past 3 days", Window{d(2024, 5, 13), d(2024, 5, 17)}, true},
		{"past week", Window{d(2024, 5, 10), d(2024, 5, 17)}, true},
		{"in the last two months", Window{d(2024, 3, 16), d(2024, 5, 17)}, true},
		{"in May 2023", Window{d(2023, 5, 1), d(2023, 6, 1)}, true},
		{"on 7 May 2023", day(2023, 5, 7), true},
		{"on the 7th of May", day(2024, 5, 7), true},
		{"May 7, 2023", day(2023, 5, 7), true},
		{"May 7th", day(2024, 5, 7), true},
		{"May 20", day(2023, 5, 20), true},
		{"Dec 25", day(2023, 12, 25), true},
		{"in May", Window{d(2024, 5, 1), d(2024, 6, 1)}, true},
		{"in June", Window{d(2023, 6, 1), d(2023, 7, 1)}, true},
		{"last May", Window{d(2023, 5, 1), d(2023, 6, 1)}, true},
		{"next March", Window{d(2025, 3, 1), d(2025, 4, 1)}, true},
		{"what happened in September", Window{d(2023, 9, 1), d(2023, 10, 1)}, true},
		{"our October trip", Window{d(2023, 10, 1), d(2023, 11, 1)}, true},
		{"2023-05-07", day(2023, 5, 7), true},
		{"on 2023/12/25?", day(2023, 12, 25), true},
		{"in 2023-05", Window{d(2023, 5, 1), d(2023, 6, 1)}, true},
		{"in 2022", Window{d(2022, 1, 1), d(2023, 1, 1)}, true},
		{"since March", Window{d(2024, 3, 1), d(2024, 5, 17)}, true},
		{"since 2 May 2024", Window{d(2024, 5, 2), d(2024, 5, 17)}, true},
		{"between 1 May and 3 May 2024", Window{d(2024, 5, 1), d(2024, 5, 4)}, true},
		{"tuesday and thursday", Window{d(2024, 5, 14), d(2024, 5, 17)}, true},
		{"Feb 29", day(2024, 2, 29), true},
		{"last summer", Window{d(2023, 6, 1), d(2023, 9, 1)}, true},
		{"this winter", Window{d(2023, 12, 1), d(2024, 3, 1)}, true},
		{"summer of 2022", Window{d(2022, 6, 1), d(2022, 9, 1)}, true},
		{"in the spring", Window{d(2024, 3, 1), d(2024, 6, 1)}, true},

		{"", Window{}, false},
		{"what is the weather like", Window{}, false},
		{"I may go hiking", Window{}, false},
		{"the march was long", Window{}, false},
		{"the sun sat low", Window{}, false},
		{"I fall often", Window{}, false},
		{"Feb 30", Window{}, false},
		{"2023-13-01", Window{}, false},
		{"room 2023", Window{}, false},
		{"a few things", Window{}, false},
		{"last time we spoke", Window{}, false},
		{"1234567890123456789012 days ago", Window{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, ok := ParseDateWindow(tt.text, at)
			if ok != tt.ok || !got.Since.Equal(tt.want.Since) || !got.Until.Equal(tt.want.Until) {
				t.Errorf("ParseDateWindow(%q) = [%v, %v), %v; want [%v, %v), %v", tt.text,
					got.Since.Format(time.DateOnly), got.Until.Format(time.DateOnly), ok,
					tt.want.Since.Format(time.DateOnly), tt.want.Until.Format(time.DateOnly), tt.ok)
			}
		})
	}
}

func TestWindowContains(t *testing.T) {
	w := Window{time.Unix(100, 0), time.Unix(200, 0)}
	for _, tt := range []struct {
		t    int64
		want bool
	}{{99, false}, {100, true}, {199, true}, {200, false}} {
		if got := w.Contains(time.Unix(tt.t, 0)); got != tt.want {
			t.Errorf("Contains(%d) = %v, want %v", tt.t, got, tt.want)
		}
	}
}

func TestDateMentions(t *testing.T) {
	loc := time.FixedZone("CEST", 2*3600)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, loc) }
	day := func(y int, m time.Month, dd int) Window { return Window{d(y, m, dd), d(y, m, dd+1)} }
	// Thursday 16 May 2024 and Monday 3 June 2024, mid-afternoon.
	thu := time.Date(2024, 5, 16, 15, 4, 5, 0, loc)
	mon := time.Date(2024, 6, 3, 15, 4, 5, 0, loc)
	isoDays := func(n int) (string, []Window) {
		var text []string
		var want []Window
		for i := range n {
			w := day(2023, 1, 1+i) // AddDate-style normalisation: 1 Feb is 32 Jan
			text = append(text, w.Since.Format(time.DateOnly))
			want = append(want, w)
		}
		return strings.Join(text, ", "), want
	}
	fortyDays, fortyWant := isoDays(40)
	tests := []struct {
		name string
		text string
		at   time.Time
		want []Window
	}{
		{"no date", "I had coffee with Anna", thu, nil},
		{"empty", "", thu, nil},
		{"only words that look like dates", "I may march on; the sun sat low; I fall often", thu, nil},
		{"one", "yesterday I went bowling", thu, []Window{day(2024, 5, 15)}},
		{"since a year", "since 2020", thu, []Window{{d(2020, 1, 1), d(2024, 5, 17)}}},
		{"since the day", "since the 7th of May", thu, []Window{{d(2024, 5, 7), d(2024, 5, 17)}}},
		{"since, then another date", "since 2020, and in March", thu, []Window{{d(2020, 1, 1), d(2024, 5, 17)}, {d(2024, 3, 1), d(2024, 4, 1)}}},
		{"several, in order of mention", "Yesterday I went bowling, last Friday we hiked, and last month was busy",
			thu, []Window{day(2024, 5, 15), day(2024, 5, 10), {d(2024, 4, 1), d(2024, 5, 1)}}},
		{"relative to another day", "Yesterday I went bowling, last Friday we hiked, and last month was busy",
			mon, []Window{day(2024, 6, 2), day(2024, 5, 31), {d(2024, 5, 1), d(2024, 6, 1)}}},
		{"in text order, not time order", "2023-05-07, then 2023-05-01 and today", thu,
			[]Window{day(2023, 5, 7), day(2023, 5, 1), day(2024, 5, 16)}},
		{"a phrase is one mention", "the day before yesterday", thu, []Window{day(2024, 5, 14)}},
		{"since runs to today", "since March, and in June", thu,
			[]Window{{d(2024, 3, 1), d(2024, 5, 17)}, {d(2023, 6, 1), d(2023, 7, 1)}}},
		{"repeats are kept", "today and today", thu, []Window{day(2024, 5, 16), day(2024, 5, 16)}},
		{"at most 32", strings.Repeat("yesterday ", 40), thu, slices.Repeat([]Window{day(2024, 5, 15)}, 32)},
		{"the first 32", fortyDays, thu, fortyWant[:32]},
		{"only the first 64 KiB is read", strings.Repeat("x ", 32<<10) + "yesterday", thu, nil},
		{"up to 64 KiB", strings.Repeat("x ", 32<<10-6) + "yesterday", thu, []Window{day(2024, 5, 15)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DateMentions(tt.text, tt.at)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DateMentions(%.60q, %v) mismatch (-want +got):\n%s", tt.text, tt.at, diff)
			}
		})
	}
}

// TestParseDateWindowIsUnion checks that ParseDateWindow spans exactly the
// mentions DateMentions returns, including its cap.
func TestParseDateWindowIsUnion(t *testing.T) {
	at := time.Date(2024, 5, 16, 15, 4, 5, 0, time.UTC)
	d := func(m time.Month, day int) time.Time { return time.Date(2024, m, day, 0, 0, 0, 0, time.UTC) }
	var many []string
	for i := range 40 {
		many = append(many, d(1, 1+i).Format(time.DateOnly))
	}
	tests := []struct {
		text string
		want Window
		ok   bool
	}{
		{"no date here", Window{}, false},
		{"last Friday and yesterday", Window{d(5, 10), d(5, 16)}, true},
		{"yesterday and last Friday", Window{d(5, 10), d(5, 16)}, true},
		{"in March, or last week", Window{d(3, 1), d(5, 13)}, true},
		// Only the first 32 mentions count: 1 January to 1 February.
		{strings.Join(many, " "), Window{d(1, 1), d(2, 2)}, true},
	}
	for _, tt := range tests {
		got, ok := ParseDateWindow(tt.text, at)
		if ok != tt.ok || !got.Since.Equal(tt.want.Since) || !got.Until.Equal(tt.want.Until) {
			t.Errorf("ParseDateWindow(%.60q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestWindowOverlaps(t *testing.T) {
	w := func(since, until int64) Window { return Window{time.Unix(since, 0), time.Unix(until, 0)} }
	base := w(100, 200)
	tests := []struct {
		name string
		o    Window
		want bool
	}{
		{"identical", w(100, 200), true},
		{"touching after: half-open, no shared instant", w(200, 300), false},
		{"touching before", w(0, 100), false},
		{"one second into it from before", w(0, 101), true},
		{"last second", w(199, 200), true},
		{"straddling the end", w(150, 250), true},
		{"inside", w(120, 130), true},
		{"containing", w(0, 1000), true},
		{"disjoint after", w(300, 400), false},
		{"disjoint before", w(0, 50), false},
		{"empty, inside: no instant to share", w(150, 150), false},
	}
	for _, tt := range tests {
		if got := base.Overlaps(tt.o); got != tt.want {
			t.Errorf("%s: %v.Overlaps(%v) = %v, want %v", tt.name, base, tt.o, got, tt.want)
		}
		if got := tt.o.Overlaps(base); got != tt.want {
			t.Errorf("%s: %v.Overlaps(%v) = %v, want %v (symmetry)", tt.name, tt.o, base, got, tt.want)
		}
	}
}

func FuzzDateMentions(f *testing.F) {
	for _, s := range []string{"yesterday I went bowling, last Friday we hiked", "since March, and in June",
		"2023-05-07 2023-05-01 today", "the day before yesterday", "since 2 May 2024 and 7th of May",
		"a couple of weeks ago", "last 3 months", "summer of 2022", "Feb 29", "9999-99-99",
		strings.Repeat("today ", 40), "since next week", "since tomorrow and since 2030", "\xff7th of \xffMay since"} {
		f.Add(s, int64(1715864645))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		at := time.Unix(unix%(1<<40), 0).UTC()
		ms := DateMentions(text, at)
		if len(ms) > maxMentions {
			t.Fatalf("DateMentions(%q, %v): %d windows, want at most %d", text, at, len(ms), maxMentions)
		}
		var union Window
		for i, m := range ms {
			if !m.Until.After(m.Since) {
				t.Fatalf("DateMentions(%q, %v)[%d] = [%v, %v): empty window", text, at, i, m.Since, m.Until)
			}
			if i == 0 || m.Since.Before(union.Since) {
				union.Since = m.Since
			}
			if i == 0 || m.Until.After(union.Until) {
				union.Until = m.Until
			}
		}
		w, ok := ParseDateWindow(text, at)
		if ok != (len(ms) > 0) || ok && (!w.Since.Equal(union.Since) || !w.Until.Equal(union.Until)) {
			t.Fatalf("ParseDateWindow(%q, %v) = %v, %v; want the union of %v", text, at, w, ok, ms)
		}
	})
}

func FuzzParseDateWindow(f *testing.F) {
	for _, s := range []string{"last Tuesday", "on 7 May 2023", "2023-05-07", "a couple of weeks ago", "since March",
		"Feb 29", "9999-99-99", "since 31 february", "the past 99999 years", "\xff7th of \xffMay"} {
		f.Add(s, int64(1715864645))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		at := time.Unix(unix%(1<<40), 0).UTC()
		w, ok := ParseDateWindow(text, at)
		if ok && !w.Until.After(w.Since) {
			t.Fatalf("ParseDateWindow(%q, %v) = [%v, %v): empty window", text, at, w.Since, w.Until)
		}
	})
}

func BenchmarkParseDateWindow(b *testing.B) {
	text := strings.Repeat("what did Caroline say about the adoption agency ", 3) + "last Tuesday?"
	at := time.Date(2024, 5, 16, 15, 4, 5, 0, time.UTC)
	for b.Loop() {
		ParseDateWindow(text, at)
	}
}
