package embedtest

import (
	"net/http"
	"net/http/httptest"
)

// Transport returns an http.RoundTripper that serves each request by
// calling h in the caller's goroutine, with no network. Use it inside
// testing/synctest bubbles, where real sockets would keep the fake clock
// from advancing. A request whose context ends while h runs (h should
// watch r.Context(), as the stand-ins' hang does) fails with the context's
// error, as a real transport's would.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "192.0.2.1:1234"
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, sreq)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
