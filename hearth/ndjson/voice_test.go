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
