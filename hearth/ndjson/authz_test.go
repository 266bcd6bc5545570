package ndjson

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// clientTypes are the messages a client may send, connect first.
func clientTypes() []string {
	types := []string{ipc.TypeConnect}
	for t := range needs {
		types = append(types, t)
	}
	for t := range free {
		types = append(types, t)
	}
	slices.Sort(types[1:])
	return types
}

// TestAuthorizationMatrix pins what each actor may send through this
// door: every actor type × every client message, against the default
// rules, in testdata/authz.golden (go test -update rewrites it).
func TestAuthorizationMatrix(t *testing.T) {
	st, err := auth.Open(auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# actor × client message → allow | forbidden (DESIGN.md, Auth)\n")
	for _, a := range auth.Actors {
		id := auth.Identity{Subject: "x", Actor: a}
		for _, typ := range clientTypes() {
			var err error
			if typ == ipc.TypeConnect {
				err = st.Authorize(id, connectNeed.res, connectNeed.act)
			} else {
				m, derr := ipc.Decode([]byte(`{"type":"` + typ + `"}`))
				if derr != nil {
					t.Fatalf("decode %s: %v", typ, derr)
				}
				err = authorize(st, id, m)
			}
			verdict := "allow"
			if err != nil {
				verdict = "forbidden"
			}
			n, _ := needOf(typ)
			if typ == ipc.TypeConnect {
				n = connectNeed
			}
			fmt.Fprintf(&b, "%-16s %-16s %-13s %-6s %s\n", a, typ, n.res, n.act, verdict)
		}
	}
	golden := filepath.Join("testdata", "authz.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("authorization matrix changed; diff against %s (go test -update if meant):\n%s", golden, b.String())
	}
}

// pairOver pairs a device of actor over the door, as the owner would.
func pairOver(t *testing.T, th *testHearth, actor auth.Actor, name string) *ipc.Paired {
	t.Helper()
	owner := dial(t, th.addr)
	if err := owner.Send(&ipc.PairStart{Actor: string(actor), Ref: "p"}); err != nil {
		t.Fatal(err)
	}
	msgs := recvUntil(t, owner, func(m ipc.Msg) bool { _, ok := m.(*ipc.PairCode); return ok })
	pc := msgs[len(msgs)-1].(*ipc.PairCode)
	if pc.Ref != "p" || len(pc.Code) < 8 || pc.Actor != string(actor) {
		t.Fatalf("pair_code %+v", pc)
	}
	owner.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := ipc.PairDevice(ctx, th.addr, ipc.DialOptions{Client: "test"}, pc.Code, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startAuthHearth(t *testing.T) (*testHearth, *auth.Store) {
	t.Helper()
	st, err := auth.Open(auth.Options{Dir: t.TempDir(), OwnerToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	th := startHearth(t, "", func(c *testConfig) {
		c.Model = newScriptModel()
		c.Auth = st
	})
	return th, st
}

func dialAs(t *testing.T, addr, token string) (*ipc.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: token, Client: "test"})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestForbiddenOverTCP sends, for each actor, every message the matrix
// forbids it: each gets error{forbidden} and nothing else happens; an
// actor that may not connect is refused at connect.
func TestForbiddenOverTCP(t *testing.T) {
	th, st := startAuthHearth(t)
	for _, a := range auth.Actors[1:] { // the owner may do everything
		t.Run(string(a), func(t *testing.T) {
			p := pairOver(t, th, a, "dev-"+string(a))
			c, err := dialAs(t, th.addr, p.Token)
			id := auth.Identity{Subject: p.Device.Name, Actor: a}
			if st.Authorize(id, connectNeed.res, connectNeed.act) != nil {
				if e, ok := err.(*ipc.Error); !ok || e.Code != ipc.CodeForbidden {
					t.Fatalf("connect: %v, want forbidden", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sent []string
			for _, typ := range clientTypes()[1:] {
				m, _ := ipc.Decode([]byte(`{"type":"` + typ + `","ref":"` + typ + `"}`))
				if authorize(st, id, m) == nil {
					continue
				}
				sent = append(sent, typ)
				if err := c.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			if len(sent) == 0 {
				t.Fatal("nothing forbidden: the matrix is wrong")
			}
			c.Send(&ipc.Ping{Ref: "end"})
			msgs := recvUntil(t, c, func(m ipc.Msg) bool { p, ok := m.(*ipc.Pong); return ok && p.Ref == "end" })
			var got []string
			for _, m := range msgs[:len(msgs)-1] {
				e, ok := m.(*ipc.Error)
				if !ok || e.Code != ipc.CodeForbidden {
					t.Errorf("got %T %+v, want only forbidden errors", m, m)
					continue
				}
				got = append(got, e.Ref)
			}
			// Messages without a ref are answered with none.
			want := slices.Clone(sent)
			for i, typ := range want {
				m, _ := ipc.Decode([]byte(`{"type":"` + typ + `","ref":"x"}`))
				if refOf(m) == "" {
					want[i] = ""
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("forbidden answers %v, want %v", got, want)
			}
		})
	}
}

// TestPairUseRevoke pairs a device over TCP, chats with its token, and
// revokes it: its live connection is told and closed, and the token no
// longer connects.
func TestPairUseRevoke(t *testing.T) {
	th, st := startAuthHearth(t)
	p := pairOver(t, th, auth.ActorCollaborator, "laptop")
	if !strings.HasPrefix(p.Token, auth.DeviceTokenPrefix) || p.Device.Name != "laptop" || p.Device.Actor != "collaborator" {
		t.Fatalf("paired %+v", p.Device)
	}
	dev, err := dialAs(t, th.addr, p.Token)
	if err != nil {
		t.Fatal(err)
	}
	dev.Send(&ipc.Whoami{Ref: "w"})
	msgs := recvUntil(t, dev, func(m ipc.Msg) bool { _, ok := m.(*ipc.Identity); return ok })
	if id := msgs[len(msgs)-1].(*ipc.Identity); id.Subject != "laptop" || id.Actor != "collaborator" || id.Device != p.Device.ID {
		t.Fatalf("whoami %+v", id)
	}
	dev.Send(&ipc.Message{Content: "hi from the laptop", Ref: "m1"})
	msgs = recvUntil(t, dev, isDone)
	if got := streamed(msgs); got != "echo: hi from the laptop" {
		t.Fatalf("reply %q", got)
	}

	owner := dial(t, th.addr)
	owner.Send(&ipc.Devices{Ref: "d"})
	msgs = recvUntil(t, owner, func(m ipc.Msg) bool { _, ok := m.(*ipc.DeviceList); return ok })
	if l := msgs[len(msgs)-1].(*ipc.DeviceList); len(l.Devices) != 1 || l.Devices[0].ID != p.Device.ID || l.Devices[0].LastUsed.IsZero() {
		t.Fatalf("devices %+v", l)
	}
	owner.Send(&ipc.DeviceRevoke{ID: p.Device.ID, Ref: "r"})
	recvUntil(t, owner, func(m ipc.Msg) bool { d, ok := m.(*ipc.DeviceRevoked); return ok && d.ID == p.Device.ID })

	// The live connection is told why, then closed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var why *ipc.Error
	for {
		m, err := dev.Recv(ctx)
		if err != nil {
			break
		}
		if e, ok := m.(*ipc.Error); ok {
			why = e
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the revoked device's connection stayed open")
	}
	if why == nil || why.Code != ipc.CodeUnauthorized || !strings.Contains(why.Message, "revoked") {
		t.Errorf("farewell %+v, want unauthorized: revoked", why)
	}
	if _, err := dialAs(t, th.addr, p.Token); err == nil {
		t.Fatal("a revoked token connected")
	}
	if d := st.Devices(); len(d) != 1 || !d[0].RevokedAt.After(d[0].Created.Add(-time.Second)) {
		t.Errorf("store %+v", d)
	}
	// The owner's shared token is unaffected.
	owner.Send(&ipc.Ping{Ref: "still"})
	recvUntil(t, owner, func(m ipc.Msg) bool { p, ok := m.(*ipc.Pong); return ok && p.Ref == "still" })
}

// TestPairCodesOverTCP: a wrong, an expired and a used code are refused
// alike, as unauthorized, and each counts as a failed handshake for the
// throttle.
func TestPairCodesOverTCP(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	st, err := auth.Open(auth.Options{OwnerToken: testToken, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddr("127.0.0.1")
	thr := auth.NewThrottle(auth.ThrottleOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	th := startHearth(t, "", func(tc *testConfig) { tc.Auth, tc.Throttle = st, thr })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := func() string {
		pc, err := st.StartPairing(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return pc.Code
	}
	used := code()
	if _, err := ipc.PairDevice(ctx, th.addr, ipc.DialOptions{}, used, "first"); err != nil {
		t.Fatal(err)
	}
	expired := code()
	c.advance(5 * time.Minute)
	tests := []struct{ name, code string }{
		{"wrong", "ABCDEFGHJK"},
		{"expired", expired},
		{"used", used},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ipc.PairDevice(ctx, th.addr, ipc.DialOptions{}, tt.code, "x")
			if e, ok := err.(*ipc.Error); !ok || e.Code != ipc.CodeUnauthorized {
				t.Fatalf("err = %v, want unauthorized", err)
			}
		})
	}
	if n := len(st.Devices()); n != 1 {
		t.Errorf("%d devices, want 1", n)
	}
	// Each refusal was a failure of this source, counted by the throttle
	// every door shares.
	if n, sources := thr.Stats(); n != uint64(len(tests)) || sources != 1 || !thr.Suspect(src) {
		t.Errorf("throttle: %d failures from %d sources, want %d from 1 (this one)", n, sources, len(tests))
	}
}

// TestThrottleSharedAcrossDoors: failures counted by one door's throttle
// slow the same source at another door sharing it.
func TestThrottleSharedAcrossDoors(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	th := auth.NewThrottle(auth.ThrottleOptions{BaseDelay: time.Second, Now: c.now})
	g := newGateWith(gateOptions{}, th)
	src := srcA
	th.Failed(src) // the HTTP door, say
	if d := g.penalty(src); d != time.Second {
		t.Errorf("penalty %v, want the shared throttle's 1s", d)
	}
	if d := g.failed(src); d != 2*time.Second {
		t.Errorf("second failure %v, want 2s", d)
	}
	if d := th.Wait(srcB); d != 0 {
		t.Errorf("another source waits %v", d)
	}
}
