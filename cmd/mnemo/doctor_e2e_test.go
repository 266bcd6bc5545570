package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// mnemo doctor against the real hearth: what hearth knows comes over the
// protocol, what is on disk from the root. This hearth has no word
// vectors where it looks (its home is empty), so recall fell back to
// lexical: doctor says so, with the fix, and exits 1.
func TestDoctorCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))
	if r := runMnemo(t, d.Addr, token, "", "send", "hello"); r.code != 0 {
		t.Fatalf("send: %v", r)
	}
	r := runMnemo(t, d.Addr, token, "", "--root", root, "doctor")
	if r.code != 1 {
		t.Errorf("doctor: %v, want exit 1 (recall is lexical for want of vectors)", r)
	}
	for _, want := range []string{"ok   token", "ok   hearth", "ok   model", "ok   memory", "ok   journal", "FAIL recall", "no word vectors at", "fix: `make vectors`"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%v", want, r)
		}
	}
	d.Stop(t)
	r = runMnemo(t, d.Addr, token, "", "--root", root, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL hearth") || !strings.Contains(r.stdout, "ok   memory") {
		t.Errorf("doctor with hearth stopped: %v, want hearth unreachable and the root still checked", r)
	}
}

// mnemo doctor --provider against the real hearth and the stand-in
// provider: hearth makes the call with its own key and doctor explains
// the outcome, never showing the key.
func TestDoctorProviderCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(m *llmtest.Server) []string
		want []string
	}{
		{"answers", func(m *llmtest.Server) []string { return openaiEnv(m) },
			[]string{"ok   model    openai stand-in answered in"}},
		{"key refused", func(m *llmtest.Server) []string {
			return append(openaiEnv(m), "OPENAI_API_KEY=sk-wrong-key-0123456789")
		}, []string{"FAIL model    openai stand-in: the model provider rejected the API key (HTTP 401)", "fix: set OPENAI_API_KEY to a valid key"}},
		{"unreachable", func(m *llmtest.Server) []string {
			return append(openaiEnv(m), "OPENAI_BASE_URL="+llmtest.RefusedURL(t))
		}, []string{"FAIL model", "unreachable (connection refused)", "fix: check OPENAI_BASE_URL"}},
		{"slow", func(m *llmtest.Server) []string {
			for range 3 {
				m.Enqueue(llmtest.Reply{Silent: true})
			}
			return append(openaiEnv(m), "MNEMO_MODEL_FIRST_BYTE_TIMEOUT=300ms")
		}, []string{"FAIL model", "did not answer within 300ms; tried 3 times", "fix: try again later, or raise model.first_byte_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := llmtest.NewOpenAI(t, "sk-test")
			root := filepath.Join(t.TempDir(), "root")
			d := startDaemon(t, root, "127.0.0.1:0", tc.env(model))
			r := runMnemo(t, d.Addr, token, "", "--root", root, "doctor", "--provider")
			for _, want := range tc.want {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("doctor --provider output lacks %q:\n%v", want, r)
				}
			}
			if strings.Contains(r.stdout+r.stderr, "sk-wrong") || strings.Contains(r.stdout+r.stderr, "sk-test") {
				t.Errorf("doctor showed a key:\n%v", r)
			}
			d.Stop(t)
		})
	}
}
