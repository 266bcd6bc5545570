package recall

import (
	"strings"
	"testing"
	"time"
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
