package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// deviceCmd is mnemo on a second device: its own home and config dir,
// kept across runs, no APP_AUTH_TOKEN and no --addr (it connects where it
// paired).
func deviceCmd(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	built(t)
	cmd := exec.Command(bins.Mnemo, args...)
	cmd.Env = []string{
		"HOME=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"PATH=" + os.Getenv("PATH"),
	}
	return cmd
}

func runDevice(t *testing.T, home string, args ...string) mnemoRun {
	t.Helper()
	cmd := deviceCmd(t, home, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := mnemoRun{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mnemo %v: %v", args, err)
	}
	return r
}

// TestPairChatRevokeE2E: the real hearth with -tls; the owner asks for a
// pairing code; a second device pairs with it (pinning hearth's
// certificate, the one hearth logged), chats with its own token, and is
// revoked by the owner while a chat is open: that chat ends, and the
// device's token no longer gets in.
func TestPairChatRevokeE2E(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	built(t)
	d := hearthtest.Start(t, bins.Hearth, hearthtest.Options{Root: root, Home: filepath.Join(root, "..", "hearth-home"), Env: openaiEnv(model), Args: []string{"-tls"}})
	addr := ipc.TLSScheme + d.Addr
	fp := regexp.MustCompile(`fingerprint=(sha256:[0-9a-f]{64})`).FindStringSubmatch(d.Log())
	if fp == nil {
		t.Fatalf("hearth did not log its TLS fingerprint:\n%s", d.Log())
	}

	r := runMnemo(t, addr, token, "", "pair")
	code := regexp.MustCompile(`pairing code: ([0-9A-Z]{10})`).FindStringSubmatch(r.stdout)
	if r.code != 0 || code == nil || !strings.Contains(r.stdout, fp[1]) {
		t.Fatalf("owner's pair: %v; want a code and fingerprint %s", r, fp[1])
	}

	dev := t.TempDir()
	r = runDevice(t, dev, "pair", addr, code[1], "--name", "laptop")
	if r.code != 0 || !strings.Contains(r.stdout, fp[1]) || !strings.Contains(r.stdout, `paired as "laptop"`) {
		t.Fatalf("device's pair: %v", r)
	}
	credPath := filepath.Join(dev, "config", "mnemo", "device.json")
	cred, err := ipc.ReadDevice(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if cred.Addr != addr || cred.Fingerprint != fp[1] || !strings.HasPrefix(cred.Token, "mnemo_dev_") {
		t.Fatalf("saved credential: addr %q fingerprint %q", cred.Addr, cred.Fingerprint)
	}
	// The code was single use.
	if r := runDevice(t, t.TempDir(), "pair", addr, code[1]); r.code == 0 {
		t.Fatalf("a used code paired again: %v", r)
	}

	if r := runDevice(t, dev, "send", "hello from the laptop"); r.code != 0 || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("device send: %v", r)
	}
	// A collaborator may not manage devices.
	if r := runDevice(t, dev, "devices"); r.code == 0 || !strings.Contains(r.stderr, "not allowed") {
		t.Fatalf("collaborator's devices: %v, want refused", r)
	}
	r = runMnemo(t, addr, token, "", "devices")
	if r.code != 0 || !strings.Contains(r.stdout, cred.ID) || !strings.Contains(r.stdout, "laptop") || !strings.Contains(r.stdout, "collaborator") {
		t.Fatalf("owner's devices: %v", r)
	}

	// An open chat of the device...
	chat := deviceCmd(t, dev, "chat")
	stdin, err := chat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := chat.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var chatErr bytes.Buffer
	chat.Stderr = &chatErr
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chat.Process.Kill(); chat.Wait() })
	io.WriteString(stdin, "are you there?\n")
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for replied := false; !replied; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("chat ended before replying; stderr:\n%s", chatErr.String())
			}
			replied = !strings.HasPrefix(l, ">") && strings.TrimSpace(l) != ""
		case <-deadline:
			t.Fatal("no reply in the device's chat")
		}
	}

	// ...ends when the owner revokes the device.
	if r := runMnemo(t, addr, token, "", "devices", "revoke", cred.ID); r.code != 0 || !strings.Contains(r.stdout, "revoked "+cred.ID) {
		t.Fatalf("revoke: %v", r)
	}
	exited := make(chan error, 1)
	go func() {
		for range lines {
		}
		exited <- chat.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("revoked chat exited with %v, want exit 3; stderr:\n%s", err, chatErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the revoked device's chat is still open; stderr:\n%s", chatErr.String())
	}
	if r := runDevice(t, dev, "send", "still here?"); r.code != 3 {
		t.Errorf("send after revoke: %v, want exit 3", r)
	}
	// auth.json in hearth's config dir holds the hash, not the token.
	b, err := os.ReadFile(filepath.Join(root, "..", "hearth-home", "config", "mnemo", "auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Devices []map[string]any }
	if err := json.Unmarshal(b, &f); err != nil || len(f.Devices) != 1 || f.Devices[0]["revoked_at"] == nil {
		t.Errorf("auth.json: %v %s", err, b)
	}
	if strings.Contains(string(b), cred.Token) {
		t.Error("auth.json holds the device token")
	}
	if strings.Contains(d.Log(), cred.Token) {
		t.Error("hearth's log holds the device token")
	}
}
