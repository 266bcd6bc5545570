package httpdoor

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// apiError is a refusal as the door answers it: a status and a body in
// one shape on every route, OpenAI's error object (so that OpenAI clients
// read it) with seed 002's request_id, clarify and retry_after_ms beside
// it. Messages are fixed or from the core's Problem, safe to show.
type apiError struct {
	status     int
	typ, code  string
	msg        string
	param      string
	clarify    *clarify
	retryAfter time.Duration
	cause      error // logged, never sent
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *apiError) Unwrap() error { return e.cause }

// clarify says what is wrong with a request's fields (seed 002, 422).
type clarify struct {
	MissingFields []string `json:"missing_fields"`
	BadTypes      []string `json:"bad_types"`
	OutOfRange    []string `json:"out_of_range"`
	UnknownFields []string `json:"unknown_fields,omitempty"`
}

func (c *clarify) empty() bool {
	return len(c.MissingFields)+len(c.BadTypes)+len(c.OutOfRange)+len(c.UnknownFields) == 0
}

var (
	errUnauthenticated = &apiError{status: http.StatusUnauthorized, typ: "authentication_error", code: "unauthenticated",
		msg: "missing or wrong bearer token (Authorization: Bearer <token>)"}
	errForbidden = &apiError{status: http.StatusForbidden, typ: "permission_error", code: "forbidden",
		msg: "this credential may not do that"}
	errNotFound = &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
		msg: "no such route"}
	errShuttingDown = &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down",
		msg: "hearth is shutting down; try again shortly"}
)

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "bad_request", msg: msg}
}

func unprocessable(msg string, c *clarify) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, typ: "invalid_request_error", code: "invalid_fields", msg: msg, clarify: c}
}

func unavailable(msg string, cause error) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "unavailable", msg: msg, cause: cause}
}

func upstream(msg string, cause error) *apiError {
	return &apiError{status: http.StatusBadGateway, typ: "server_error", code: "upstream_error", msg: msg, cause: cause}
}

// fromProblem maps a refusal of the core to a status. Its message was
// made to be shown.
func fromProblem(p *hearth.Problem) *apiError {
	e := &apiError{typ: "server_error", code: p.Code, msg: p.Message}
	switch p.Code {
	case hearth.CodeBadRequest:
		e.status, e.typ = http.StatusBadRequest, "invalid_request_error"
	case hearth.CodeUnavailable, hearth.CodeShuttingDown, hearth.CodeNoProvider:
		e.status = http.StatusServiceUnavailable
	case hearth.CodeProviderError, hearth.CodeContextOverflow:
		e.status = http.StatusBadGateway
	case hearth.CodeConfigInvalid:
		e.status = http.StatusConflict
	default:
		e.status = http.StatusInternalServerError
	}
	return e
}

func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var p *hearth.Problem
	if errors.As(err, &p) {
		return fromProblem(p)
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "internal",
		msg: "hearth could not answer; details are in hearth's log", cause: err}
}

type errorBody struct {
	Error        errorObject `json:"error"`
	RequestID    string      `json:"request_id"`
	Clarify      *clarify    `json:"clarify,omitempty"`
	RetryAfterMS int64       `json:"retry_after_ms,omitempty"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

func writeError(c *call, e *apiError) {
	body := errorBody{
		Error:     errorObject{Message: e.msg, Type: e.typ, Code: e.code},
		RequestID: c.id,
		Clarify:   e.clarify,
	}
	if e.param != "" {
		body.Error.Param = &e.param
	}
	if e.retryAfter > 0 {
		body.RetryAfterMS = e.retryAfter.Milliseconds()
		c.w.Header().Set("Retry-After", strconv.FormatInt(int64((e.retryAfter+time.Second-1)/time.Second), 10))
	}
	if e.status == http.StatusUnauthorized {
		c.w.Header().Set("WWW-Authenticate", `Bearer realm="hearth"`)
	}
	writeJSON(c, e.status, body)
}

// writeJSON answers v with status.
func writeJSON(c *call, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"hearth could not encode the answer","type":"server_error","code":"internal","param":null},"request_id":"` + c.id + `"}`)
	}
	c.status = status
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	c.w.WriteHeader(status)
	c.w.Write(append(b, '\n'))
}
