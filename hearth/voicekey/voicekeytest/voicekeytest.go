// Package voicekeytest is a stand-in for the voice providers'
// client-secret endpoints (POST /v1/realtime/client_secrets), faithful to
// the request and response shapes of xAI's and OpenAI GA's (VOICE.md):
// a bearer key is required (a missing one is 401, a wrong one xAI's 400
// with its body, or OpenAI's 401), the body is checked, and each
// credential is a fresh opaque value with its expiry.
package voicekeytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Server is a stand-in client-secret endpoint.
type Server struct {
	*httptest.Server
	dialect, key string

	mu       sync.Mutex
	status   int // when set, every request is answered with it
	requests []Request
	n        int
}

// Request is what a client sent.
type Request struct {
	Authorization string
	Body          map[string]any
}

// New starts a stand-in for dialect ("xai" or "openai") accepting key.
// Its base URL (for voice.base_url) is URL + "/v1".
func New(dialect, key string) *Server {
	s := &Server{dialect: dialect, key: key}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// BaseURL is the API base to configure.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Fail makes every later request answer status with the provider's error
// body ("0": answer normally again).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Requests are the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Minted is the value of the nth credential minted (from 1).
func Minted(dialect string, n int) string {
	if dialect == "openai" {
		return fmt.Sprintf("ek_standin%04d", n)
	}
	return fmt.Sprintf("xai-eph-standin%04d", n)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/v1/realtime/client_secrets" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"not found"}`)
		return
	}
	var body map[string]any
	dec := json.NewDecoder(r.Body)
	bodyErr := dec.Decode(&body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Authorization: r.Header.Get("Authorization"), Body: body})
	status := s.status
	s.mu.Unlock()

	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case status != 0:
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(status)
		// A provider may echo what it was sent: the minter must not show it.
		fmt.Fprintf(w, `{"code":"stand-in","error":"failing on purpose for key %s"}`, auth)
		return
	case !ok || auth == "":
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"code":"Unauthorized","error":"no credentials"}`)
		return
	case auth != s.key && s.dialect == "xai":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"code":"Client specified an invalid argument","error":"Incorrect API key provided: xa***. You can obtain an API key from https://console.x.ai."}`)
		return
	case auth != s.key:
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	case bodyErr != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid JSON"}`)
		return
	}
	secs, problem := s.check(body)
	if problem != "" {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": problem})
		return
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	resp := map[string]any{"value": Minted(s.dialect, n), "expires_at": time.Now().Add(time.Duration(secs) * time.Second).Unix()}
	if s.dialect == "openai" {
		resp["session"] = body["session"]
	}
	json.NewEncoder(w).Encode(resp)
}

// check validates a request body as the provider does; it returns the
// lifetime asked for.
func (s *Server) check(body map[string]any) (int, string) {
	secs := 600
	if ea, ok := body["expires_after"].(map[string]any); ok {
		f, ok := ea["seconds"].(float64)
		if !ok {
			return 0, "expires_after.seconds must be a number"
		}
		secs = int(f)
		if s.dialect == "openai" && ea["anchor"] != "created_at" {
			return 0, `expires_after.anchor must be "created_at"`
		}
	}
	switch s.dialect {
	case "xai":
		if secs < 1 || secs > 3600 {
			return 0, "expires_after.seconds must be at most 3600"
		}
	case "openai":
		if secs < 10 || secs > 7200 {
			return 0, "expires_after.seconds must be between 10 and 7200"
		}
		sess, ok := body["session"].(map[string]any)
		if !ok || sess["type"] != "realtime" {
			return 0, `session.type must be "realtime"`
		}
		if m, _ := sess["model"].(string); m == "" {
			return 0, "session.model is required"
		}
	}
	return secs, ""
}
