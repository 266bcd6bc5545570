package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const ownerTok = "owner-secret-token"

func testStore(t *testing.T) (*Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s, err := Open(Options{Dir: t.TempDir(), OwnerToken: ownerTok, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func pair(t *testing.T, s *Store, actor Actor, name string) (DeviceInfo, string) {
	t.Helper()
	pc, err := s.StartPairing(context.Background(), actor)
	if err != nil {
		t.Fatal(err)
	}
	d, tok, err := s.Redeem(context.Background(), pc.Code, name)
	if err != nil {
		t.Fatal(err)
	}
	return d, tok
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	s, _ := testStore(t)
	lap, lapTok := pair(t, s, ActorOwner, "laptop")
	_, phoneTok := pair(t, s, ActorCollaborator, "phone")
	gone, goneTok := pair(t, s, ActorCollaborator, "old")
	if err := s.Revoke(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddr("192.0.2.7")
	tests := []struct {
		name, cred string
		want       Identity
		err        error
	}{
		{"shared token is the owner", ownerTok, Identity{Subject: "owner", Actor: ActorOwner, Source: src}, nil},
		{"device token", lapTok, Identity{Subject: "laptop", Actor: ActorOwner, Device: lap.ID, Source: src}, nil},
		{"collaborator", phoneTok, Identity{Subject: "phone", Actor: ActorCollaborator, Device: "", Source: src}, nil},
		{"revoked", goneTok, Identity{}, ErrUnauthenticated},
		{"wrong", lapTok + "x", Identity{}, ErrUnauthenticated},
		{"empty", "", Identity{}, ErrUnauthenticated},
		{"a hash is not a token", HashToken(lapTok), Identity{}, ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Authenticate(ctx, tt.cred, src)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.want.Actor == ActorCollaborator {
				tt.want.Device = got.Device // minted
			}
			if got != tt.want {
				t.Errorf("identity = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStoreFileHoldsHashesOnly(t *testing.T) {
	s, _ := testStore(t)
	_, tok := pair(t, s, ActorCollaborator, "phone")
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), tok) || strings.Contains(string(b), strings.TrimPrefix(tok, DeviceTokenPrefix)) {
		t.Fatal("auth.json holds the device token in plaintext")
	}
	if !strings.Contains(string(b), HashToken(tok)) {
		t.Fatal("auth.json does not hold the token's hash")
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("auth.json mode %v, want 0600", fi.Mode().Perm())
	}
	// Reopened, the device still authenticates.
	s2, err := Open(Options{Dir: filepath.Dir(s.Path())})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := s2.Authenticate(context.Background(), tok, netip.Addr{}); err != nil || id.Subject != "phone" {
		t.Fatalf("after reopening: %+v, %v", id, err)
	}
	if !strings.HasPrefix(tok, DeviceTokenPrefix) || len(tok) < len(DeviceTokenPrefix)+43 {
		t.Errorf("token %q: want the prefix and 32 random bytes", tok[:len(DeviceTokenPrefix)])
	}
}

func TestPairingCodes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(s *Store, c *clock, code string) error
		err  error
	}{
		{"right code", func(s *Store, c *clock, code string) error {
			_, _, err := s.Redeem(ctx, code, "a")
			return err
		}, nil},
		{"typed loosely", func(s *Store, c *clock, code string) error {
			_, _, err := s.Redeem(ctx, " "+strings.ToLower(code[:5])+"-"+code[5:], "a")
			return err
		}, nil},
		{"wrong code", func(s *Store, c *clock, code string) error {
			_, _, err := s.Redeem(ctx, "ZZZZZZZZZZ", "a")
			return err
		}, ErrUnauthenticated},
		{"empty code", func(s *Store, c *clock, code string) error {
			_, _, err := s.Redeem(ctx, "", "a")
			return err
		}, ErrUnauthenticated},
		{"expired", func(s *Store, c *clock, code string) error {
			c.add(5 * time.Minute)
			_, _, err := s.Redeem(ctx, code, "a")
			return err
		}, ErrUnauthenticated},
		{"used", func(s *Store, c *clock, code string) error {
			if _, _, err := s.Redeem(ctx, code, "a"); err != nil {
				return err
			}
			_, _, err := s.Redeem(ctx, code, "b")
			return err
		}, ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := testStore(t)
			pc, err := s.StartPairing(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(pc.Code) < 8 || pc.Actor != ActorCollaborator || !pc.Expires.Equal(c.now().Add(5*time.Minute)) {
				t.Fatalf("code %+v", pc)
			}
			if err := tt.run(s, c, pc.Code); !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		s, _ := testStore(t)
		for range 4 {
			if _, err := s.StartPairing(ctx, ActorOwner); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.StartPairing(ctx, ActorOwner); !errors.Is(err, ErrTooManyCodes) {
			t.Fatalf("fifth code: %v", err)
		}
	})
}

func TestRevokeTellsDoors(t *testing.T) {
	s, _ := testStore(t)
	d, _ := pair(t, s, ActorCollaborator, "phone")
	got := make(chan string, 1)
	stop := s.OnRevoke(func(id string) { got <- id })
	defer stop()
	if err := s.Revoke(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}
	if id := <-got; id != d.ID {
		t.Fatalf("told %q, want %q", id, d.ID)
	}
	if err := s.Revoke(context.Background(), "nope"); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("unknown device: %v", err)
	}
}

func TestAuthorizeRules(t *testing.T) {
	s, _ := testStore(t)
	s.f.Rules = []Rule{
		{Subject: "phone", Resource: ResVoice, Action: ActWrite, Effect: Deny},
		{Actor: ActorService, Resource: ResMemory, Action: ActRead, Effect: Allow},
	}
	col := Identity{Subject: "tablet", Actor: ActorCollaborator}
	phone := Identity{Subject: "phone", Actor: ActorCollaborator}
	svc := Identity{Subject: "backup", Actor: ActorService}
	tests := []struct {
		id   Identity
		res  Resource
		act  Action
		want error
	}{
		{Identity{Actor: ActorOwner}, ResAdmin, ActAdmin, nil},
		{col, ResConversation, ActWrite, nil},
		{col, ResVoice, ActWrite, nil},
		{phone, ResVoice, ActWrite, ErrForbidden}, // a subject's deny beats the actor's default allow
		{col, ResVault, ActWrite, ErrForbidden},
		{col, ResAdmin, ActAdmin, ErrForbidden},
		{svc, ResMemory, ActRead, nil},
		{svc, ResConversation, ActRead, ErrForbidden},
		{Identity{Actor: ActorExternalAgent}, ResVault, ActWrite, nil},
		{Identity{Actor: ActorExternalAgent}, ResConversation, ActRead, ErrForbidden},
		{Identity{}, ResConversation, ActRead, ErrForbidden},
	}
	for _, tt := range tests {
		if err := s.Authorize(tt.id, tt.res, tt.act); !errors.Is(err, tt.want) && (err != nil || tt.want != nil) {
			t.Errorf("%s/%s %s %s: %v, want %v", tt.id.Actor, tt.id.Subject, tt.res, tt.act, err, tt.want)
		}
	}
}

func TestExportHasNoSecret(t *testing.T) {
	s, _ := testStore(t)
	_, tok := pair(t, s, ActorCollaborator, "phone")
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tok, HashToken(tok), ownerTok, "token_sha256"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("export holds %q", secret)
		}
	}
	if !strings.Contains(string(b), `"phone"`) {
		t.Error("export lacks the device")
	}
}

func TestDecodeFile(t *testing.T) {
	h := HashToken("x")
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"empty", `{"version":1,"devices":[]}`, true},
		{"device", `{"version":1,"devices":[{"id":"a","name":"n","actor":"owner","token_sha256":"` + h + `","created":"2026-01-01T00:00:00Z"}]}`, true},
		{"plaintext token", `{"version":1,"devices":[{"id":"a","name":"n","actor":"owner","token_sha256":"mnemo_dev_abc","created":"2026-01-01T00:00:00Z"}]}`, false},
		{"unknown actor", `{"version":1,"devices":[{"id":"a","actor":"god","token_sha256":"` + h + `"}]}`, false},
		{"repeated id", `{"version":1,"devices":[{"id":"a","actor":"owner","token_sha256":"` + h + `"},{"id":"a","actor":"owner","token_sha256":"` + h + `"}]}`, false},
		{"bad rule", `{"version":1,"devices":[],"rules":[{"actor":"owner","resource":"x","action":"read","effect":"allow"}]}`, false},
		{"unknown field", `{"version":1,"devices":[],"token":"x"}`, false},
		{"version", `{"version":2,"devices":[]}`, false},
		{"trailing", `{"version":1,"devices":[]} {}`, false},
	}
	for _, tt := range tests {
		if _, err := DecodeFile([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func FuzzDecodeFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"devices":[{"id":"a","name":"n","actor":"owner","token_sha256":"` + HashToken("x") + `"}],"rules":[{"actor":"service","resource":"*","action":"read","effect":"allow"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := DecodeFile(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes the same.
		out, err := json.Marshal(fl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeFile(out); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
	})
}

func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	cfg, fp, err := ServerTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode().Perm())
	}
	if fp != Fingerprint(cfg.Certificates[0].Certificate[0]) || !strings.HasPrefix(fp, "sha256:") || len(fp) != 7+64 {
		t.Errorf("fingerprint %q", fp)
	}
	_, fp2, err := ServerTLS(dir)
	if err != nil || fp2 != fp {
		t.Fatalf("second use: %q, %v; want the same certificate %q", fp2, err, fp)
	}
}
