package logfile

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"mail owner@example.com now", "mail [email] now"},
		{"key sk-proj-abcDEF1234567890xyz", "key [redacted]"},
		{"xai-AbCdEf0123456789 and sk_live_0123456789", "[redacted] and [redacted]"},
		{"Authorization: Bearer eyJhbGciOi.x-y_z", "Authorization: [redacted]"},
		{"token Zq3xT9vB2nLk8sWd4fGh7jKm1pRt6yUe", "token [redacted]"},
		// Account numbers: IBANs (with a valid check), long digit runs.
		{"pay to GB82 WEST 1234 5698 7654 32 today", "pay to [account] today"},
		{"iban=DE89370400440532013000", "iban=[account]"},
		{"NL91ABNA0417164300.", "[account]."},
		{"card 4111 1111 1111 1111 expires", "card [account] expires"},
		{"acct 000123456789", "acct [account]"},
		{"ref 1234-5678-9012-3456", "ref [account]"},
		// Kept: an IBAN-shaped code whose check fails, short numbers, dates, phone-length runs.
		{"part GB00WEST12345698765432", "part GB00WEST12345698765432"},
		{"port 7745 and 11 digits 12345678901", "port 7745 and 11 digits 12345678901"},
		{"at 2026-11-26 10:12:00", "at 2026-11-26 10:12:00"},
		// Kept: request ids (ULIDs), hashes, paths, words.
		{"turn 01HQ0000000000000000000001 done", "turn 01HQ0000000000000000000001 done"},
		{"commit 3f786850e387550fdab836ed7e6dc881de23001b", "commit 3f786850e387550fdab836ed7e6dc881de23001b"},
		{"knowledge/people/ada-lovelace.md", "knowledge/people/ada-lovelace.md"},
		{"dir=/tmp/TestHTTPDoorE2E3712283845/001/root", "dir=/tmp/TestHTTPDoorE2E3712283845/001/root"},
		// A secret as a segment of a path is still hidden.
		{"/run/Zq3xT9vB2nLk8sWd4fGh7jKm1pRt6yUe/x", "/run/[redacted]/x"},
		{"short", "short"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := RedactString(tc.in); got != tc.want {
			t.Errorf("RedactString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Through a handler: the message, string attributes (in groups too) and
// errors are redacted; other kinds are left alone.
func TestRedactHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: Redact}))
	log.Info("from ada@example.org",
		"key", "sk-abcdefghijklmnop",
		slog.Group("req", "auth", "Bearer abcdefghijkl"),
		"err", errors.New("401 for owner@example.com"),
		"n", 42)
	got := b.String()
	for _, leak := range []string{"ada@", "sk-abc", "abcdefghijkl", "owner@"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q leaked into %q", leak, got)
		}
	}
	for _, kept := range []string{`msg="from [email]"`, "key=[redacted]", "req.auth=[redacted]", `err="401 for [email]"`, "n=42"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q missing from %q", kept, got)
		}
	}
}

// FuzzRedact: RedactString never panics, is idempotent, and whatever it
// returns holds no e-mail address it would hide.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"owner@example.com", "sk-abcdefghijklmnop", "Bearer x.y.z-123456", "Zq3xT9vB2nLk8sWd4fGh7jKm1pRt6yUe", "a@b@c.d", "@@..", "sk-", "GB82 WEST 1234 5698 7654 32", "4111-1111-1111-1111"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := RedactString(s)
		if again := RedactString(r); again != r {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, r, again)
		}
		if emailRE.MatchString(r) {
			t.Fatalf("%q still holds an e-mail address: %q", s, r)
		}
	})
}
