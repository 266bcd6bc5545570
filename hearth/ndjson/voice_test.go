package ndjson

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/voicekey"
	"github.com/mnemo/mnemo/hearth/voicekey/voicekeytest"
	"github.com/mnemo/mnemo/ipc"
)

// TestVoiceRequestOverTCP: voice_request → voice_credential over the
// door, minted by the real minter from the stand-in endpoint, sent to
// the asking client only; the API key is in no line a client receives.
// Without a voice provider the answer is one no_voice_provider error.
func TestVoiceRequestOverTCP(t *testing.T) {
	const key = "xai-SECRET-api-key-0123"
	srv := voicekeytest.New("xai", key)
	defer srv.Close()
	m, err := voicekey.New(voicekey.Settings{Provider: "xai", Key: key, BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	th := startHearth(t, "", func(c *testConfig) { c.Voice = m })

	other := dial(t, th.addr) // another client: it must not get the credential
	lines := exchange(t, th.addr, `{"type":"voice_request"}`)
	var cred *ipc.VoiceCredential
	for _, l := range lines {
		if strings.Contains(l, key) || strings.Contains(l, "SECRET") {
			t.Errorf("a line holds the API key: %s", l)
		}
		msg, err := ipc.NewReader(strings.NewReader(l + "\n")).Read()
		if err != nil {
			t.Fatalf("decode %s: %v", l, err)
		}
		switch msg := msg.(type) {
		case *ipc.VoiceCredential:
			cred = msg
		case *ipc.History:
			if !strings.Contains(strings.Join(msg.Features, ","), "voice") {
				t.Errorf("history features %v lack voice", msg.Features)
			}
		}
	}
	if cred == nil {
		t.Fatalf("no voice_credential among %q", lines)
	}
	if cred.Token != voicekeytest.Minted("xai", 1) || cred.Dialect != ipc.DialectXAI || cred.VAD != nil || !strings.HasPrefix(cred.URL, "ws://") || time.Until(cred.ExpiresAt) < time.Minute {
		t.Errorf("credential = %+v", cred)
	}
	// The other client sees no credential: the next thing it gets is
	// the answer to its own ping.
	if err := other.Send(&ipc.Ping{Ref: "p"}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range recvUntil(t, other, func(m ipc.Msg) bool { _, ok := m.(*ipc.Pong); return ok }) {
		if _, ok := msg.(*ipc.VoiceCredential); ok {
			t.Error("another client received the credential")
		}
	}

	plain := startHearth(t, "", nil)
	lines = exchange(t, plain.addr, `{"type":"voice_request"}`)
	var refused int
	for _, l := range lines {
		if strings.Contains(l, `"voice_credential"`) {
			t.Errorf("a hearth without voice sent %s", l)
		}
		if strings.Contains(l, `"code":"no_voice_provider"`) && strings.Contains(l, "XAI_API_KEY") {
			refused++
		}
		if strings.Contains(l, `"history"`) && strings.Contains(l, `"voice"`) {
			t.Errorf("a hearth without voice lists the feature: %s", l)
		}
	}
	if refused != 1 {
		t.Errorf("want one no_voice_provider error naming XAI_API_KEY, got lines %q", lines)
	}
}

// exchange connects, sends reqs, half-closes and returns every line the
// door sent until it closed (it answers all that was asked first).
func exchange(t *testing.T, addr string, reqs ...string) []string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	msgs := append([]string{`{"type":"connect","token":"` + testToken + `"}`}, reqs...)
	if _, err := io.WriteString(nc, strings.Join(msgs, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	nc.(*net.TCPConn).CloseWrite()
	all, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(all))
	sc.Buffer(nil, ipc.MaxLineBytes+1)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestVoiceRequestRefEchoed: the ref of a voice_request comes back on
// what answers it, the credential or the refusal, so that a client with
// two requests in flight tells them apart.
func TestVoiceRequestRefEchoed(t *testing.T) {
	srv := voicekeytest.New("xai", "xai-key")
	defer srv.Close()
	m, err := voicekey.New(voicekey.Settings{Provider: "xai", Key: "xai-key", BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		withVoice bool
		want      func(ipc.Msg) bool
	}{
		{"credential", true, func(m ipc.Msg) bool { c, ok := m.(*ipc.VoiceCredential); return ok && c.Ref == "vr7" }},
		{"refusal", false, func(m ipc.Msg) bool {
			e, ok := m.(*ipc.Error)
			return ok && e.Code == ipc.CodeNoVoiceProvider && e.Ref == "vr7"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := startHearth(t, "", func(c *testConfig) {
				if tc.withVoice {
					c.Voice = m
				}
			})
			c := dial(t, th.addr)
			if err := c.Send(&ipc.VoiceRequest{Ref: "vr7"}); err != nil {
				t.Fatal(err)
			}
			got := recvUntil(t, c, func(m ipc.Msg) bool {
				switch m.(type) {
				case *ipc.VoiceCredential, *ipc.Error:
					return true
				}
				return false
			})
			if last := got[len(got)-1]; !tc.want(last) {
				t.Errorf("answer = %+v, want it with ref vr7", last)
			}
		})
	}
}

// TestCutTranscriptStoredIncomplete: a transcript marked incomplete (an
// agent turn cut short whose heard text never came) is stored and
// published as an incomplete voice turn; a plain one is not.
func TestCutTranscriptStoredIncomplete(t *testing.T) {
	th := startHearth(t, "", nil)
	c := dial(t, th.addr)
	c.Send(&ipc.Transcript{Role: ipc.RoleAgent, Text: "the whole reply", Ref: "a1"})
	c.Send(&ipc.Transcript{Role: ipc.RoleAgent, Text: "the reply, cut", Ref: "a2", Incomplete: true})
	got := recvUntil(t, c, func(m ipc.Msg) bool { s, ok := m.(*ipc.TurnStored); return ok && s.Ref == "a2" })
	want := map[string]bool{"a1": false, "a2": true}
	seen := 0
	for _, m := range got {
		s, ok := m.(*ipc.TurnStored)
		if !ok {
			continue
		}
		seen++
		if s.Turn.Mode != ipc.ModeVoice || s.Turn.Incomplete != want[s.Ref] {
			t.Errorf("turn %s = %+v, want voice, incomplete %v", s.Ref, s.Turn, want[s.Ref])
		}
	}
	if seen != 2 {
		t.Errorf("got %d turns, want 2: %v", seen, got)
	}
}
