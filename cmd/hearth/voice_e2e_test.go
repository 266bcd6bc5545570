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

// TestVoiceToolCallE2E: the real hearth runs a tool the voice model
// called (voice_tool_call) through its registry and answers the asker
// with voice_tool_result; the call and its outcome are journaled with
// mode voice, so a client connecting later finds them in its history.
func TestVoiceToolCallE2E(t *testing.T) {
	const key = "xai-SECRET-e2e-voice-key"
	srv := voicekeytest.New("xai", key)
	defer srv.Close()
	d := startDaemon(t, t.TempDir(), []string{
		"XAI_API_KEY=" + key, "XAI_BASE_URL=http://127.0.0.1:1/v1", // chat is never used here
		"MNEMO_VOICE_BASE_URL=" + srv.BaseURL(),
	})
	lines := func(reqs ...string) *bufio.Scanner {
		t.Helper()
		nc, err := net.Dial("tcp", d.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		msg := `{"type":"connect","token":"` + token + `"}` + "\n"
		for _, r := range reqs {
			msg += r + "\n"
		}
		if _, err := nc.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(nc)
		sc.Buffer(nil, 2<<20)
		return sc
	}

	sc := lines(
		`{"type":"voice_tool_call","call_id":"call_t","name":"current_time","arguments":"{\"timezone\":\"UTC\",\"reason\":\"the owner asked the time\"}","ref":"vt1"}`,
		`{"type":"voice_tool_call","call_id":"call_x","name":"no_such_tool","arguments":"{}","ref":"vt2"}`,
	)
	results := map[string]string{}
	for len(results) < 2 && sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"type":"error"`) {
			t.Fatalf("hearth refused: %s", line)
		}
		if strings.Contains(line, `"type":"voice_tool_result"`) {
			for _, ref := range []string{"vt1", "vt2"} {
				if strings.Contains(line, `"ref":"`+ref+`"`) {
					results[ref] = line
				}
			}
		}
	}
	if ok := results["vt1"]; !strings.Contains(ok, `"call_id":"call_t"`) || !strings.Contains(ok, "UTC") || strings.Contains(ok, `"is_error"`) {
		t.Errorf("current_time result: %s", ok)
	}
	if bad := results["vt2"]; !strings.Contains(bad, `"is_error":true`) || !strings.Contains(bad, `no_such_tool`) {
		t.Errorf("unknown tool result: %s", bad)
	}

	// A client that connects now has them in its history, mode voice.
	sc = lines()
	if !sc.Scan() {
		t.Fatalf("no history: %v", sc.Err())
	}
	hist := sc.Text()
	for _, want := range []string{`"mode":"voice","tool_calls":[{"id":"call_t","name":"current_time"`, `"reason":"the owner asked the time"`, `"tool":{"id":"call_t","name":"current_time"`} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %s:\n%s", want, hist)
		}
	}
}
