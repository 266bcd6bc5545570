package voice

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/mnemo/mnemo/internal/backoff"
)

// ReadLimit is the largest provider message accepted (VOICE.md lesson 9).
const ReadLimit = 16 << 20

// ErrClosed is returned by the methods of a closed session.
var ErrClosed = errors.New("voice: session closed")

// errCreatedTimeout: the provider accepted the handshake but never said
// session.created (about one connect in ten).
var errCreatedTimeout = errors.New("voice: no session.created in time")

// retryPolicy paces connect retries and resumes.
var retryPolicy = backoff.Policy{Initial: 250 * time.Millisecond, Max: 4 * time.Second, JitterBelow: 0.2, JitterAbove: 0.2}

// appendChunk is how much buffered audio one append carries (100 ms).
const appendChunk = SampleRate * 2 / 10

// FunctionOutput answers one FunctionCall.
type FunctionOutput struct {
	CallID string
	Output string
}

// Session is one realtime voice session. Its events arrive in order on
// Events; the methods are safe for concurrent use.
type Session struct {
	creds Credentials
	opts  Options
	log   *slog.Logger
	q     *queue
	ctx   context.Context // the session's life, ended by Close
	stop  context.CancelFunc
	done  chan struct{} // closed when the reader has finished

	mu         sync.Mutex
	conn       *websocket.Conn // nil while reconnecting
	dialect    string
	model      string
	closing    bool
	ready      bool // session.updated seen on this connection
	resumed    bool // this connection resumed the conversation
	pending    []byte
	convID     string
	activeResp string
	lastAudio  string            // the item that last carried audio
	itemResp   map[string]string // item → response
	itemBytes  map[string]int    // item → PCM bytes received
	dropResp   map[string]bool   // cancelled by barge-in: late deltas are dropped
	userText   map[string]string
	userFinal  map[string]bool
	agentText  map[string]string
	agentFinal map[string]bool
	truncated  map[string]bool
	calls      map[string]bool
	callNames  map[string]string
	outputs    []FunctionOutput
}

// Dial opens a session: a fresh credential per attempt, the handshake with
// the credential as the Authorization header, session.created within
// Options.CreatedTimeout (else the next attempt, with a new credential),
// then session.update at once. Mic audio flows after session.updated,
// announced by SessionReady. ctx bounds the connect only; Close ends the
// session.
func Dial(ctx context.Context, creds Credentials, opts Options) (*Session, error) {
	opts = opts.withDefaults()
	s := &Session{
		creds: creds, opts: opts, log: opts.Logger, q: newQueue(), done: make(chan struct{}),
		itemResp: map[string]string{}, itemBytes: map[string]int{}, dropResp: map[string]bool{},
		userText: map[string]string{}, userFinal: map[string]bool{}, agentText: map[string]string{},
		agentFinal: map[string]bool{}, truncated: map[string]bool{}, calls: map[string]bool{},
		callNames: map[string]string{},
	}
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	var last error
	for attempt := 1; attempt <= opts.ConnectAttempts; attempt++ {
		if attempt > 1 && !backoff.Sleep(ctx, retryPolicy.Delay(attempt-1)) {
			break
		}
		conn, err := s.connect(ctx, "")
		if err == nil {
			go s.run(conn)
			return s, nil
		}
		last = err
		s.log.Warn("voice: connect failed", "attempt", attempt, "err", err)
		if ctx.Err() != nil {
			break
		}
	}
	s.stop()
	s.q.close()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("voice: connect: %w", ctx.Err())
	}
	return nil, fmt.Errorf("voice: connect failed after %d attempts: %w", opts.ConnectAttempts, last)
}

// Events delivers the session's events in order, ending with Closed; then
// it is closed. The queue behind it is unbounded so that the socket reader
// never waits: read it until it is closed.
func (s *Session) Events() <-chan Event { return s.q.out }

// connect makes one attempt: credential, handshake, session.created,
// session.update. convID resumes an xAI conversation.
func (s *Session) connect(ctx context.Context, convID string) (*websocket.Conn, error) {
	cred, st, err := s.creds.Credential(ctx)
	if err != nil {
		return nil, fmt.Errorf("voice: credential: %w", err)
	}
	u, err := dialURL(cred, convID)
	if err != nil {
		return nil, err
	}
	dialect := cred.Dialect
	if dialect != DialectOpenAI {
		dialect = DialectXAI
	}
	hdr := http.Header{}
	if cred.Value != "" {
		hdr.Set("Authorization", "Bearer "+cred.Value)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: s.opts.HTTPClient, HTTPHeader: hdr})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("voice: handshake refused (HTTP %d): %w", resp.StatusCode, scrub(err, cred.Value))
		}
		return nil, fmt.Errorf("voice: dial: %w", scrub(err, cred.Value))
	}
	conn.SetReadLimit(ReadLimit)
	model, err := s.awaitCreated(ctx, conn)
	if err != nil {
		conn.CloseNow()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		conn.CloseNow()
		return nil, ErrClosed
	}
	s.conn, s.dialect, s.model, s.ready, s.resumed = conn, dialect, model, false, convID != ""
	if err := s.writeLocked(sessionUpdate(dialect, st)); err != nil {
		s.conn = nil
		conn.CloseNow()
		return nil, err
	}
	return conn, nil
}

