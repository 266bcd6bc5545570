package config

import (
	"fmt"
	"log/slog"
)

// redacted is how every rendering of a set Secret reads.
const redacted = "[redacted]"

// Secret is a value that must never be shown: an API key or the auth
// token. Its String, Format (every fmt verb, %#v included), MarshalText
// (JSON and the like) and LogValue say "[redacted]" when it is set and ""
// when it is not; only Reveal returns the value.
type Secret struct {
	v string
}

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string { return s.v }

// IsSet reports whether the value is not empty.
func (s Secret) IsSet() bool { return s.v != "" }

// Equal compares two secrets (go-cmp uses it).
func (s Secret) Equal(o Secret) bool { return s.v == o.v }

// String is "[redacted]", or "" when unset.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return redacted
}

// Format renders String for every verb, so that no verb (%x, %d, %#v...)
// reaches the value by reflection.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	fmt.Fprint(f, s.String())
}

// MarshalText is String's text.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue is String's text.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
