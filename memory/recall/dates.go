package recall

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Window is a span of time [Since, Until).
type Window struct {
	Since, Until time.Time
}

// Contains reports whether t is in the window.
func (w Window) Contains(t time.Time) bool {
	return !t.Before(w.Since) && t.Before(w.Until)
}

// maxDateText bounds the text ParseDateWindow reads.
const maxDateText = 64 << 10

// ParseDateWindow finds the dates a question names, relative to at, and
// returns the window they span (several dates give the span from the
// earliest to the latest). Days are calendar days in at's location, weeks
// start on Monday. It understands:
//
//   - today, tonight, this morning/afternoon/evening, yesterday, last
//     night, the day before yesterday
//   - this/last/next week, weekend, month, year; the past/last N days,
//     weeks, months
//   - weekdays: "Tuesday" and "on Tuesday" (the latest one up to today),
//     "last Tuesday" (the latest one before today), "this Tuesday" (in
//     this week), "next Tuesday" (the first one after today)
//   - N days/weeks/months/years ago, with N a number, a word up to twelve,
//     "a", "a couple of" or "a few": N days ago is that day; N weeks ago is
//     the week around that day, N months ago ±15 days, N years ago ±half a
//     year
//   - calendar dates: "7 May 2023", "on the 7th of May", "May 7, 2023",
//     "May 7th", "May 2023", "in May", "last May", ISO "2023-05-07" and
//     "2023-05", "in 2023"; a date without a year is the latest one up to
//     at. "May" and "March" need a day, a year or a preposition ("in
//     May") to count as months.
//   - seasons: "last summer", "this winter", "summer 2022", "in the
//     spring" (northern: spring is March–May, winter December–February)
//   - "since <date>" runs from that date to the end of today.
//
// It reports false when the text names no date. It never panics and reads
// at most 64 KiB of text.
func ParseDateWindow(text string, at time.Time) (Window, bool) {
	var out Window
	found := false
	for _, w := range DateMentions(text, at) {
		if !found {
			out, found = w, true
			continue
		}
		if w.Since.Before(out.Since) {
			out.Since = w.Since
		}
		if w.Until.After(out.Until) {
			out.Until = w.Until
		}
	}
	return out, found
}

// maxMentions bounds how many windows DateMentions returns.
const maxMentions = 32

// DateMentions returns the windows of the dates text names, relative to at,
// in the order they appear (at most 32), understanding what
// ParseDateWindow does. A document's mentions say what time it is about:
// "yesterday I went bowling", said on 17 March, is about 16 March.
func DateMentions(text string, at time.Time) []Window {
	if len(text) > maxDateText {
		text = text[:maxDateText]
	}
	p := dateParser{toks: dateTokens(text), at: at, today: midnight(at)}
	var out []Window
	for i := 0; i < len(p.toks) && len(out) < maxMentions; {
		w, n := p.match(i)
		if n == 0 {
			i++
			continue
		}
		if p.since(i) {
			w.Until = p.today.AddDate(0, 0, 1)
		}
		if w.Until.After(w.Since) {
			out = append(out, w)
		}
		i += n
	}
	return out
}

// since reports whether the date matched at toks[i] follows "since": the
// match starts with it ("since 2020"), or it comes just before, perhaps
// with "the", "in" or "on" between ("since the 7th of May").
func (p *dateParser) since(i int) bool {
	if p.toks[i].word == "since" {
		return true
	}
	for j := i - 1; j >= 0 && j >= i-2; j-- {
		switch p.toks[j].word {
		case "since":
			return true
		case "the", "in", "on":
			continue
		}
		return false
	}
	return false
}

// Overlaps reports whether w and o share any instant.
func (w Window) Overlaps(o Window) bool {
	return w.Since.Before(w.Until) && o.Since.Before(o.Until) &&
		w.Since.Before(o.Until) && o.Since.Before(w.Until)
}