// awaitCreated reads until session.created, at most CreatedTimeout.
func (s *Session) awaitCreated(ctx context.Context, conn *websocket.Conn) (model string, err error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.CreatedTimeout)
	defer cancel()
	for {
		_, b, err := conn.Read(cctx)
		if err != nil {
			if ctx.Err() == nil && cctx.Err() != nil {
				return "", errCreatedTimeout
			}
			return "", fmt.Errorf("voice: awaiting session.created: %w", err)
		}
		ev, err := decodeServerEvent(b)
		if err != nil {
			s.log.Debug("voice: undecodable event", "err", err)
			continue
		}
		switch ev.Type {
		case "session.created":
			if ev.Session != nil {
				model = ev.Session.Model
			}
			return model, nil
		case "error":
			return "", fmt.Errorf("voice: session refused: %s %s", ev.Error.Code, ev.Error.Message)
		}
	}
}

// dialURL adds the model and, to resume, the conversation id.
func dialURL(cred Credential, convID string) (string, error) {
	u, err := url.Parse(cred.URL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("voice: bad realtime URL %q", cred.URL)
	}
	q := u.Query()
	if cred.Model != "" && q.Get("model") == "" {
		q.Set("model", cred.Model)
	}
	if convID != "" {
		q.Set("conversation_id", convID)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// scrub keeps a credential out of an error's text.
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}

// run is the one reader goroutine, across resumes.
func (s *Session) run(conn *websocket.Conn) {
	defer close(s.done)
	for {
		err := s.read(conn)
		if s.ctx.Err() != nil {
			s.finish(nil)
			return
		}
		s.mu.Lock()
		s.conn, s.ready, s.activeResp = nil, false, ""
		convID, dialect := s.convID, s.dialect
		s.mu.Unlock()
		if dialect != DialectXAI || convID == "" {
			s.finish(fmt.Errorf("voice: connection lost: %w", err))
			return
		}
		conn = s.resume(convID, err)
		if conn == nil {
			if s.ctx.Err() != nil {
				s.finish(nil)
			} else {
				s.finish(fmt.Errorf("voice: connection lost, resume failed: %w", err))
			}
			return
		}
	}
}

// resume reconnects to the conversation, at most MaxResumes attempts.
func (s *Session) resume(convID string, cause error) *websocket.Conn {
	err := cause
	for attempt := 1; attempt <= s.opts.MaxResumes; attempt++ {
		s.q.push(Reconnecting{Attempt: attempt, Err: err})
		if !backoff.Sleep(s.ctx, retryPolicy.Delay(attempt)) {
			return nil
		}
		conn, cerr := s.connect(s.ctx, convID)
		if cerr == nil {
			return conn
		}
		err = cerr
		s.log.Warn("voice: resume failed", "attempt", attempt, "err", cerr)
	}
	return nil
}

func (s *Session) finish(err error) {
	s.q.push(Closed{Err: err})
	s.q.close()
}

// read handles events until the connection fails.
func (s *Session) read(conn *websocket.Conn) error {
	for {
		_, b, err := conn.Read(s.ctx)
		if err != nil {
			return err
		}
		ev, err := decodeServerEvent(b)
		if err != nil {
			s.log.Debug("voice: undecodable event", "err", err)
			continue
		}
		s.mu.Lock()
		s.handleLocked(ev)
		s.mu.Unlock()
	}
}

func (s *Session) handleLocked(ev serverEvent) {
	switch ev.Type {
	case "conversation.created":
		if ev.Conversation != nil && ev.Conversation.ID != "" {
			s.convID = ev.Conversation.ID
		}
	case "session.updated":
		if s.ready {
			return
		}
		s.ready = true
		for len(s.pending) > 0 {
			n := min(len(s.pending), appendChunk)
			if err := s.appendLocked(s.pending[:n]); err != nil {
				s.log.Warn("voice: sending buffered audio", "err", err)
				break
			}
			s.pending = s.pending[n:]
		}
		s.pending = nil
		s.q.push(SessionReady{Model: s.model, ConversationID: s.convID, Resumed: s.resumed})
	case "input_audio_buffer.speech_started":
		s.q.push(SpeechStarted{ItemID: ev.ItemID, AudioStartMS: int(ev.AudioStartMS)})
	case "input_audio_buffer.speech_stopped":
		s.q.push(SpeechStopped{ItemID: ev.ItemID, AudioEndMS: int(ev.AudioEndMS)})
	case "conversation.item.input_audio_transcription.updated":
		if !s.userFinal[ev.ItemID] {
			s.userText[ev.ItemID] = ev.Transcript
			s.q.push(UserTranscript{ItemID: ev.ItemID, Text: ev.Transcript})
		}
	case "conversation.item.input_audio_transcription.delta":
		if !s.userFinal[ev.ItemID] {
			s.userText[ev.ItemID] += ev.Delta
			s.q.push(UserTranscript{ItemID: ev.ItemID, Text: s.userText[ev.ItemID]})
		}
	case "conversation.item.input_audio_transcription.completed":
		if s.userFinal[ev.ItemID] {
			return
		}
		text := ev.Transcript
		if ev.Status == "in_progress" {
			s.userText[ev.ItemID] = text
			s.q.push(UserTranscript{ItemID: ev.ItemID, Text: text})
			return
		}
		if text == "" {
			text = s.userText[ev.ItemID]
		}
		s.userFinal[ev.ItemID] = true
		delete(s.userText, ev.ItemID)
		s.q.push(UserTranscript{ItemID: ev.ItemID, Text: text, Final: true})
	case "response.created":
		if ev.Response != nil {
			s.activeResp = ev.Response.ID
		}
	case "response.output_item.added":
		if ev.Item != nil {
			if ev.ResponseID != "" {
				s.itemResp[ev.Item.ID] = ev.ResponseID
			}
			if ev.Item.Type == "function_call" && ev.Item.CallID != "" {
				s.callNames[ev.Item.CallID] = ev.Item.Name
			}
		}
	case "response.output_audio.delta":
		if s.dropResp[ev.ResponseID] {
			return
		}
		pcm, err := base64.StdEncoding.DecodeString(ev.Delta)
		if err != nil {
			s.log.Warn("voice: undecodable audio delta", "err", err)
			return
		}
		s.itemResp[ev.ItemID] = ev.ResponseID
		s.itemBytes[ev.ItemID] += len(pcm)
		s.lastAudio = ev.ItemID
		s.q.push(AgentAudio{ResponseID: ev.ResponseID, ItemID: ev.ItemID, PCM: pcm})
	case "response.output_audio_transcript.delta":
		if s.dropResp[ev.ResponseID] || s.agentFinal[ev.ItemID] {
			return
		}
		s.agentText[ev.ItemID] += ev.Delta
		s.q.push(AgentTranscript{ResponseID: ev.ResponseID, ItemID: ev.ItemID, Text: s.agentText[ev.ItemID]})
	case "response.output_audio_transcript.done":
		if s.dropResp[ev.ResponseID] || s.agentFinal[ev.ItemID] || s.truncated[ev.ItemID] {
			return
		}
		text := ev.Transcript
		if text == "" {
			text = ev.Text
		}
		if text == "" {
			text = s.agentText[ev.ItemID]
		}
		s.agentFinal[ev.ItemID] = true
		delete(s.agentText, ev.ItemID)
		s.q.push(AgentTranscript{ResponseID: ev.ResponseID, ItemID: ev.ItemID, Text: text, Final: true})
	case "conversation.item.truncated":
		if s.truncated[ev.ItemID] {
			return
		}
		s.truncated[ev.ItemID] = true
		s.agentFinal[ev.ItemID] = true
		delete(s.agentText, ev.ItemID)
		s.q.push(AgentTranscript{ResponseID: s.itemResp[ev.ItemID], ItemID: ev.ItemID, Text: ev.Transcript, Final: true, Truncated: true})
	case "response.function_call_arguments.done":
		name := ev.Name
		if name == "" {
			name = s.callNames[ev.CallID]
		}
		s.callLocked(ev.CallID, name, ev.Arguments)
	case "response.output_item.done":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			s.callLocked(ev.Item.CallID, ev.Item.Name, ev.Item.Arguments)
		}
	case "response.done":
		id, status := s.activeResp, ""
		if ev.Response != nil {
			id, status = ev.Response.ID, ev.Response.Status
		}
		if id == s.activeResp {
			s.activeResp = ""
		}
		s.q.push(ResponseDone{ResponseID: id, Status: status})
		if s.activeResp == "" && len(s.outputs) > 0 {
			s.flushOutputsLocked()
		}
	case "error":
		if harmless(ev.Error) {
			s.log.Debug("voice: harmless race", "message", ev.Error.Message)
			return
		}
		s.q.push(Error{Type: ev.Error.Type, Code: ev.Error.Code, Message: ev.Error.Message, Recoverable: !fatalError(ev.Error)})
	}
}

