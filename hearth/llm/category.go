package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Category is what kind of failure an [Error] is, in terms the owner can
// act on. It is safe to show: it carries no provider text.
type Category string

// Categories of [Error.Category].
const (
	// CategoryTimeout: a timeout ended the call (see Error.Timeout).
	CategoryTimeout Category = "timeout"
	// CategoryUnreachable: no connection to the provider (refused, no
	// such host, no route); see Error.Unreachable.
	CategoryUnreachable Category = "unreachable"
	// CategoryRateLimited: the provider is rate limiting (HTTP 429);
	// RetryAfter says for how long, when it said.
	CategoryRateLimited Category = "rate_limited"
	// CategoryRejectedKey: the provider refused the API key (401, 403).
	CategoryRejectedKey Category = "rejected_key"
	// CategoryOverloaded: the provider failed on its side (5xx, 529, an
	// overloaded or server error event).
	CategoryOverloaded Category = "overloaded"
	// CategoryBadRequest: the provider refused the request itself (other
	// 4xx); retrying the same request will not help.
	CategoryBadRequest Category = "bad_request"
	// CategoryCancelled: the caller gave up.
	CategoryCancelled Category = "cancelled"
	// CategoryOther: anything else, such as a reply that could not be
	// decoded or a connection cut mid-reply.
	CategoryOther Category = "other"
)

// Category classifies e by its status, the error event's code, and the
// transport error underneath.
func (e *Error) Category() Category {
	var te *TimeoutError
	switch {
	case errors.As(e.Err, &te):
		return CategoryTimeout
	case errors.Is(e.Err, context.Canceled):
		return CategoryCancelled
	case e.Status == http.StatusTooManyRequests:
		return CategoryRateLimited
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return CategoryRejectedKey
	case e.Status == http.StatusRequestTimeout:
		return CategoryTimeout
	case e.Status >= http.StatusInternalServerError:
		return CategoryOverloaded
	case e.Status >= http.StatusBadRequest:
		return CategoryBadRequest
	}
	if c := codeCategory(e.Err); c != "" {
		return c
	}
	if e.Unreachable() != "" {
		return CategoryUnreachable
	}
	if errors.Is(e.Err, context.DeadlineExceeded) {
		return CategoryTimeout
	}
	return CategoryOther
}

// Timeout is the timeout that ended the call: TimeoutFirstByte,
// TimeoutIdle or TimeoutTotal, with its length; 0 and 0 when no timeout
// of the adapter's did (a 408 has none).
func (e *Error) Timeout() (TimeoutKind, time.Duration) {
	var te *TimeoutError
	if errors.As(e.Err, &te) {
		return te.Kind, te.After
	}
	return 0, 0
}

// Unreachable names, in a few safe words, why no connection to the
// provider was made: "connection refused", "host not found", "no route
// to the host", "could not connect"; "" when a connection was made (or
// the failure is another kind).
func (e *Error) Unreachable() string {
	if e.Status != 0 {
		return ""
	}
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(e.Err, &dns):
		return "host not found"
	case errors.Is(e.Err, syscall.EHOSTUNREACH), errors.Is(e.Err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(e.Err, &op) && op.Op == "dial":
		return "could not connect"
	}
	return ""
}

// codeCategory classifies an error event inside a stream (or an error
// reply without a status) by the provider's code or type.
func codeCategory(err error) Category {
	var code string
	var re *responsesError
	var ae *anthropicAPIError
	switch {
	case errors.As(err, &re):
		code = re.Code
	case errors.As(err, &ae):
		code = ae.typ
	default:
		return ""
	}
	switch code {
	case "rate_limit_exceeded", "rate_limit_error":
		return CategoryRateLimited
	case "server_error", "internal_error", "overloaded", "overloaded_error", "service_unavailable", "api_error":
		return CategoryOverloaded
	case "timeout_error":
		return CategoryTimeout
	case "authentication_error", "permission_error", "invalid_api_key":
		return CategoryRejectedKey
	case "invalid_request_error":
		return CategoryBadRequest
	}
	return ""
}
