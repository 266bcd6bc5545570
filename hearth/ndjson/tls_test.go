package ndjson

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

func startTLSHearth(t *testing.T) (*testHearth, string) {
	t.Helper()
	cfg, fp, err := auth.ServerTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = newScriptModel()
		c.TLS, c.Fingerprint = cfg, fp
	})
	return th, fp
}

// TestTLSPinning: the first connection pins hearth's certificate and
// tells the user its fingerprint; later ones check it; a hearth whose
// certificate is not the pinned one is refused with how to re-pin.
func TestTLSPinning(t *testing.T) {
	th, fp := startTLSHearth(t)
	other, otherFP := startTLSHearth(t)
	known := &ipc.KnownHearths{Path: filepath.Join(t.TempDir(), "known_hearths")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pinned []string
	opts := ipc.DialOptions{Token: testToken, Known: known, OnPin: func(host, f string) { pinned = append(pinned, host+" "+f) }}

	c, err := ipc.Dial(ctx, ipc.TLSScheme+th.addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Send(&ipc.Message{Content: "over tls", Ref: "m"})
	if got := streamed(recvUntil(t, c, isDone)); got != "echo: over tls" {
		t.Errorf("reply %q", got)
	}
	c.Close()
	if len(pinned) != 1 || pinned[0] != th.addr+" "+fp {
		t.Fatalf("pinned %v, want %s %s", pinned, th.addr, fp)
	}
	if fi, err := os.Stat(known.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("known_hearths: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if c, err = ipc.Dial(ctx, ipc.TLSScheme+th.addr, opts); err != nil {
		t.Fatalf("second connection: %v", err)
	}
	c.Close()
	if len(pinned) != 1 {
		t.Errorf("pinned again: %v", pinned)
	}

	// other's address now pinned to th's certificate: other's is a
	// changed one.
	if _, err := known.Check(other.addr, fp); err != nil {
		t.Fatal(err)
	}
	_, err = ipc.Dial(ctx, ipc.TLSScheme+other.addr, opts)
	var pm *ipc.PinMismatchError
	if !errors.As(err, &pm) || pm.Got != otherFP || pm.Pinned != fp {
		t.Fatalf("changed certificate: %v, want a pin mismatch", err)
	}
	if !strings.Contains(err.Error(), "mnemo trust --forget "+other.addr) {
		t.Errorf("refusal %q does not say how to re-pin", err)
	}
	// Forgotten, it pins anew.
	if ok, err := known.Forget(other.addr); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	if c, err = ipc.Dial(ctx, ipc.TLSScheme+other.addr, opts); err != nil {
		t.Fatalf("after forgetting: %v", err)
	}
	c.Close()

	// A plain client on the TLS port gets nowhere.
	if _, err := ipc.Dial(ctx, th.addr, ipc.DialOptions{Token: testToken}); err == nil {
		t.Fatal("plain TCP connected to the TLS door")
	}
}