func (s *Session) callLocked(callID, name, args string) {
	if callID == "" || s.calls[callID] {
		return
	}
	s.calls[callID] = true
	s.q.push(FunctionCall{CallID: callID, Name: name, Arguments: args})
}

// writeLocked sends one client event on the current connection.
func (s *Session) writeLocked(v any) error {
	if s.closing {
		return ErrClosed
	}
	if s.conn == nil {
		return errors.New("voice: not connected")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("voice: encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("voice: write: %w", err)
	}
	return nil
}

func (s *Session) appendLocked(pcm []byte) error {
	return s.writeLocked(obj{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(pcm)})
}

// SendAudio sends microphone PCM (24 kHz int16 mono). Until the session is
// ready (before session.updated, or while resuming) it keeps the most
// recent Options.PreReadyAudioMS of audio and sends it, in order, once
// ready: capture may start at once and the first words are not lost.
func (s *Session) SendAudio(pcm []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	if !s.ready {
		s.pending = append(s.pending, pcm...)
		if keep := s.opts.PreReadyAudioMS * SampleRate / 1000 * 2; len(s.pending) > keep {
			cut := len(s.pending) - keep
			cut += cut % 2 // whole samples
			s.pending = append([]byte(nil), s.pending[cut:]...)
		}
		return nil
	}
	return s.appendLocked(pcm)
}

// Commit ends a manual (push-to-talk) turn: it commits the input buffer
// and asks for a response.
func (s *Session) Commit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeLocked(obj{"type": "input_audio_buffer.commit"}); err != nil {
		return err
	}
	return s.writeLocked(obj{"type": "response.create"})
}

