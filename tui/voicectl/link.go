package voicectl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/voice"
)

// Link is Hearth over the client's protocol connection: it sends requests
// with send (which queues and never waits) and is handed hearth's answers
// with Deliver. Only credentials, transcripts and tool calls cross it;
// audio never does.
type Link struct {
	send    func(ipc.Msg)
	newRef  func() string
	timeout time.Duration

	mu    sync.Mutex
	creds []credWait             // voice_request waiting, oldest first
	tools map[string]chan string // voice_tool_call waiting, by ref
	order []string               // their refs, oldest first
	// unsent are transcripts and stop_voice that did not reach hearth,
	// in order, for Resend.
	unsent []ipc.Msg
}

type credWait struct {
	ref string
	ch  chan credAnswer
}

type credAnswer struct {
	cred *ipc.VoiceCredential
	err  error
}

// LinkTimeout bounds the wait for a credential or a tool's output.
const LinkTimeout = 2 * time.Minute

// NewLink returns a Link; newRef makes the refs of its requests.
func NewLink(send func(ipc.Msg), newRef func() string) *Link {
	return &Link{send: send, newRef: newRef, timeout: LinkTimeout, tools: make(map[string]chan string)}
}

// Credential asks hearth for a fresh credential (voice_request) and
// converts hearth's voice_credential.
func (l *Link) Credential(ctx context.Context) (voice.Credential, voice.Settings, error) {
	ref := "vr-" + l.newRef()
	ch := make(chan credAnswer, 1)
	l.mu.Lock()
	l.creds = append(l.creds, credWait{ref, ch})
	l.mu.Unlock()
	l.send(&ipc.VoiceRequest{Ref: ref})
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	select {
	case a := <-ch:
		if a.err != nil {
			return voice.Credential{}, voice.Settings{}, a.err
		}
		c, s := FromWire(a.cred)
		return c, s, nil
	case <-ctx.Done():
		l.mu.Lock()
		l.creds = slices.DeleteFunc(l.creds, func(c credWait) bool { return c.ref == ref })
		l.mu.Unlock()
		return voice.Credential{}, voice.Settings{}, fmt.Errorf("no voice credential from hearth: %w", ctx.Err())
	}
}

// Transcript sends a finished voice turn; its ref is the item id.
func (l *Link) Transcript(_ context.Context, t Turn) error {
	l.send(&ipc.Transcript{Role: t.Role, Text: t.Text, Ref: t.ItemID, Incomplete: t.Incomplete})
	return nil
}

// StopVoice tells hearth the voice session ended.
func (l *Link) StopVoice(context.Context) error {
	l.send(&ipc.StopVoice{})
	return nil
}

// RunTool asks hearth to run a tool (voice_tool_call) and waits for the
// voice_tool_result with the same ref.
func (l *Link) RunTool(ctx context.Context, call voice.FunctionCall) (string, error) {
	ref := "vt-" + l.newRef()
	ch := make(chan string, 1)
	l.mu.Lock()
	l.tools[ref] = ch
	l.order = append(l.order, ref)
	l.mu.Unlock()
	l.send(&ipc.VoiceToolCall{CallID: call.CallID, Name: call.Name, Arguments: call.Arguments, Ref: ref})
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	select {
	case out := <-ch:
		return out, nil
	case <-ctx.Done():
		l.forgetTool(ref)
		return "", fmt.Errorf("no answer from hearth for tool %s: %w", call.Name, ctx.Err())
	}
}

func (l *Link) forgetTool(ref string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tools, ref)
	l.order = slices.DeleteFunc(l.order, func(r string) bool { return r == ref })
}

// Deliver hands the Link a message from hearth; it reports whether the
// message answered one of its requests (and is then the Link's). It never
// waits.
func (l *Link) Deliver(m ipc.Msg) bool {
	switch m := m.(type) {
	case *ipc.VoiceCredential:
		return l.answerCred(m.Ref, credAnswer{cred: m})
	case *ipc.VoiceToolResult:
		out := m.Output
		if m.IsError && !json.Valid([]byte(out)) {
			out = fmt.Sprintf(`{"error":%q}`, out)
		}
		return l.answerTool(m.Ref, out)
	case *ipc.Error:
		return l.deliverError(m)
	}
	return false
}

