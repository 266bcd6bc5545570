package reliability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends; it skips the test, saying why, where mounting is not
// permitted (not root, no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs for the fault (needs root or CAP_SYS_ADMIN, as in CI): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// ask sends m and returns the first answer carrying ref, recording every
// turn stored (the acknowledgements) on the way.
func ask(t *testing.T, c *ipc.Conn, m ipc.Msg, ref string, acked map[string]string) ipc.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("awaiting %s: %v", ref, err)
		}
		switch got := got.(type) {
		case *ipc.TurnStored:
			acked[got.Turn.ID] = got.Turn.Content
			if got.Ref == ref {
				return got
			}
		case *ipc.Done:
			acked[got.Turn.ID] = got.Turn.Content
		case *ipc.Error:
			if got.Ref == ref {
				return got
			}
		default:
			if refOf(got) == ref && ref != "" {
				return got
			}
		}
	}
}

// A full disk: messages are refused with a clear error (nothing is
// acknowledged that is not stored), hearth keeps answering, and once space
// returns messages are stored again; after a restart every acknowledged
// turn is there.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, 8<<20)
	root := filepath.Join(mnt, "root")
	model := llmtest.NewOpenAI(t, "sk-test")
	opts := hearthtest.Options{Root: root, Env: hearthtest.OpenAIEnv(model)}
	d := hearthtest.Start(t, hearthBin, opts)
	ctx := t.Context()
	c, err := ipc.Dial(ctx, d.Addr, ipc.DialOptions{Token: hearthtest.Token, Client: "disk-full"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acked := map[string]string{}
	if _, ok := ask(t, c, &ipc.Message{Content: "before the disk filled", Ref: "m0"}, "m0", acked).(*ipc.TurnStored); !ok {
		t.Fatal("the first message was not stored")
	}

	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	// The journal's last page may still take a few lines: send until one
	// is refused.
	var refused *ipc.Error
	for i := 1; i <= 200 && refused == nil; i++ {
		ref := fmt.Sprintf("m%d", i)
		refused, _ = ask(t, c, &ipc.Message{Content: fmt.Sprintf("while full %d %s", i, strings.Repeat("x", 2000)), Ref: ref}, ref, acked).(*ipc.Error)
	}
	if refused == nil {
		t.Fatal("200 messages on a full disk, none refused")
	}
	if refused.Code != ipc.CodeInternal || !strings.Contains(refused.Message, "could not store") {
		t.Errorf("refusal on a full disk: %s %q, want internal saying hearth could not store it", refused.Code, refused.Message)
	}
	t.Logf("full disk: %s: %s", refused.Code, refused.Message)
	if _, ok := ask(t, c, &ipc.Health{Ref: "h1"}, "h1", acked).(*ipc.HealthReport); !ok {
		t.Error("no health report on a full disk")
	}
	vw := &ipc.VaultWrite{Op: ipc.VaultOpWrite, Path: "knowledge/projects/full.md", Content: "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Full\n---\n" + strings.Repeat("y", 64<<10) + "\n", Reason: "disk full", Ref: "v1"}
	switch r := ask(t, c, vw, "v1", acked).(type) {
	case *ipc.Error:
		t.Logf("vault write on a full disk: %s: %s", r.Code, r.Message)
	case *ipc.ProposalDecided:
		if r.Decision == "applied" {
			t.Errorf("a vault write on a full disk was acknowledged: %+v", r)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, ok := ask(t, c, &ipc.Message{Content: "after space returned", Ref: "after"}, "after", acked).(*ipc.TurnStored); !ok {
		t.Fatal("no message stored after space returned")
	}
	vw.Ref = "v2"
	if r, ok := ask(t, c, vw, "v2", acked).(*ipc.ProposalDecided); !ok || r.Decision != "applied" || r.Commit == "" {
		t.Errorf("vault write after space returned: %+v", r)
	}
	c.Close()
	d.Stop(t)

	d = hearthtest.Start(t, hearthBin, opts)
	c2, err := ipc.Dial(ctx, d.Addr, ipc.DialOptions{Token: hearthtest.Token, Client: "disk-full"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	page, ok := ask(t, c2, &ipc.HistoryQuery{Ref: "q"}, "q", map[string]string{}).(*ipc.HistoryPage)
	if !ok {
		t.Fatal("no history page")
	}
	stored := map[string]string{}
	for _, turn := range page.Turns {
		stored[turn.ID] = turn.Content
	}
	for id, content := range acked {
		if stored[id] != content {
			t.Errorf("acknowledged turn %s (%.40q) lost: stored %.40q", id, content, stored[id])
		}
	}
	t.Logf("%d acknowledged turns, all stored", len(acked))
	d.Stop(t)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for size := len(buf); size > 0; size /= 2 {
		for {
			if _, err := f.Write(buf[:size]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill: %v", err)
				}
				break
			}
		}
	}
}

// A read-only memory root: hearth refuses to start and says why.
func TestReadOnlyRoot(t *testing.T) {
	mnt := mountTmpfs(t, 8<<20)
	root := filepath.Join(mnt, "root")
	d := hearthtest.Start(t, hearthBin, hearthtest.Options{Root: root})
	d.Stop(t)
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount the tmpfs read-only: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hearthBin, "-addr", "127.0.0.1:0", "-root", root)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "APP_AUTH_TOKEN=" + hearthtest.Token}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "read-only file system") || !strings.Contains(string(out), root) {
		t.Errorf("hearth on a read-only root: %v\n%s\nwant an exit naming the root and the read-only file system", err, out)
	}
}
