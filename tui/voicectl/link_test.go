package voicectl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice"
)

func TestFromWire(t *testing.T) {
	exp := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   ipc.VoiceCredential
		cred voice.Credential
		set  voice.Settings
	}{
		{"bare", ipc.VoiceCredential{Token: "s1", ExpiresAt: exp}, voice.Credential{Value: "s1", ExpiresAt: exp}, voice.Settings{}},
		{"server vad and tools",
			ipc.VoiceCredential{Token: "s2", URL: "wss://x/v1/realtime", Model: "m", Dialect: ipc.DialectOpenAI, Voice: "marin",
				Instructions: "be kind", TranscriptionModel: "tx",
				VAD:   &ipc.VoiceVAD{Type: ipc.VADServer, Threshold: 0.2, SilenceMS: 500, PrefixPaddingMS: 300},
				Tools: []ipc.VoiceTool{{Name: "memory_search", Description: "search", Parameters: map[string]any{"type": "object"}}}},
			voice.Credential{Value: "s2", URL: "wss://x/v1/realtime", Model: "m", Dialect: voice.DialectOpenAI},
			voice.Settings{Instructions: "be kind", Voice: "marin", Transcription: "tx",
				VAD:   voice.VAD{Mode: voice.VADServer, Threshold: 0.2, SilenceMS: 500, PrefixPaddingMS: 300},
				Tools: []voice.Tool{{Name: "memory_search", Description: "search", Parameters: json.RawMessage(`{"type":"object"}`)}}}},
		{"manual", ipc.VoiceCredential{Token: "s3", VAD: &ipc.VoiceVAD{Type: ipc.VADManual}},
			voice.Credential{Value: "s3"}, voice.Settings{VAD: voice.VAD{Mode: voice.VADManual}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := voicectl.FromWire(&tt.in)
			if !reflect.DeepEqual(c, tt.cred) {
				t.Errorf("credential %+v, want %+v", c, tt.cred)
			}
			if !reflect.DeepEqual(s, tt.set) {
				t.Errorf("settings %+v, want %+v", s, tt.set)
			}
		})
	}
}

// linkPeer records what a Link sends.
type linkPeer struct {
	mu   sync.Mutex
	sent []ipc.Msg
	got  chan ipc.Msg
}

func newLink() (*voicectl.Link, *linkPeer) {
	p := &linkPeer{got: make(chan ipc.Msg, 16)}
	return voicectl.NewLink(func(m ipc.Msg) {
		p.mu.Lock()
		p.sent = append(p.sent, m)
		p.mu.Unlock()
		p.got <- m
	}, func() string { return "r" }), p
}