// Failed hands the Link a request that did not reach hearth (the UI's
// SendFailedMsg); it reports whether the request was the Link's.
func (l *Link) Failed(m ipc.Msg, err error) bool {
	switch m := m.(type) {
	case *ipc.VoiceRequest:
		return l.answerCred(m.Ref, credAnswer{err: fmt.Errorf("voice request not sent: %w", err)})
	case *ipc.VoiceToolCall:
		return l.answerTool(m.Ref, toolFailure(err))
	case *ipc.Transcript, *ipc.StopVoice:
		l.mu.Lock()
		l.unsent = append(l.unsent, m)
		l.mu.Unlock()
		return true
	}
	return false
}

// Resend sends again, in order, the transcripts and stop_voice that did
// not reach hearth: call it when the connection is back.
func (l *Link) Resend() {
	l.mu.Lock()
	q := l.unsent
	l.unsent = nil
	l.mu.Unlock()
	for _, m := range q {
		l.send(m)
	}
}

// deliverError: an error with the ref of a credential request or a tool
// call fails it. An error without a ref comes from a hearth that echoes
// no refs on voice requests (older than the ref): by its code it answers
// the oldest credential request (a code minting gives) or the oldest tool
// call (refused as unknown: a hearth without voice tools).
func (l *Link) deliverError(e *ipc.Error) bool {
	if e.Ref != "" {
		if l.answerCred(e.Ref, credAnswer{err: &HearthError{Code: e.Code, Message: e.Message}}) {
			return true
		}
		return l.answerTool(e.Ref, fmt.Sprintf(`{"error":%q}`, e.Message))
	}
	switch e.Code {
	case ipc.CodeNoVoiceProvider, ipc.CodeProviderError, ipc.CodeUnavailable, ipc.CodeInternal:
		return l.answerCred("", credAnswer{err: &HearthError{Code: e.Code, Message: e.Message}})
	case ipc.CodeBadRequest, ipc.CodeUnknownType:
		l.mu.Lock()
		ref := ""
		if len(l.order) > 0 {
			ref = l.order[0]
		}
		l.mu.Unlock()
		if ref != "" {
			return l.answerTool(ref, fmt.Sprintf(`{"error":%q}`, "hearth cannot run tools for voice: "+e.Message))
		}
	}
	return false
}

// answerCred answers the credential request with ref; without a ref (a
// hearth that does not echo it) the oldest one.
func (l *Link) answerCred(ref string, a credAnswer) bool {
	l.mu.Lock()
	i := 0
	if ref != "" {
		i = slices.IndexFunc(l.creds, func(c credWait) bool { return c.ref == ref })
	}
	if i < 0 || i >= len(l.creds) {
		l.mu.Unlock()
		return false
	}
	ch := l.creds[i].ch
	l.creds = slices.Delete(l.creds, i, i+1)
	l.mu.Unlock()
	ch <- a
	return true
}

func (l *Link) answerTool(ref, out string) bool {
	l.mu.Lock()
	ch, ok := l.tools[ref]
	if ok {
		delete(l.tools, ref)
		l.order = slices.DeleteFunc(l.order, func(r string) bool { return r == ref })
	}
	l.mu.Unlock()
	if ok {
		ch <- out
	}
	return ok
}

// HearthError is hearth's refusal, its message shown as is.
type HearthError struct{ Code, Message string }

func (e *HearthError) Error() string { return e.Message }

// FromWire converts hearth's voice_credential into the session's
// credential and settings.
func FromWire(m *ipc.VoiceCredential) (voice.Credential, voice.Settings) {
	c := voice.Credential{Value: m.Token, ExpiresAt: m.ExpiresAt, URL: m.URL, Model: m.Model, Dialect: m.Dialect}
	s := voice.Settings{Instructions: m.Instructions, Voice: m.Voice, Transcription: m.TranscriptionModel}
	if v := m.VAD; v != nil {
		mode := voice.VADServer
		if v.Type == ipc.VADManual {
			mode = voice.VADManual
		}
		s.VAD = voice.VAD{Mode: mode, Threshold: v.Threshold, SilenceMS: int(v.SilenceMS), PrefixPaddingMS: int(v.PrefixPaddingMS)}
	}
	for _, t := range m.Tools {
		var params json.RawMessage
		if t.Parameters != nil {
			if b, err := json.Marshal(t.Parameters); err == nil {
				params = b
			}
		}
		s.Tools = append(s.Tools, voice.Tool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return c, s
}

// IsNoProvider reports whether err is hearth saying no voice provider is
// configured.
func IsNoProvider(err error) bool {
	var he *HearthError
	return errors.As(err, &he) && he.Code == ipc.CodeNoVoiceProvider
}
