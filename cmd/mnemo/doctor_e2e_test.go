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
