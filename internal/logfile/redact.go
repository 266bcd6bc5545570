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
)

// Redacted stands for what Redact hides.
const (
	RedactedEmail = "[email]"
	RedactedToken = "[redacted]"
)

// Redact is a slog.HandlerOptions.ReplaceAttr: in string values and
// errors (the message included) it replaces e-mail addresses by
// RedactedEmail, and API keys, bearer tokens and long runs mixing upper
// case, lower case and digits by RedactedToken. It is a net under the
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
	return len(s) >= 8 && (strings.IndexByte(s, '@') >= 0 || strings.Contains(s, "AKIA") || strings.ContainsAny(s, "-_") || len(s) >= 32 || strings.Contains(strings.ToLower(s), "bearer"))
}

// RedactString is Redact for one string.
func RedactString(s string) string {
	s = emailRE.ReplaceAllString(s, RedactedEmail)
	s = keyRE.ReplaceAllString(s, RedactedToken)
	return opaqueRE.ReplaceAllStringFunc(s, func(m string) string {
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
	})
}
