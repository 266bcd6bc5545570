// Package voicetest is a protocol-faithful stand-in for the xAI and OpenAI
// GA realtime servers (shared/brief/VOICE.md): the client-secret endpoint,
// the WebSocket handshake and its auth, the live event order, energy-based
// turn detection from the appended PCM, scripted transcripts and replies,
// cancellation, truncation, function calls, the harmless error races, and
// failure modes (no session.created, a dropped connection, a refused
// handshake). Test code only: production packages never import it.
package voicetest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mnemo/mnemo/voice"
)

// Turn scripts one user turn and the agent's answer.
type Turn struct {
	User  string // what the transcription hears
	Reply Reply
}

// Reply scripts one response.
type Reply struct {
	Transcript string
	AudioMS    int // reply audio length; default 600, sent in 100 ms deltas
	// HoldAfter > 0 stops the reply after that many audio deltas until it
	// is cancelled (user speech or response.cancel): a reply still being
	// generated. A function-call reply with HoldAfter > 0 stays active
	// (no response.done) until Release.
	HoldAfter int
	// LateDeltas is how many audio deltas of a cancelled reply are still
	// sent after the cancel, as if in flight.
	LateDeltas int
	// Call makes the reply a function call (after its spoken words, when
	// Transcript or AudioMS is set: one response, two items); Then answers
	// after the client sent the outputs and response.create.
	Call *Call
	Then *Reply
}

// Call is a scripted function call.
type Call struct{ Name, Arguments string }

// Options configure a stand-in.
type Options struct {
	Dialect  string // voice.DialectXAI (default) or voice.DialectOpenAI
	APIKey   string // default "test-api-key"
	Model    string // default per dialect
	Turns    []Turn
	OldNames bool // send response.audio.* / response.audio_transcript.* (xAI still does)
	// SpeechRMS is the frame energy above which audio is speech; default 500.
	SpeechRMS float64
	Now       func() time.Time
	// HoldUpdated delays session.updated until Release.
	HoldUpdated bool
	// NoTruncated records each truncate but never answers it, as when the
	// session closes before conversation.item.truncated arrives.
	NoTruncated bool
}

// Handshake is one WebSocket connection attempt as the server saw it.
type Handshake struct {
	URL           string
	Authorization string
	Status        int // 101 when accepted
}

// Server is the stand-in.
type Server struct {
	opts   Options
	base   string       // http://host
	client *http.Client // reaches the server (loopback or pipe)

	mu         sync.Mutex
	secrets    map[string]secret
	minted     []string
	handshakes []Handshake
	received   []string // every client frame
	conns      map[*conn]bool
	silent     int  // next connections that never get session.created
	refuse     bool // answer handshakes with 503
	convs      map[string][]json.RawMessage
	turn       int
	early      int // appends before session.updated
	truncates  []int
	outputs    []string
	released   chan struct{}
	relOnce    sync.Once
}

type secret struct {
	expires time.Time
	used    bool
}

// Start runs a stand-in on loopback (httptest).
func Start(t testing.TB, opts Options) *Server {
	s := newServer(opts)
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.DropAll(); hs.Close() })
	s.base, s.client = hs.URL, hs.Client()
	return s
}

// StartPipe runs a stand-in over in-memory net.Pipe connections, usable
// inside a testing/synctest bubble; HTTPClient reaches it.
func StartPipe(t testing.TB, opts Options) *Server {
	s := newServer(opts)
	s.base, s.client = "http://voicetest.pipe", pipeClient(t, s)
	t.Cleanup(s.DropAll)
	return s
}

