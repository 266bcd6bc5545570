package main_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/voicekey/voicekeytest"
)

// TestVoiceCredentialE2E: the real hearth, configured by the environment
// with the stand-in client-secret endpoint (MNEMO_VOICE_BASE_URL), answers
// voice_request with a voice_credential carrying the minted value and the
// session settings; the API key is in no line a client receives.
func TestVoiceCredentialE2E(t *testing.T) {
	const key = "xai-SECRET-e2e-voice-key"
	srv := voicekeytest.New("xai", key)
	defer srv.Close()
	d := startDaemon(t, t.TempDir(), []string{
		"XAI_API_KEY=" + key, "XAI_BASE_URL=http://127.0.0.1:1/v1", // chat is never used here
		"MNEMO_VOICE_BASE_URL=" + srv.BaseURL(), "MNEMO_VOICE_VOICE=ara",
	})
	nc, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write([]byte(`{"type":"connect","token":"` + token + `"}` + "\n" + `{"type":"voice_request"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(nc)
	sc.Buffer(nil, 2<<20)
	var cred string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, key) || strings.Contains(line, "SECRET") {
			t.Errorf("a line holds the API key: %s", line)
		}
		if strings.Contains(line, `"type":"error"`) {
			t.Fatalf("hearth refused: %s", line)
		}
		if strings.Contains(line, `"type":"voice_credential"`) {
			cred = line
			break
		}
	}
	if cred == "" {
		t.Fatalf("no voice_credential: %v", sc.Err())
	}
	for _, want := range []string{
		`"token":"` + voicekeytest.Minted("xai", 1) + `"`, `"dialect":"xai"`, `"voice":"ara"`,
		`"vad":{"type":"server_vad","threshold":0.2,"silence_ms":500,"prefix_padding_ms":300}`,
		`"url":"ws://127.0.0.1:`, `/v1/realtime?model=grok-voice-latest"`, `"transcription_model":"grok-transcribe"`,
		`"name":"memory_search"`, `[mode: text→voice, by: user`,
	} {
		if !strings.Contains(cred, want) {
			t.Errorf("voice_credential lacks %s:\n%s", want, cred)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
		t.Errorf("the stand-in got %d requests, want one with the key as bearer", len(reqs))
	}
}
