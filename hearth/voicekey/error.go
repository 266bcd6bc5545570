package voicekey

import (
	"fmt"
	"net/http"
	"time"
)

// Category is what kind of failure a mint met.
type Category string

// Categories of Error.
const (
	CategoryRejectedKey Category = "rejected_key" // 401, 403
	CategoryBadRequest  Category = "bad_request"  // 400 and other 4xx (xAI answers a bad key with 400)
	CategoryRateLimited Category = "rate_limited" // 429
	CategoryOverloaded  Category = "overloaded"   // 5xx
	CategoryUnreachable Category = "unreachable"  // no connection
	CategoryTimeout     Category = "timeout"      // no answer within the timeout
	CategoryBadResponse Category = "bad_response" // a 2xx that is not a client secret
)

// Error is a failed mint. Its message is safe to show: it names the
// category and what to do, never the key, the provider's body or the
// base URL; the cause (Unwrap) is for the log.
type Error struct {
	Category   Category
	Provider   string
	Status     int
	RetryAfter time.Duration
	cause      error
}

func (m *Minter) fail(c Category, status int, after time.Duration, cause error) *Error {
	e := &Error{Category: c, Provider: m.s.Provider, Status: status, RetryAfter: after, cause: cause}
	m.s.Log.Warn("voice credential not minted", "detail", e.LogDetail())
	return e
}

func categorize(status int) Category {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return CategoryRejectedKey
	case status == http.StatusTooManyRequests:
		return CategoryRateLimited
	case status >= 500:
		return CategoryOverloaded
	}
	return CategoryBadRequest
}

// KeyVariable names the variable that holds provider's API key.
func KeyVariable(provider string) string {
	if provider == OpenAI {
		return "OPENAI_API_KEY"
	}
	return "XAI_API_KEY"
}

func (e *Error) Error() string {
	const prefix = "could not start voice: "
	switch e.Category {
	case CategoryRejectedKey:
		return fmt.Sprintf(prefix+"the voice provider rejected the API key (HTTP %d) — set %s to a valid key", e.Status, KeyVariable(e.Provider))
	case CategoryBadRequest:
		return fmt.Sprintf(prefix+"the voice provider refused the request (HTTP %d) — check %s and voice.model", e.Status, KeyVariable(e.Provider))
	case CategoryRateLimited:
		if e.RetryAfter > 0 {
			return fmt.Sprintf(prefix+"the voice provider is rate limiting — try again in %d s", int(e.RetryAfter.Seconds()))
		}
		return prefix + "the voice provider is rate limiting — try again in a minute"
	case CategoryOverloaded:
		return fmt.Sprintf(prefix+"the voice provider is overloaded or failing (HTTP %d) — try again later", e.Status)
	case CategoryUnreachable:
		return prefix + "the voice provider is unreachable — check voice.base_url (MNEMO_VOICE_BASE_URL) and the network"
	case CategoryTimeout:
		return prefix + "the voice provider did not answer in time — try again"
	}
	return prefix + "the voice provider's answer was not a client secret; details are in hearth's log"
}

// Unwrap is the cause, for the log.
func (e *Error) Unwrap() error { return e.cause }

// LogDetail is the message with the cause, for the log (never shown to
// a client).
func (e *Error) LogDetail() string {
	if e.cause == nil {
		return e.Error()
	}
	return e.Error() + " (" + e.cause.Error() + ")"
}
