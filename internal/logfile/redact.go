package logfile

import (
	"log/slog"
	"regexp"
	"strings"
)

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)+`)
	// A key by its known prefix, or a bearer credential.
	keyRE = regexp.MustCompile(`\b(sk-|sk_|xai-|ghp_|gho_|github_pat_|glpat-|AKIA)[A-Za-z0-9_\-]{8,}|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*`)
	// A long opaque run: checked for mixed case and digits below, so that
	// hex hashes, ULIDs (upper case and digits) and words stay.
	opaqueRE = regexp.MustCompile(`[A-Za-z0-9_\-+/]{32,}={0,2}`)
	// An IBAN (country, check digits, 11 to 30 letters and digits, in
	// groups of four or not), kept unless its mod-97 check holds.
	ibanRE = regexp.MustCompile(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b`)
	// An account or card number: twelve digits or more, possibly in
	// groups split by single spaces or dashes.
	digitsRE = regexp.MustCompile(`\b[0-9](?:[ \-]?[0-9]){11,}\b`)
)

// Redacted stands for what Redact hides.
const (
	RedactedEmail = "[email]"
	RedactedToken = "[redacted]"
	// RedactedAccount stands for an IBAN or a long run of digits (an
	// account or card number).
	RedactedAccount = "[account]"
)

// Redact is a slog.HandlerOptions.ReplaceAttr: in string values and
// errors (the message included) it replaces e-mail addresses by
// RedactedEmail, API keys, bearer tokens and long runs mixing upper
// case, lower case and digits by RedactedToken, and account numbers
// (IBANs, runs of twelve digits or more) by RedactedAccount. It is a net under the
// rule that secrets are never logged, not a licence to log them.
func Redact(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); mayHide(s) {
			a.Value = slog.StringValue(RedactString(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			if s := err.Error(); mayHide(s) {
				a.Value = slog.StringValue(RedactString(s))
			}
		}
	}
	return a
}

// mayHide is a cheap test that s could hold something Redact hides.
func mayHide(s string) bool {
	return len(s) >= 8 && (strings.IndexByte(s, '@') >= 0 || digits(s) >= 12 || strings.Contains(s, "AKIA") || strings.ContainsAny(s, "-_") || len(s) >= 32 || strings.Contains(strings.ToLower(s), "bearer"))
}

// RedactString is Redact for one string.
func RedactString(s string) string {
	s = emailRE.ReplaceAllString(s, RedactedEmail)
	s = keyRE.ReplaceAllString(s, RedactedToken)
	s = ibanRE.ReplaceAllStringFunc(s, func(m string) string {
		if ibanValid(m) {
			return RedactedAccount
		}
		return m
	})
	s = digitsRE.ReplaceAllString(s, RedactedAccount)
	return opaqueRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "/") {
			// An absolute path (a test's temp dir mixes all three):
			// only a long segment of it may be a secret.
			segs := strings.Split(m, "/")
			for i, seg := range segs {
				if len(seg) >= 32 {
					segs[i] = hideOpaque(seg)
				}
			}
			return strings.Join(segs, "/")
		}
		return hideOpaque(m)
	})
}

// hideOpaque is RedactedToken when m mixes upper case, lower case and
// digits, else m.
func hideOpaque(m string) string {
	{
		var upper, lower, digit bool
		for _, r := range m {
			switch {
			case r >= 'A' && r <= 'Z':
				upper = true
			case r >= 'a' && r <= 'z':
				lower = true
			case r >= '0' && r <= '9':
				digit = true
			}
		}
		if upper && lower && digit {
			return RedactedToken
		}
		return m
	}
}

func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

// ibanValid checks an IBAN's ISO 7064 mod-97 check digits, so that a
// code that merely looks like one (a part number) is kept.
func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	r := 0
	for _, c := range s[4:] + s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = (r*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			r = (r*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return r == 1
}