func newServer(opts Options) *Server {
	if opts.Dialect == "" {
		opts.Dialect = voice.DialectXAI
	}
	if opts.APIKey == "" {
		opts.APIKey = "test-api-key"
	}
	if opts.Model == "" {
		opts.Model = map[string]string{voice.DialectXAI: "grok-voice-latest", voice.DialectOpenAI: "gpt-realtime"}[opts.Dialect]
	}
	if opts.SpeechRMS == 0 {
		opts.SpeechRMS = 500
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{opts: opts, released: make(chan struct{}), secrets: map[string]secret{}, conns: map[*conn]bool{}, convs: map[string][]json.RawMessage{}}
}

// HTTPClient reaches the server.
func (s *Server) HTTPClient() *http.Client { return s.client }

// URL is the realtime WebSocket endpoint.
func (s *Server) URL() string { return "ws" + strings.TrimPrefix(s.base, "http") + "/v1/realtime" }

// SecretsURL is the client-secret endpoint.
func (s *Server) SecretsURL() string { return s.base + "/v1/realtime/client_secrets" }

// SetSilent makes the next n connections never get session.created.
func (s *Server) SetSilent(n int) { s.mu.Lock(); s.silent = n; s.mu.Unlock() }

// Release lets held events go: session.updated (Options.HoldUpdated) and
// the response.done of held function-call replies.
func (s *Server) Release() { s.relOnce.Do(func() { close(s.released) }) }

// SetRefuse makes handshakes fail with HTTP 503.
func (s *Server) SetRefuse(b bool) { s.mu.Lock(); s.refuse = b; s.mu.Unlock() }

// DropAll closes every live connection abruptly (a network drop).
func (s *Server) DropAll() {
	s.mu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.ws.CloseNow()
	}
}

// Inject sends an event to every live connection.
func (s *Server) Inject(ev map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.send(ev)
	}
}

// Minted is every client secret issued.
func (s *Server) Minted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.minted...)
}

// Handshakes is every WebSocket attempt.
func (s *Server) Handshakes() []Handshake {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Handshake(nil), s.handshakes...)
}

// Received is every frame the clients sent, in order.
func (s *Server) Received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.received...)
}

// EarlyAudio counts appends received before the server sent session.updated.
func (s *Server) EarlyAudio() int { s.mu.Lock(); defer s.mu.Unlock(); return s.early }

// Truncates is the audio_end_ms of every truncate received.
func (s *Server) Truncates() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.truncates...)
}

// Outputs is every function_call_output received.
func (s *Server) Outputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.outputs...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/realtime/client_secrets":
		s.serveSecret(w, r)
	case "/v1/realtime":
		s.serveRealtime(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// refuseAuth answers a missing (401) or bad credential as the dialect does.
func (s *Server) refuseAuth(w http.ResponseWriter, missing bool) int {
	if s.opts.Dialect == voice.DialectOpenAI {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}})
		return http.StatusUnauthorized
	}
	if missing {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": "Unauthenticated", "error": "No credentials provided."})
		return http.StatusUnauthorized
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"code": "Client specified an invalid argument",
		"error": "Incorrect API key provided. You can obtain an API key from the console."})
	return http.StatusBadRequest
}

func bearer(r *http.Request) string {
	v, _ := strings.CutPrefix(strings.TrimSpace(r.Header.Get("Authorization")), "Bearer")
	return strings.TrimSpace(v)
}

