package llm

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// bodyTap sits between an HTTP response body and an SDK's SSE decoder to
// learn whether reading the body failed (a transport error, worth
// retrying) as opposed to decoding it. terminal names the event a
// complete stream ends with, for the error when it never came.
type bodyTap struct {
	terminal    string
	body        io.ReadCloser
	contentType string
	readErr     error
}

// wrap puts the tap in front of res's body.
func (t *bodyTap) wrap(res *http.Response, err error) (*http.Response, error) {
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	t.body = res.Body
	t.contentType = res.Header.Get("Content-Type")
	res.Body = t
	return res, nil
}

func (t *bodyTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		t.readErr = err
	}
	return n, err
}

func (t *bodyTap) Close() error { return t.body.Close() }

// incomplete explains a stream that ended cleanly but too early.
func (t *bodyTap) incomplete() error {
	if media, _, _ := mime.ParseMediaType(t.contentType); t.contentType != "" && media != "text/event-stream" {
		return fmt.Errorf("the provider replied with Content-Type %q, not an event stream", t.contentType)
	}
	return fmt.Errorf("the reply stream ended without %s: the connection was cut", t.terminal)
}