// dateToken is a lower-cased word, a number (ordinals like "7th" are
// numbers too) or an ISO date.
type dateToken struct {
	word  string
	num   int // when isNum
	isNum bool
	iso   []int // year, month[, day] for "2023-05[-07]"
}

func dateTokens(text string) []dateToken {
	var toks []dateToken
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(r):
			j := i
			for j < len(text) {
				r, s := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsLetter(r) {
					break
				}
				j += s
			}
			toks = append(toks, dateToken{word: strings.ToLower(text[i:j])})
			i = j
		case '0' <= r && r <= '9':
			j := i
			for j < len(text) && (isDigit(text[j]) || (text[j] == '-' || text[j] == '/') && j+1 < len(text) && isDigit(text[j+1])) {
				j++
			}
			toks = append(toks, numberToken(text[i:j]))
			// An ordinal suffix belongs to the number.
			if k := j + 2; k <= len(text) {
				switch strings.ToLower(text[j:k]) {
				case "st", "nd", "rd", "th":
					if k == len(text) || !unicode.IsLetter(rune(text[k])) {
						j = k
					}
				}
			}
			i = j
		default:
			i += size
		}
	}
	return toks
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// numberToken parses "7", "2023-05-07", "2023/05" and the like.
func numberToken(s string) dateToken {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '/' })
	nums := make([]int, 0, len(parts))
	for _, p := range parts {
		if len(p) > 9 {
			return dateToken{word: s}
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return dateToken{word: s}
		}
		nums = append(nums, n)
	}
	switch {
	case len(nums) == 1:
		return dateToken{word: s, num: nums[0], isNum: true}
	case (len(nums) == 2 || len(nums) == 3) && len(parts[0]) == 4:
		return dateToken{word: s, iso: nums}
	}
	return dateToken{word: s}
}