// Interrupt is barge-in on the item that last carried audio: heardMS is
// how much of it the user actually heard. See InterruptItem.
func (s *Session) Interrupt(heardMS int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interruptLocked(s.lastAudio, heardMS)
}

// InterruptItem is barge-in: it cancels the active response (if any),
// truncates itemID at heardMS (clamped to the audio received), and drops
// every later delta of the interrupted responses. The provider answers the
// truncate with conversation.item.truncated, delivered as the item's
// AgentTranscript with Final and Truncated: what was really said.
func (s *Session) InterruptItem(itemID string, heardMS int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interruptLocked(itemID, heardMS)
}

func (s *Session) interruptLocked(itemID string, heardMS int) error {
	if s.activeResp != "" {
		s.dropResp[s.activeResp] = true
		if err := s.writeLocked(obj{"type": "response.cancel", "response_id": s.activeResp}); err != nil {
			return err
		}
	}
	if itemID == "" {
		return nil
	}
	if r := s.itemResp[itemID]; r != "" {
		s.dropResp[r] = true
	}
	heardMS = max(0, min(heardMS, s.itemBytes[itemID]*1000/(SampleRate*2)))
	return s.writeLocked(obj{"type": "conversation.item.truncate", "item_id": itemID, "content_index": 0, "audio_end_ms": heardMS})
}

// InterruptPlayback is barge-in from a playback position: it truncates
// the item p is playing at what p has played, and flushes p.
func (s *Session) InterruptPlayback(p *Playback) error {
	itemID, ms, ok := p.Heard()
	p.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		return s.interruptLocked("", 0)
	}
	return s.interruptLocked(itemID, ms)
}

// SendFunctionOutputs answers the function calls of a response: every
// output as a function_call_output item, then one response.create. While
// the response is still active they wait for its response.done. Pass all
// outputs of a response in one call.
func (s *Session) SendFunctionOutputs(outputs []FunctionOutput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	s.outputs = append(s.outputs, outputs...)
	if s.activeResp != "" || s.conn == nil {
		return nil
	}
	return s.flushOutputsLocked()
}

func (s *Session) flushOutputsLocked() error {
	outs := s.outputs
	s.outputs = nil
	for _, o := range outs {
		if err := s.writeLocked(obj{"type": "conversation.item.create", "item": obj{
			"type": "function_call_output", "call_id": o.CallID, "output": o.Output}}); err != nil {
			return err
		}
	}
	return s.writeLocked(obj{"type": "response.create"})
}

// Close ends the session; Events then delivers Closed{nil} and closes.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closing = true
	conn := s.conn
	s.mu.Unlock()
	s.stop()
	if conn != nil {
		conn.CloseNow()
	}
	<-s.done
	return nil
}
