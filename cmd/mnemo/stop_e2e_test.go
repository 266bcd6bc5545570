package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// mnemo stop asks the real hearth to shut down over the protocol: hearth
// exits cleanly and says why in its log, and a second stop finds nobody
// to ask (exit 3).
func TestStopCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, filepath.Join(t.TempDir(), "root"), "127.0.0.1:0", openaiEnv(model))
	if r := runMnemo(t, d.Addr, token, "", "send", "remember the tomatoes"); r.code != 0 {
		t.Fatalf("send: %v", r)
	}

	r := runMnemo(t, d.Addr, token, "", "stop")
	if r.code != 0 || !strings.Contains(r.stdout, "hearth stopped") {
		t.Fatalf("stop: %v, want exit 0 saying hearth stopped", r)
	}
	if err := d.Exited(t, 30*time.Second); err != nil {
		t.Errorf("hearth exit after mnemo stop: %v", err)
	}
	if !strings.Contains(d.Log(), "a client asked hearth to shut down") {
		t.Errorf("hearth's log does not say a client stopped it:\n%s", d.Log())
	}
	if r := runMnemo(t, d.Addr, token, "", "stop"); r.code != 3 {
		t.Errorf("stop with hearth gone: %v, want exit 3", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "stop", "now"); r.code != 2 {
		t.Errorf("stop with an argument: %v, want exit 2", r)
	}
}