type dateParser struct {
	toks  []dateToken
	at    time.Time
	today time.Time // midnight of at
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func (p *dateParser) word(i int) string {
	if i < 0 || i >= len(p.toks) {
		return ""
	}
	return p.toks[i].word
}

func (p *dateParser) day(offset int) Window {
	d := p.today.AddDate(0, 0, offset)
	return Window{d, d.AddDate(0, 0, 1)}
}

// weekStart is the Monday of t's week.
func weekStart(t time.Time) time.Time {
	wd := (int(t.Weekday()) + 6) % 7 // Monday = 0
	return midnight(t).AddDate(0, 0, -wd)
}

func monthStart(y int, m time.Month, loc *time.Location) time.Time {
	return time.Date(y, m, 1, 0, 0, 0, 0, loc)
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "tues": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

var months = map[string]time.Month{
	"january": time.January, "february": time.February, "march": time.March, "april": time.April,
	"may": time.May, "june": time.June, "july": time.July, "august": time.August, "september": time.September,
	"october": time.October, "november": time.November, "december": time.December,
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April, "jun": time.June,
	"jul": time.July, "aug": time.August, "sep": time.September, "sept": time.September, "oct": time.October,
	"nov": time.November, "dec": time.December,
}

// seasons map to their first month; each lasts three.
var seasons = map[string]time.Month{
	"spring": time.March, "summer": time.June, "autumn": time.September, "fall": time.September, "winter": time.December,
}

var numberWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3, "several": 3,
}

// monthPrepositions make "may" and "march" months.
var monthPrepositions = map[string]bool{
	"in": true, "during": true, "since": true, "of": true, "last": true, "this": true, "next": true,
	"early": true, "late": true, "mid": true, "until": true, "through": true, "throughout": true,
}

// match tries every pattern at token i and returns the window and the
// number of tokens it used (0: no match).
func (p *dateParser) match(i int) (Window, int) {
	t := p.toks[i]
	w0, w1, w2 := t.word, p.word(i+1), p.word(i+2)
	switch {
	case t.iso != nil:
		return p.iso(t.iso)
	case w0 == "today" || w0 == "tonight":
		return p.day(0), 1
	case w0 == "this" && (w1 == "morning" || w1 == "afternoon" || w1 == "evening"):
		return p.day(0), 2
	case w0 == "yesterday":
		return p.day(-1), 1
	case w0 == "day" && w1 == "before" && w2 == "yesterday":
		return p.day(-2), 3
	case w0 == "last" && w1 == "night":
		return p.day(-1), 2
	case w0 == "this" || w0 == "last" || w0 == "next" || w0 == "past" || w0 == "previous":
		if w, n := p.relative(i); n > 0 {
			return w, n
		}
	case w0 == "in" || w0 == "during" || w0 == "since" || w0 == "of" || w0 == "on":
		// A preposition before a bare year; months and dates match at the
		// next token.
		if t1 := p.tok(i + 1); t1.isNum && t1.num >= 1900 && t1.num <= 2200 {
			y := time.Date(t1.num, 1, 1, 0, 0, 0, 0, p.at.Location())
			return Window{y, y.AddDate(1, 0, 0)}, 2
		}
	}
	if wd, ok := weekdays[w0]; ok && len(w0) > 5 {
		// Bare abbreviations ("sat", "sun", "wed") are too often words.
		return p.weekday(wd, ""), 1
	}
	if n, used := p.count(i); used > 0 {
		if w, more := p.ago(i+used, n); more > 0 {
			return w, used + more
		}
	}
	if t.isNum {
		if w, n := p.dayMonth(i); n > 0 {
			return w, n
		}
	}
	if _, ok := months[w0]; ok {
		return p.monthFirst(i)
	}
	if s, ok := seasons[w0]; ok {
		if t1 := p.tok(i + 1); t1.isNum && t1.num >= 1900 && t1.num <= 2200 {
			return p.season(s, t1.num), 2
		}
		if w1 == "of" {
			if t2 := p.tok(i + 2); t2.isNum && t2.num >= 1900 && t2.num <= 2200 {
				return p.season(s, t2.num), 3
			}
		}
		if prev := p.word(i - 1); prev == "the" || prev == "in" || prev == "during" {
			return p.season(s, p.latestSeasonYear(s, false)), 1
		}
	}
	return Window{}, 0
}

func (p *dateParser) tok(i int) dateToken {
	if i < 0 || i >= len(p.toks) {
		return dateToken{}
	}
	return p.toks[i]
}

// relative handles "this/last/next/past/previous …" at token i.
func (p *dateParser) relative(i int) (Window, int) {
	which := p.word(i)
	if which == "previous" {
		which = "last"
	}
	w1 := p.word(i + 1)
	// "the past 3 days", "last two weeks": a span ending now.
	if which == "past" || which == "last" {
		if n, used := p.count(i + 1); used > 0 {
			if unit := p.word(i + 1 + used); unit != "" {
				if d, ok := unitDays(unit); ok && n > 0 {
					end := p.today.AddDate(0, 0, 1)
					var start time.Time
					switch d {
					case 30:
						start = p.today.AddDate(0, -n, 0)
					case 365:
						start = p.today.AddDate(-n, 0, 0)
					default:
						start = p.today.AddDate(0, 0, -n*d)
					}
					return Window{start, end}, 2 + used
				}
			}
		}
	}
	if which == "past" {
		// "the past week": the span of one unit ending today.
		if d, ok := unitDays(w1); ok {
			return Window{p.today.AddDate(0, 0, 1-d), p.today.AddDate(0, 0, 1)}, 2
		}
		return Window{}, 0
	}
	step := map[string]int{"this": 0, "last": -1, "next": 1}[which]
	loc := p.at.Location()
	switch w1 {
	case "week":
		s := weekStart(p.at).AddDate(0, 0, 7*step)
		return Window{s, s.AddDate(0, 0, 7)}, 2
	case "weekend":
		s := weekStart(p.at).AddDate(0, 0, 7*step+5)
		return Window{s, s.AddDate(0, 0, 2)}, 2
	case "month":
		s := monthStart(p.at.Year(), p.at.Month(), loc).AddDate(0, step, 0)
		return Window{s, s.AddDate(0, 1, 0)}, 2
	case "year":
		s := time.Date(p.at.Year()+step, 1, 1, 0, 0, 0, 0, loc)
		return Window{s, s.AddDate(1, 0, 0)}, 2
	}
	if wd, ok := weekdays[w1]; ok {
		return p.weekday(wd, which), 2
	}
	if m, ok := months[w1]; ok {
		y := p.at.Year()
		switch which {
		case "last":
			if m >= p.at.Month() {
				y--
			}
		case "next":
			if m <= p.at.Month() {
				y++
			}
		}
		s := monthStart(y, m, loc)
		return Window{s, s.AddDate(0, 1, 0)}, 2
	}
	if s, ok := seasons[w1]; ok {
		y := p.latestSeasonYear(s, which == "last")
		if which == "next" {
			y++
		}
		return p.season(s, y), 2
	}
	return Window{}, 0
}

// unitDays maps a time unit to days (months 30, years 365).
func unitDays(unit string) (int, bool) {
	switch strings.TrimSuffix(unit, "s") {
	case "day":
		return 1, true
	case "week":
		return 7, true
	case "month":
		return 30, true
	case "year":
		return 365, true
	}
	return 0, false
}

// count reads a count at token i: "3", "three", "a", "a couple of",
// "a few". It returns the count and the tokens used.
func (p *dateParser) count(i int) (int, int) {
	t := p.tok(i)
	if t.isNum && t.num > 0 && t.num < 10000 {
		return t.num, 1
	}
	n, ok := numberWords[t.word]
	if !ok {
		return 0, 0
	}
	used := 1
	if t.word == "a" || t.word == "an" {
		if m, ok := numberWords[p.word(i+1)]; ok && m > 1 {
			n, used = m, 2
		}
	}
	if p.word(i+used) == "of" {
		used++
	}
	return n, used
}

// ago handles "<unit> ago" at token i after a count n.
func (p *dateParser) ago(i, n int) (Window, int) {
	d, ok := unitDays(p.word(i))
	if !ok || p.word(i+1) != "ago" {
		return Window{}, 0
	}
	switch d {
	case 1:
		return p.day(-n), 2
	case 7:
		c := p.today.AddDate(0, 0, -7*n)
		return Window{c.AddDate(0, 0, -3), c.AddDate(0, 0, 4)}, 2
	case 30:
		c := p.today.AddDate(0, -n, 0)
		return Window{c.AddDate(0, 0, -15), c.AddDate(0, 0, 16)}, 2
	default:
		c := p.today.AddDate(-n, 0, 0)
		return Window{c.AddDate(0, -6, 0), c.AddDate(0, 6, 1)}, 2
	}
}

// weekday resolves a weekday: which is "" (latest up to today), "last"
// (latest before today), "this" (in this week) or "next" (first after
// today).
func (p *dateParser) weekday(wd time.Weekday, which string) Window {
	back := (int(p.today.Weekday()) - int(wd) + 7) % 7
	switch which {
	case "last":
		if back == 0 {
			back = 7
		}
	case "next":
		fwd := (int(wd) - int(p.today.Weekday()) + 7) % 7
		if fwd == 0 {
			fwd = 7
		}
		return p.day(fwd)
	case "this":
		d := weekStart(p.at).AddDate(0, 0, (int(wd)+6)%7)
		return Window{d, d.AddDate(0, 0, 1)}
	}
	return p.day(-back)
}

// iso resolves an ISO date token.
func (p *dateParser) iso(n []int) (Window, int) {
	loc := p.at.Location()
	y, m := n[0], n[1]
	if m < 1 || m > 12 {
		return Window{}, 0
	}
	if len(n) == 2 {
		s := monthStart(y, time.Month(m), loc)
		return Window{s, s.AddDate(0, 1, 0)}, 1
	}
	if !validDay(y, time.Month(m), n[2]) {
		return Window{}, 0
	}
	d := time.Date(y, time.Month(m), n[2], 0, 0, 0, 0, loc)
	return Window{d, d.AddDate(0, 0, 1)}, 1
}

func validDay(y int, m time.Month, d int) bool {
	return d >= 1 && d <= 31 && time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Day() == d
}

// year reads an optional year at token i.
func (p *dateParser) year(i int) (int, bool) {
	if t := p.tok(i); t.isNum && t.num >= 1900 && t.num <= 2200 {
		return t.num, true
	}
	return 0, false
}

// dateOrLatest is the day d/m/y, or without a year the latest such day up
// to today.
func (p *dateParser) dateOrLatest(d int, m time.Month, y int, hasYear bool) (Window, bool) {
	loc := p.at.Location()
	if !hasYear {
		y = p.at.Year()
		if !validDay(y, m, d) || time.Date(y, m, d, 0, 0, 0, 0, loc).After(p.today) {
			y--
		}
		if !validDay(y, m, d) {
			y -= 3 // 29 February: back to a leap year (close enough)
		}
	}
	if !validDay(y, m, d) {
		return Window{}, false
	}
	s := time.Date(y, m, d, 0, 0, 0, 0, loc)
	return Window{s, s.AddDate(0, 0, 1)}, true
}

// dayMonth handles "7 May [2023]" and "7th of May [2023]" at number i.
func (p *dateParser) dayMonth(i int) (Window, int) {
	d := p.toks[i].num
	j := i + 1
	if p.word(j) == "of" {
		j++
	}
	m, ok := months[p.word(j)]
	if !ok || d < 1 || d > 31 {
		return Window{}, 0
	}
	y, hasYear := p.year(j + 1)
	w, ok := p.dateOrLatest(d, m, y, hasYear)
	if !ok {
		return Window{}, 0
	}
	n := j + 1 - i
	if hasYear {
		n++
	}
	return w, n
}

// monthFirst handles "May 7[, 2023]", "May 2023" and "in May" at month i.
func (p *dateParser) monthFirst(i int) (Window, int) {
	w0 := p.word(i)
	m := months[w0]
	loc := p.at.Location()
	if t := p.tok(i + 1); t.isNum && t.num >= 1 && t.num <= 31 {
		y, hasYear := p.year(i + 2)
		if w, ok := p.dateOrLatest(t.num, m, y, hasYear); ok {
			if hasYear {
				return w, 3
			}
			return w, 2
		}
	}
	if y, ok := p.year(i + 1); ok {
		s := monthStart(y, m, loc)
		return Window{s, s.AddDate(0, 1, 0)}, 2
	}
	if (w0 == "may" || w0 == "march" || w0 == "mar") && !monthPrepositions[p.word(i-1)] {
		return Window{}, 0
	}
	if len(w0) == 3 && !monthPrepositions[p.word(i-1)] {
		// Bare abbreviations ("jan", "dec", "sat") are too often words.
		return Window{}, 0
	}
	y := p.at.Year()
	if m > p.at.Month() {
		y--
	}
	s := monthStart(y, m, loc)
	return Window{s, s.AddDate(0, 1, 0)}, 1
}

// latestSeasonYear is the year in which the latest season s up to now
// began ("this summer", "in the summer"); strict skips a season still
// under way ("last summer" in July is the previous year's).
func (p *dateParser) latestSeasonYear(s time.Month, strict bool) int {
	y := p.at.Year()
	if monthStart(y, s, p.at.Location()).After(p.at) {
		y--
	}
	if strict && p.at.Before(monthStart(y, s, p.at.Location()).AddDate(0, 3, 0)) {
		y--
	}
	return y
}

func (p *dateParser) season(s time.Month, y int) Window {
	start := monthStart(y, s, p.at.Location())
	return Window{start, start.AddDate(0, 3, 0)}
}
