package auth

import (
	"context"
	"net/netip"
	"testing"
)

// BenchmarkAuthorize is the cost the NDJSON door adds to each message.
func BenchmarkAuthorize(b *testing.B) {
	s, err := Open(Options{})
	if err != nil {
		b.Fatal(err)
	}
	id := Identity{Subject: "phone", Actor: ActorCollaborator}
	for b.Loop() {
		_ = s.Authorize(id, ResVault, ActWrite) // denied: every rule is read
	}
}

// BenchmarkAuthenticateDevice is a connect's cost with 50 paired devices.
func BenchmarkAuthenticateDevice(b *testing.B) {
	s, err := Open(Options{})
	if err != nil {
		b.Fatal(err)
	}
	var tok string
	for range 50 {
		pc, err := s.StartPairing(context.Background(), ActorCollaborator)
		if err != nil {
			b.Fatal(err)
		}
		if _, tok, err = s.Redeem(context.Background(), pc.Code, "d"); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.Authenticate(context.Background(), tok, netip.Addr{}); err != nil {
			b.Fatal(err)
		}
	}
}