func TestLinkAnswers(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(req ipc.Msg) ipc.Msg
		wantOut string
		wantErr string
	}{
		{"result by ref", func(req ipc.Msg) ipc.Msg {
			c := req.(*ipc.VoiceToolCall)
			return &ipc.VoiceToolResult{CallID: c.CallID, Ref: c.Ref, Output: `{"ok":true}`}
		}, `{"ok":true}`, ""},
		{"error result in words", func(req ipc.Msg) ipc.Msg {
			c := req.(*ipc.VoiceToolCall)
			return &ipc.VoiceToolResult{CallID: c.CallID, Ref: c.Ref, Output: "denied", IsError: true}
		}, `{"error":"denied"}`, ""},
		{"error with the ref", func(req ipc.Msg) ipc.Msg {
			return &ipc.Error{Code: ipc.CodeToolError, Message: "boom", Ref: req.(*ipc.VoiceToolCall).Ref}
		}, `{"error":"boom"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, p := newLink()
			done := make(chan struct{})
			var out string
			var err error
			go func() {
				defer close(done)
				out, err = l.RunTool(t.Context(), voice.FunctionCall{CallID: "c1", Name: "f", Arguments: "{}"})
			}()
			req := <-p.got
			if c := req.(*ipc.VoiceToolCall); c.CallID != "c1" || c.Name != "f" || c.Arguments != "{}" || c.Ref == "" {
				t.Fatalf("sent %+v", c)
			}
			// A stranger's result is not ours.
			if l.Deliver(&ipc.VoiceToolResult{CallID: "c1", Ref: "other"}) {
				t.Error("took a result for another ref")
			}
			if !l.Deliver(tt.answer(req)) {
				t.Fatal("answer not taken")
			}
			<-done
			if err != nil || out != tt.wantOut {
				t.Errorf("RunTool = %q, %v; want %q", out, err, tt.wantOut)
			}
		})
	}
}

func TestLinkCredential(t *testing.T) {
	tests := []struct {
		name     string
		answer   ipc.Msg
		fail     bool // the request did not reach hearth
		wantErr  string
		noProvid bool
	}{
		{"credential", &ipc.VoiceCredential{Token: "secret"}, false, "", false},
		{"no provider", &ipc.Error{Code: ipc.CodeNoVoiceProvider, Message: "no voice provider is configured: set XAI_API_KEY"}, false,
			"no voice provider is configured: set XAI_API_KEY", true},
		{"not sent", nil, true, "voice request not sent: not connected", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, p := newLink()
			done := make(chan struct{})
			var c voice.Credential
			var err error
			go func() {
				defer close(done)
				c, _, err = l.Credential(t.Context())
			}()
			req := <-p.got
			if _, ok := req.(*ipc.VoiceRequest); !ok {
				t.Fatalf("sent %T", req)
			}
			// An error about someone's message is not an answer.
			if l.Deliver(&ipc.Error{Code: ipc.CodeProviderError, Message: "x", Ref: "c9"}) {
				t.Error("took an error with another ref")
			}
			if tt.fail {
				l.Failed(req, errors.New("not connected"))
			} else if !l.Deliver(tt.answer) {
				t.Fatal("answer not taken")
			}
			<-done
			switch {
			case tt.wantErr == "" && (err != nil || c.Value != "secret"):
				t.Errorf("Credential = %+v, %v", c, err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
			if voicectl.IsNoProvider(err) != tt.noProvid {
				t.Errorf("IsNoProvider(%v) = %v", err, !tt.noProvid)
			}
		})
	}
}

func TestLinkGivesUp(t *testing.T) {
	l, _ := newLink()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := l.Credential(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Credential = %v", err)
	}
	// The abandoned request takes no later answer.
	if l.Deliver(&ipc.VoiceCredential{Token: "late"}) {
		t.Error("a late credential was taken")
	}
}

// TestLinkResend: transcripts and stop_voice that did not reach hearth go
// again, in order, when the connection is back; nothing else does.
func TestLinkResend(t *testing.T) {
	l, p := newLink()
	ctx := t.Context()
	l.Transcript(ctx, voicectl.Turn{Role: "user", Text: "one", ItemID: "i1"})
	l.Transcript(ctx, voicectl.Turn{Role: "agent", Text: "two", ItemID: "i2", Incomplete: true})
	l.StopVoice(ctx)
	var failed []ipc.Msg
	for range 3 {
		failed = append(failed, <-p.got)
	}
	for _, m := range failed[1:] {
		if !l.Failed(m, errors.New("not connected")) {
			t.Fatalf("%T not taken", m)
		}
	}
	l.Resend()
	got := []ipc.Msg{<-p.got, <-p.got}
	if !reflect.DeepEqual(got, failed[1:]) {
		t.Errorf("resent %v, want %v", got, failed[1:])
	}
	l.Resend()
	select {
	case m := <-p.got:
		t.Errorf("resent %v twice", m)
	default:
	}
}

// TestLinkCredentialByRef: each voice_request carries its own ref and the
// answer with that ref goes to it, whatever the order; a refusal with a
// ref fails only its request. Without a ref (a hearth that does not echo
// it) the oldest request is answered.
func TestLinkCredentialByRef(t *testing.T) {
	for _, echo := range []bool{true, false} {
		t.Run(fmt.Sprintf("echo=%v", echo), func(t *testing.T) {
			_, p := newLink()
			n := 0
			l := voicectl.NewLink(func(m ipc.Msg) { p.got <- m }, func() string { n++; return fmt.Sprint(n) })
			type result struct {
				token string
				err   error
			}
			first, second := make(chan result, 1), make(chan result, 1)
			ask := func(out chan result) {
				c, _, err := l.Credential(t.Context())
				out <- result{c.Value, err}
			}
			go ask(first)
			r1 := (<-p.got).(*ipc.VoiceRequest)
			go ask(second)
			r2 := (<-p.got).(*ipc.VoiceRequest)
			if r1.Ref == "" || r2.Ref == "" || r1.Ref == r2.Ref {
				t.Fatalf("refs %q and %q, want two distinct", r1.Ref, r2.Ref)
			}
			if echo {
				// The second is answered first, the first refused.
				if !l.Deliver(&ipc.VoiceCredential{Token: "two", Ref: r2.Ref}) {
					t.Fatal("credential not taken")
				}
				if got := <-second; got.token != "two" || got.err != nil {
					t.Errorf("second request got %+v", got)
				}
				if !l.Deliver(&ipc.Error{Code: ipc.CodeUnavailable, Message: "busy", Ref: r1.Ref}) {
					t.Fatal("refusal not taken")
				}
				if got := <-first; got.err == nil || got.err.Error() != "busy" {
					t.Errorf("first request got %+v", got)
				}
				return
			}
			for _, tok := range []string{"one", "two"} {
				if !l.Deliver(&ipc.VoiceCredential{Token: tok}) {
					t.Fatal("credential not taken")
				}
			}
			if a, b := <-first, <-second; a.token != "one" || b.token != "two" {
				t.Errorf("got %+v and %+v, want one then two in order", a, b)
			}
		})
	}
}
