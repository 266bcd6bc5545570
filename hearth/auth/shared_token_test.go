package auth

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestSharedToken(t *testing.T) {
	s := SharedToken{Token: "owner-token-0123456789"}
	src := netip.MustParseAddr("127.0.0.1")
	for _, tc := range []struct {
		name, cred string
		ok         bool
	}{
		{"owner", "owner-token-0123456789", true},
		{"wrong", "owner-token-0123456780", false},
		{"prefix", "owner-token", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := s.Authenticate(context.Background(), tc.cred, src)
			if tc.ok != (err == nil) {
				t.Fatalf("Authenticate(%q) = %v", tc.cred, err)
			}
			if !tc.ok && !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("err = %v, want ErrUnauthenticated", err)
			}
			if tc.ok && (!id.IsOwner() || id.Source != src) {
				t.Fatalf("identity = %+v", id)
			}
		})
	}
	if _, err := (SharedToken{}).Authenticate(context.Background(), "", src); err == nil {
		t.Fatal("an empty shared token admitted an empty credential")
	}
	for _, tc := range []struct {
		id   Identity
		want error
	}{
		{Identity{Actor: ActorOwner}, nil},
		{Identity{Actor: ActorService}, ErrForbidden},
		{Identity{Actor: ActorCollaborator}, ErrForbidden},
		{Identity{}, ErrForbidden},
	} {
		if err := s.Authorize(tc.id, ResMetrics, ActRead); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("Authorize(%s) = %v, want %v", tc.id.Actor, err, tc.want)
		}
	}
}