func (s *Server) serveSecret(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	key := bearer(r)
	if key == "" || key != s.opts.APIKey {
		s.refuseAuth(w, key == "")
		return
	}
	var body struct {
		ExpiresAfter struct {
			Seconds int `json:"seconds"`
		} `json:"expires_after"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	secs, maxSecs := body.ExpiresAfter.Seconds, 3600
	if secs == 0 {
		secs = 600
	}
	if s.opts.Dialect == voice.DialectOpenAI {
		maxSecs = 7200
	}
	if secs < 10 || secs > maxSecs {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": "Client specified an invalid argument",
			"error": fmt.Sprintf("expires_after.seconds must be between 10 and %d", maxSecs)})
		return
	}
	prefix := "xai-cs-"
	if s.opts.Dialect == voice.DialectOpenAI {
		prefix = "ek_"
	}
	value := prefix + randHex(12)
	exp := s.opts.Now().Add(time.Duration(secs) * time.Second)
	s.mu.Lock()
	s.secrets[value] = secret{expires: exp}
	s.minted = append(s.minted, value)
	s.mu.Unlock()
	out := map[string]any{"value": value, "expires_at": exp.Unix()}
	if s.opts.Dialect == voice.DialectOpenAI {
		out["session"] = map[string]any{"type": "realtime", "model": s.opts.Model}
	}
	writeJSON(w, http.StatusOK, out)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// authorize checks the handshake credential: the API key, or an unused,
// unexpired client secret, which it consumes.
func (s *Server) authorizeLocked(value string) bool {
	if value == s.opts.APIKey {
		return true
	}
	sec, ok := s.secrets[value]
	if !ok || sec.used || !s.opts.Now().Before(sec.expires) {
		return false
	}
	sec.used = true
	s.secrets[value] = sec
	return true
}

func (s *Server) serveRealtime(w http.ResponseWriter, r *http.Request) {
	cred := bearer(r)
	s.mu.Lock()
	hs := Handshake{URL: r.URL.String(), Authorization: r.Header.Get("Authorization")}
	var status int
	switch {
	case s.refuse:
		status = http.StatusServiceUnavailable
		writeJSON(w, status, map[string]any{"error": "unavailable"})
	case cred == "":
		status = s.refuseAuth(w, true)
	case !s.authorizeLocked(cred):
		status = s.refuseAuth(w, false)
	}
	silent := false
	if status == 0 && s.silent > 0 {
		s.silent--
		silent = true
	}
	if status != 0 {
		hs.Status = status
		s.handshakes = append(s.handshakes, hs)
		s.mu.Unlock()
		return
	}
	hs.Status = http.StatusSwitchingProtocols
	s.handshakes = append(s.handshakes, hs)
	s.mu.Unlock()

	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(voice.ReadLimit)
	c := newConn(s, ws)
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.shutdown()
	}()
	c.serve(r.Context(), silent, r.URL.Query().Get("conversation_id"))
}

// Tone is ms of a loud 440 Hz sine (speech to the energy VAD).
func Tone(ms int) []byte {
	n := ms * voice.SampleRate / 1000
	b := make([]byte, 2*n)
	for i := range n {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/voice.SampleRate))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// Silence is ms of zeros.
func Silence(ms int) []byte { return make([]byte, 2*ms*voice.SampleRate/1000) }

// Credentials mints a fresh client secret from the stand-in for every call.
type Credentials struct {
	Server   *Server
	Settings voice.Settings
	APIKey   string // default: the server's

	mu    sync.Mutex
	calls int
}

// Calls counts credentials handed out.
func (c *Credentials) Calls() int { c.mu.Lock(); defer c.mu.Unlock(); return c.calls }

// Credential implements voice.Credentials.
func (c *Credentials) Credential(ctx context.Context) (voice.Credential, voice.Settings, error) {
	key := c.APIKey
	if key == "" {
		key = c.Server.opts.APIKey
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Server.SecretsURL(),
		strings.NewReader(`{"expires_after":{"seconds":600}}`))
	if err != nil {
		return voice.Credential{}, voice.Settings{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Server.client.Do(req)
	if err != nil {
		return voice.Credential{}, voice.Settings{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return voice.Credential{}, voice.Settings{}, fmt.Errorf("voicetest: mint: HTTP %d", resp.StatusCode)
	}
	var out struct {
		Value     string `json:"value"`
		ExpiresAt int64  `json:"expires_at"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return voice.Credential{}, voice.Settings{}, err
	}
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return voice.Credential{Value: out.Value, ExpiresAt: time.Unix(out.ExpiresAt, 0), URL: c.Server.URL(),
		Model: c.Server.opts.Model, Dialect: c.Server.opts.Dialect}, c.Settings, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
